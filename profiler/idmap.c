/* idmap.c — the pair-keyed id map of idmap.h (linear probing, load <= 1/2). */
#include "idmap.h"

#include <stdlib.h>

static size_t slot_of(uint64_t a, uint64_t b, size_t cap)
{
	uint64_t h = (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full);
	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

int64_t pp_idmap_get(const pp_idmap *m, uint64_t a, uint64_t b)
{
	if (!m->cap)
		return 0;
	for (size_t i = slot_of(a, b, m->cap);; i = (i + 1) & (m->cap - 1)) {
		const pp_idmap_slot *s = &m->e[i];
		if (!s->v)
			return 0;
		if (s->a == a && s->b == b)
			return s->v;
	}
}

static int grow(pp_idmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 256;
	pp_idmap_slot *e = calloc(cap, sizeof *e);
	if (!e)
		return -1;
	for (size_t j = 0; j < m->cap; j++) {
		if (!m->e[j].v)
			continue;
		size_t i = slot_of(m->e[j].a, m->e[j].b, cap);
		while (e[i].v)
			i = (i + 1) & (cap - 1);
		e[i] = m->e[j];
	}
	free(m->e);
	m->e = e;
	m->cap = cap;
	return 0;
}

int pp_idmap_put(pp_idmap *m, uint64_t a, uint64_t b, int64_t v)
{
	if ((m->n + 1) * 2 > m->cap && grow(m) != 0)
		return -1;
	size_t i = slot_of(a, b, m->cap);
	while (m->e[i].v && !(m->e[i].a == a && m->e[i].b == b))
		i = (i + 1) & (m->cap - 1);
	if (!m->e[i].v)
		m->n++;
	m->e[i] = (pp_idmap_slot){a, b, v};
	return 0;
}

void pp_idmap_free(pp_idmap *m)
{
	free(m->e);
	m->e = NULL;
	m->cap = m->n = 0;
}
