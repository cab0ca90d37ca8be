/*
 * idmap.h — a small open-addressing map from a pair of 64-bit keys to a
 * non-zero int64 value, used by ingest to re-key spool ids (strings, graphs)
 * and to build the frame and stack tables of CPU samples. Grows with what
 * is put in it, so its size is bounded by the input, not by the ids' values.
 */
#ifndef PP_IDMAP_H
#define PP_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct pp_idmap_slot { uint64_t a, b; int64_t v; } pp_idmap_slot;
typedef struct pp_idmap { pp_idmap_slot *e; size_t cap, n; } pp_idmap;

/* The value stored for (a, b), or 0 if none. */
int64_t pp_idmap_get(const pp_idmap *m, uint64_t a, uint64_t b);
/* Stores v (non-zero) for (a, b), replacing any value; 0 or -1 (no memory). */
int pp_idmap_put(pp_idmap *m, uint64_t a, uint64_t b, int64_t v);
void pp_idmap_free(pp_idmap *m);

#endif
