/* pp_hash.h — one hash index for every "key -> entry" table in phaseprof.
 *
 * The table keeps no keys: the caller keeps its entries in its own array
 * and the index maps a 32-bit hash to entry ids (open addressing, linear
 * probing, grown at half load by the stored hashes, so keys are never
 * rehashed). Lookups walk the ids whose hash matches and the caller
 * compares its own keys; no callbacks, no key copies.
 *
 * Memory comes from a pp_alloc (NULL: libc), so the LD_PRELOAD agent can
 * give its own allocator and never call the program's malloc. */
#ifndef PP_HASH_H
#define PP_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct pp_alloc {
	void *(*zalloc)(size_t size, void *ud);  /* zeroed memory, NULL on failure */
	void (*free)(void *p, size_t size, void *ud);
	void *ud;
} pp_alloc;

typedef struct pp_hash_slot { uint32_t hash, id1; } pp_hash_slot; /* id1 = id + 1; 0 empty */

typedef struct pp_hash {
	pp_hash_slot *slots;
	uint32_t cap, n;            /* cap a power of two, or 0 */
	const pp_alloc *al;
} pp_hash;

/* The one string hash (FNV-1a, 32 bits). */
uint32_t pp_hash_str(const char *s);
uint32_t pp_hash_mem(const void *p, size_t n);
/* Integer keys (a multiplicative mix: ids and addresses are not random).
 * Inline: they sit on ingest's per-row path. */
static inline uint32_t pp_hash_u64(uint64_t x)
{
	x *= 0x9E3779B97F4A7C15ull;
	return (uint32_t)(x >> 32) ^ (uint32_t)x;
}

static inline uint32_t pp_hash_u64x2(uint64_t a, uint64_t b)
{
	uint64_t x = (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full);
	return (uint32_t)(x >> 32) ^ (uint32_t)x;
}

void pp_hash_init(pp_hash *h, const pp_alloc *al);
void pp_hash_free(pp_hash *h);
/* Forgets every id and keeps the memory (a bounded cache starts again
 * without allocating). */
void pp_hash_clear(pp_hash *h);
/* Makes room for n entries without growing again; 0 or -1 (out of memory). */
int pp_hash_reserve(pp_hash *h, uint32_t n);
/* Adds id under hash (duplicates allowed: the caller looks up first);
 * 0 or -1 (out of memory, the index unchanged). */
int pp_hash_add(pp_hash *h, uint32_t hash, uint32_t id);

/* Walks the ids stored under hash:
 *   for (uint32_t it = 0, id; pp_hash_next(h, hash, &it, &id);)
 *           if (same_key(entries[id], key)) return id;
 * it starts at 0; returns 0 when no more ids. */
static inline int pp_hash_next(const pp_hash *h, uint32_t hash, uint32_t *it, uint32_t *id)
{
	if (!h->cap)
		return 0;
	uint32_t mask = h->cap - 1;
	/* it: 0 before the first probe, else the position after the last */
	uint32_t i = *it ? *it : (hash & mask) + 1;
	for (i = (i - 1) & mask;; i = (i + 1) & mask) {
		const pp_hash_slot *s = &h->slots[i];
		if (!s->id1)
			return 0;
		if (s->hash == hash) {
			*id = s->id1 - 1;
			*it = ((i + 1) & mask) + 1;
			return 1;
		}
	}
}

#endif
