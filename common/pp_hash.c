/* pp_hash.c — the hash index and the hash functions (see pp_hash.h). */
#include "pp_hash.h"
#include "pp_assert.h"

#include <stdlib.h>
#include <string.h>

uint32_t pp_hash_mem(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 16777619u;
	return h;
}

uint32_t pp_hash_str(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void *zalloc(const pp_alloc *al, size_t size)
{
	return al ? al->zalloc(size, al->ud) : calloc(1, size);
}

static void release(const pp_alloc *al, void *p, size_t size)
{
	if (!p)
		return;
	if (al)
		al->free(p, size, al->ud);
	else
		free(p);
}

void pp_hash_init(pp_hash *h, const pp_alloc *al)
{
	memset(h, 0, sizeof *h);
	h->al = al;
}

void pp_hash_free(pp_hash *h)
{
	release(h->al, h->slots, (size_t)h->cap * sizeof *h->slots);
	h->slots = NULL;
	h->cap = h->n = 0;
}

void pp_hash_clear(pp_hash *h)
{
	if (h->cap)
		memset(h->slots, 0, (size_t)h->cap * sizeof *h->slots);
	h->n = 0;
}

static int grow(pp_hash *h, uint32_t cap)
{
	/* the probe masks need a power of two, and every entry a slot */
	PP_ASSERT(cap && (cap & (cap - 1)) == 0 && cap > h->n);
	pp_hash_slot *s = zalloc(h->al, (size_t)cap * sizeof *s);
	if (!s)
		return -1;
	for (uint32_t j = 0; j < h->cap; j++) {
		if (!h->slots[j].id1)
			continue;
		uint32_t i = h->slots[j].hash & (cap - 1);
		while (s[i].id1)
			i = (i + 1) & (cap - 1);
		s[i] = h->slots[j];
	}
	release(h->al, h->slots, (size_t)h->cap * sizeof *h->slots);
	h->slots = s;
	h->cap = cap;
	return 0;
}

int pp_hash_reserve(pp_hash *h, uint32_t n)
{
	if (n > (1u << 30))
		return -1;
	uint32_t cap = h->cap ? h->cap : 16;
	while (n * 2 > cap)
		cap *= 2;
	return cap == h->cap ? 0 : grow(h, cap);
}

int pp_hash_add(pp_hash *h, uint32_t hash, uint32_t id)
{
	/* the load check inline: most adds do not grow */
	if (id == UINT32_MAX || ((h->n + 1) * 2 > h->cap && pp_hash_reserve(h, h->n + 1) != 0))
		return -1;
	uint32_t mask = h->cap - 1, i = hash & mask;
	while (h->slots[i].id1)
		i = (i + 1) & mask;
	h->slots[i] = (pp_hash_slot){hash, id + 1};
	h->n++;
	/* at most half full: every probe ends at an empty slot */
	PP_ASSERT(h->n * 2 <= h->cap);
	return 0;
}
