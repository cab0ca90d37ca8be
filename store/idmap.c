/* idmap.c — the pair-keyed id map of idmap.h. */
#include "idmap.h"

#include "pp_grow.h"
#include "pp_assert.h"

#include <stdlib.h>

static inline pp_idmap_ent *find(const pp_idmap *m, uint32_t h, uint64_t a, uint64_t b)
{
	for (uint32_t it = 0, id; pp_hash_next(&m->index, h, &it, &id);) {
		/* the index names only entries already in the array */
		PP_ASSERT(id < m->n);
		if (m->e[id].a == a && m->e[id].b == b)
			return &m->e[id];
	}
	return NULL;
}

int64_t pp_idmap_get(const pp_idmap *m, uint64_t a, uint64_t b)
{
	const pp_idmap_ent *e = find(m, pp_hash_u64x2(a, b), a, b);
	return e ? e->v : 0;
}

int64_t *pp_idmap_at(pp_idmap *m, uint64_t a, uint64_t b)
{
	uint32_t h = pp_hash_u64x2(a, b);
	pp_idmap_ent *e = find(m, h, a, b);
	if (e)
		return &e->v;
	if (PP_GROW(m->e, m->n + 1, m->cap) != 0 || pp_hash_add(&m->index, h, m->n) != 0)
		return NULL;
	PP_ASSERT(m->n < m->cap && m->index.n == m->n + 1);
	m->e[m->n] = (pp_idmap_ent){a, b, 0};
	return &m->e[m->n++].v;
}

int pp_idmap_put(pp_idmap *m, uint64_t a, uint64_t b, int64_t v)
{
	int64_t *p = pp_idmap_at(m, a, b);
	if (!p)
		return -1;
	*p = v;
	return 0;
}

void pp_idmap_free(pp_idmap *m)
{
	free(m->e);
	pp_hash_free(&m->index);
	m->e = NULL;
	m->n = m->cap = 0;
}
