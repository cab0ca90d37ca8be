/*
 * idmap.h — a map from a pair of 64-bit keys to a non-zero int64 value,
 * used by ingest to re-key spool ids (strings, graphs) and to build the
 * frame and stack tables of CPU samples. The entries sit in an array
 * indexed by the shared hash index (pp_hash); both grow with what is put
 * in, so its size is bounded by the input, not by the ids' values.
 */
#ifndef PP_IDMAP_H
#define PP_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "pp_hash.h"

typedef struct pp_idmap_ent { uint64_t a, b; int64_t v; } pp_idmap_ent;
/* Zero-initialised is an empty map. */
typedef struct pp_idmap {
	pp_idmap_ent *e;
	uint32_t n, cap;
	pp_hash index;
} pp_idmap;

/* The value stored for (a, b), or 0 if none. */
int64_t pp_idmap_get(const pp_idmap *m, uint64_t a, uint64_t b);
/* Stores v (non-zero) for (a, b), replacing any value; 0 or -1 (no memory). */
int pp_idmap_put(pp_idmap *m, uint64_t a, uint64_t b, int64_t v);
/* The value stored for (a, b), added as 0 if absent, to update in place
 * (one lookup for a read-modify-write); NULL only when out of memory. The
 * pointer holds until the next put or at. */
int64_t *pp_idmap_at(pp_idmap *m, uint64_t a, uint64_t b);
void pp_idmap_free(pp_idmap *m);

#endif
