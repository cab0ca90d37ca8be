/*
 * agent_kept.c — memory kept across steps, by where it was allocated.
 *
 * Every allocation of PPA_KEPT_MIN (64 KiB) or more made while steps are
 * being recorded goes into a live table: pointer → (size, step, the Python
 * frames that made it). Not a sample: a tensor's storage is one such block,
 * so counting each keeps the per-site bytes exact where memory grows, and
 * blocks that large are few (thousands per step at most), so the hooks
 * touch the table rarely. Smaller blocks are not tracked (the hot path
 * pays one compare for this, on a value it already holds).
 *
 * At the end of each step (the Python module's step_end) the live blocks
 * are grouped by site — the innermost frame in the program's own files
 * (agent_pystack.c) — and the 16 largest sites become step_kept rows:
 * bytes and blocks alive, and the bytes of those made in this step.
 *
 * The table is one anonymous mapping with linear probing under a spin
 * lock held for a few instructions; it never calls malloc. It is touched
 * whole at the first step (3 MiB), so its own pages never read as the
 * program's memory growing. When it is full
 * a block is not tracked and counted (agent.kept_untracked); a free of an
 * untracked block finds nothing and costs one probe.
 */
#include "agent_internal.h"
#include "phaseprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEPT_FRAMES 8
#define KCAP (1u << 15)        /* slots (3 MiB); at most 3/4 used */
#define KMAX (KCAP / 4 * 3)
#define GROUPS 1024
#define TOP 16

typedef struct kentry {
	uintptr_t p;           /* 0: empty */
	uint64_t size;
	int64_t step;
	uint32_t nf, pad;
	uint64_t f[KEPT_FRAMES];
} kentry;

_Atomic uint32_t ppa_kept_live;
_Atomic int ppa_kept_on;
static kentry *tab;
static atomic_flag tab_lock = ATOMIC_FLAG_INIT;
static int64_t cur_step = -1;
static _Atomic uint64_t untracked, sites_dropped;

static inline void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&tab_lock, memory_order_acquire))
		__builtin_ia32_pause();
}

static inline void unlock(void) { atomic_flag_clear_explicit(&tab_lock, memory_order_release); }

static inline uint32_t slot_of(uintptr_t p)
{
	return (uint32_t)(((uint64_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 48) & (KCAP - 1);
}

void ppa_kept_alloc(void *p, size_t n)
{
	if (!p || !atomic_load_explicit(&ppa_kept_on, memory_order_relaxed))
		return;
	kentry e = {.p = (uintptr_t)p, .size = n, .step = cur_step};
	e.nf = ppa_pystack_frames(e.f, KEPT_FRAMES, &e.pad);
	lock();
	if (atomic_load_explicit(&ppa_kept_live, memory_order_relaxed) >= KMAX) {
		unlock();
		atomic_fetch_add_explicit(&untracked, 1, memory_order_relaxed);
		return;
	}
	uint32_t i = slot_of(e.p);
	while (tab[i].p && tab[i].p != e.p)
		i = (i + 1) & (KCAP - 1);
	if (!tab[i].p)
		atomic_fetch_add_explicit(&ppa_kept_live, 1, memory_order_relaxed);
	tab[i] = e;
	unlock();
}

void ppa_kept_free(void *p)
{
	if (!p || !atomic_load_explicit(&ppa_kept_live, memory_order_relaxed))
		return;
	uintptr_t a = (uintptr_t)p;
	lock();
	uint32_t i = slot_of(a);
	while (tab[i].p && tab[i].p != a)
		i = (i + 1) & (KCAP - 1);
	if (!tab[i].p) {
		unlock();
		return;
	}
	/* backward-shift deletion: no tombstones, probes stay short */
	uint32_t j = i;
	for (;;) {
		tab[i].p = 0;
		for (;;) {
			j = (j + 1) & (KCAP - 1);
			if (!tab[j].p)
				goto done;
			uint32_t h = slot_of(tab[j].p);
			/* j's entry may move to i when its home is not in (i, j] */
			if (i <= j ? (h <= i || h > j) : (h <= i && h > j))
				break;
		}
		tab[i] = tab[j];
		i = j;
	}
done:
	atomic_fetch_sub_explicit(&ppa_kept_live, 1, memory_order_relaxed);
	unlock();
}

typedef struct group {
	uint64_t hash;
	kentry e;              /* the first block's frames */
	uint64_t bytes, blocks, new_bytes;
	char site[200];
	int64_t frame;
	int merged;            /* folded into an earlier group of the same site */
} group;

static group *groups;

void ppa_kept_step_begin(int64_t step)
{
	static int off;
	if (!tab) {
		const char *v = getenv("PHASEPROF_KEPT");
		if (off || (v && strcmp(v, "0") == 0))
			return;
		kentry *t = ppa_map(sizeof(kentry) * KCAP);
		group *g = ppa_map(sizeof(group) * GROUPS);
		if (!t || !g) {
			/* no memory for it: no step_kept rows, said once */
			if (t)
				ppa_unmap(t, sizeof(kentry) * KCAP);
			if (g)
				ppa_unmap(g, sizeof(group) * GROUPS);
			off = 1;
			pp_meta("agent.kept", "off: no memory for the live table");
			return;
		}
		/* touched now, in the first step (which the memory rule leaves
		 * out): the table's pages are resident from the start instead
		 * of joining the program's resident memory as blocks spread
		 * over them, which would read as growth per step */
		memset(t, 0, sizeof(kentry) * KCAP);
		memset(g, 0, sizeof(group) * GROUPS);
		groups = g;
		tab = t;
	}
	ppa_pystack_probe();
	cur_step = step;
	atomic_store_explicit(&ppa_kept_on, 1, memory_order_relaxed);
}

static uint64_t frames_hash(const kentry *e)
{
	uint64_t h = 1469598103934665603ull ^ e->nf;
	for (uint32_t k = 0; k < e->nf; k++)
		h = (h ^ e->f[k]) * 1099511628211ull;
	return h;
}

static int by_bytes(const void *a, const void *b)
{
	const group *x = a, *y = b;
	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* Groups the live blocks by call stack under the lock (a copy of a few
 * words per block), then by site outside it (code objects read). */
void ppa_kept_step_end(void)
{
	if (!tab || !atomic_load_explicit(&ppa_kept_on, memory_order_relaxed))
		return;
	int ng = 0;
	uint64_t lost = 0;
	lock();
	for (uint32_t i = 0; i < KCAP; i++) {
		const kentry *e = &tab[i];
		if (!e->p)
			continue;
		uint64_t h = frames_hash(e);
		int g = 0;
		while (g < ng && groups[g].hash != h)
			g++;
		if (g == ng) {
			if (ng == GROUPS) {
				lost++;
				continue;
			}
			groups[ng].hash = h;
			groups[ng].e = *e;
			groups[ng].bytes = groups[ng].blocks = groups[ng].new_bytes = 0;
			ng++;
		}
		groups[g].bytes += e->size;
		groups[g].blocks++;
		if (e->step == cur_step)
			groups[g].new_bytes += e->size;
	}
	unlock();
	if (lost)
		atomic_fetch_add_explicit(&sites_dropped, lost, memory_order_relaxed);
	for (int g = 0; g < ng; g++) {
		groups[g].merged = 0;
		groups[g].frame = ppa_pystack_site(groups[g].e.f, groups[g].e.nf, groups[g].site,
						   sizeof groups[g].site);
		if (!groups[g].site[0])
			snprintf(groups[g].site, sizeof groups[g].site, "(no Python frame: native code)");
		for (int h = 0; h < g; h++)
			if (!groups[h].merged && strcmp(groups[h].site, groups[g].site) == 0) {
				groups[h].bytes += groups[g].bytes;
				groups[h].blocks += groups[g].blocks;
				groups[h].new_bytes += groups[g].new_bytes;
				groups[g].merged = 1;
				break;
			}
	}
	int m = 0;
	for (int g = 0; g < ng; g++)
		if (!groups[g].merged)
			groups[m++] = groups[g];
	qsort(groups, (size_t)m, sizeof *groups, by_bytes);
	for (int g = 0; g < m; g++) {
		if (g >= TOP) {
			atomic_fetch_add_explicit(&sites_dropped, 1, memory_order_relaxed);
			continue;
		}
		pp_row("step_kept", "isiiii", (int64_t)cur_step, groups[g].site, groups[g].frame,
		       (int64_t)groups[g].bytes, (int64_t)groups[g].blocks, (int64_t)groups[g].new_bytes);
	}
}

/* The losses, once at the end (agent.c's final rows). */
void ppa_kept_report(void)
{
	uint64_t u = atomic_load(&untracked), d = atomic_load(&sites_dropped);
	if (!tab || (!u && !d))
		return;
	char v[96];
	snprintf(v, sizeof v, "%llu", (unsigned long long)u);
	pp_meta("agent.kept_untracked", v);
	snprintf(v, sizeof v, "%llu", (unsigned long long)d);
	pp_meta("agent.kept_sites_dropped", v);
}
