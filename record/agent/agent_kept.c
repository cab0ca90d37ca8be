/*
 * agent_kept.c — memory kept across steps, by where it was allocated.
 *
 * Every allocation of PPA_KEPT_MIN (64 KiB) or more made while steps are
 * being recorded goes into a live table: pointer → (size, step, the Python
 * frames that made it). Not a sample: a tensor's storage is one such block,
 * so counting each keeps the per-site bytes exact where memory grows, and
 * blocks that large are few (thousands per step at most), so the hooks
 * touch the table rarely. Smaller blocks are not tracked (the hot paths
 * send chunks of 64 KiB or more out of line in the test they already made
 * for separately mapped blocks: agent_malloc.c, CHUNK_BIG).
 *
 * The hooks also keep each call stack's totals up to date (bytes, blocks,
 * bytes made this step), so at the end of each step (the Python module's
 * step_end) only those are read, one per call stack, and grouped by site:
 * the innermost frame in the program's own files (agent_pystack.c). The
 * 16 largest sites become step_kept rows: bytes and blocks alive, and the
 * bytes of those made in this step.
 *
 * The table is anonymous mappings (hash slots with linear probing into a
 * dense array of the live blocks) under a spin lock held for a few
 * instructions; it never calls malloc. When it is full a block is not
 * tracked and counted (agent.kept_untracked); a free of an untracked block
 * finds nothing and costs one probe.
 */
#include "agent_internal.h"
#include "phaseprof.h"
#include "pp_env.h"
#include "pp_rows.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEPT_FRAMES 8
#define KCAP (1u << 15)        /* hash slots (128 KiB); at most 3/4 used */
#define KMAX (KCAP / 4 * 3)    /* live blocks (96 bytes each, dense) */
#define TOP 16

typedef struct kentry {
	uintptr_t p;
	uint64_t size;
	int64_t step;
	uint64_t hash;         /* of the frames: computed in the hook, not per step */
	uint32_t nf, pad;
	uint32_t acc;          /* its call stack's totals: acc[] index */
	uint64_t f[KEPT_FRAMES];
} kentry;

static uint64_t frames_hash(const kentry *e)
{
	uint64_t h = 1469598103934665603ull ^ e->nf;
	for (uint32_t k = 0; k < e->nf; k++)
		h = (h ^ e->f[k]) * 1099511628211ull;
	return h;
}

/* Totals per call stack, kept up to date by the hooks (under the lock),
 * so a step's end reads one entry per call stack, not one per live block
 * (4,000 live blocks cost ~30 us a step read one by one). Open addressing
 * on the frames' hash; ACC_MAX call stacks at most, the blocks of any
 * further one counted in the last entry ("other call stacks"). An entry
 * whose blocks are all freed stays (a program's call stacks making large
 * blocks are few). */
#define ACAP 2048
#define ACC_MAX 1024
#define GROUPS (ACC_MAX + 1)
typedef struct acc_entry {
	uint64_t hash;         /* 0: empty */
	uint64_t bytes, blocks;
	int64_t new_step;      /* new_bytes counts blocks of this step only */
	uint64_t new_bytes;
	uint32_t nf;
	uint64_t f[KEPT_FRAMES];
} acc_entry;
static acc_entry *acc;          /* ACAP + 1: the last is "other call stacks" */
static uint16_t used[ACC_MAX];  /* acc indices in use, dense */
static uint32_t n_used;
static int other_used;

_Atomic uint32_t ppa_kept_live;
_Atomic int ppa_kept_on;
/* The live blocks are dense (live[0..n)), so a step's end reads only
 * them; the hash slots hold an index + 1 into live (0: empty). */
static kentry *live;
static uint32_t *slots;
static atomic_flag tab_lock = ATOMIC_FLAG_INIT;
static int64_t cur_step = -1;
static _Atomic uint64_t untracked, sites_dropped;

static inline void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&tab_lock, memory_order_acquire))
		__builtin_ia32_pause();
}

static inline void unlock(void) { atomic_flag_clear_explicit(&tab_lock, memory_order_release); }

/* A fork from another thread while the lock is held (a few instructions)
 * would leave it held in the child, whose next large malloc or free would
 * spin forever: the child starts with it free (its copy of the table is
 * consistent enough: an entry half-written is at worst one wrong row). */
static void atfork_child(void) { atomic_flag_clear(&tab_lock); }

static inline uint32_t home_of(uintptr_t p)
{
	return (uint32_t)(((uint64_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 48) & (KCAP - 1);
}

/* the slot holding p, or the empty slot where it would go (under the lock) */
static inline uint32_t find(uintptr_t p)
{
	uint32_t i = home_of(p);
	while (slots[i] && live[slots[i] - 1].p != p)
		i = (i + 1) & (KCAP - 1);
	return i;
}

void ppa_kept_alloc(void *p, size_t n)
{
	if (!p || !atomic_load_explicit(&ppa_kept_on, memory_order_relaxed))
		return;
	kentry e = {.p = (uintptr_t)p, .size = n, .step = cur_step};
	e.nf = ppa_pystack_frames(e.f, KEPT_FRAMES, &e.pad);
	e.hash = frames_hash(&e);
	lock();
	uint32_t i = find(e.p);
	if (slots[i]) {
		/* a block freed behind our back (not through a hook): the old
		 * entry is dropped, the new one goes in as any other */
		unlock();
		ppa_kept_free(p);
		lock();
		i = find(e.p);
	}
	uint32_t n_live = atomic_load_explicit(&ppa_kept_live, memory_order_relaxed);
	if (n_live >= KMAX) {
		unlock();
		atomic_fetch_add_explicit(&untracked, 1, memory_order_relaxed);
		return;
	}
	uint32_t a = e.hash ? (uint32_t)(e.hash >> 40) & (ACAP - 1) : 0;
	while (acc[a].hash && acc[a].hash != (e.hash | 1))
		a = (a + 1) & (ACAP - 1);
	if (!acc[a].hash) {
		if (n_used < ACC_MAX) {
			acc[a].hash = e.hash | 1; /* never 0: 0 is empty */
			acc[a].nf = e.nf;
			memcpy(acc[a].f, e.f, sizeof e.f);
			used[n_used++] = (uint16_t)a;
		} else {
			a = ACAP;
			other_used = 1;
		}
	}
	acc_entry *t = &acc[a];
	t->bytes += e.size;
	t->blocks++;
	if (t->new_step != cur_step) {
		t->new_step = cur_step;
		t->new_bytes = 0;
	}
	t->new_bytes += e.size;
	e.acc = a;
	live[n_live] = e;
	slots[i] = n_live + 1;
	atomic_store_explicit(&ppa_kept_live, n_live + 1, memory_order_relaxed);
	unlock();
}

void ppa_kept_free(void *p)
{
	if (!p || !atomic_load_explicit(&ppa_kept_live, memory_order_relaxed))
		return;
	uintptr_t a = (uintptr_t)p;
	lock();
	uint32_t i = find(a);
	if (!slots[i]) {
		unlock();
		return;
	}
	uint32_t d = slots[i] - 1;
	acc_entry *t = &acc[live[d].acc];
	t->bytes -= live[d].size;
	t->blocks--;
	if (live[d].step == t->new_step && t->new_bytes >= live[d].size)
		t->new_bytes -= live[d].size;
	/* backward-shift deletion: no tombstones, probes stay short */
	uint32_t j = i;
	for (;;) {
		slots[i] = 0;
		for (;;) {
			j = (j + 1) & (KCAP - 1);
			if (!slots[j])
				goto shifted;
			uint32_t h = home_of(live[slots[j] - 1].p);
			/* j's entry may move to i when its home is not in (i, j] */
			if (i <= j ? (h <= i || h > j) : (h <= i && h > j))
				break;
		}
		slots[i] = slots[j];
		i = j;
	}
shifted:;
	/* the last live block fills the hole */
	uint32_t last = atomic_load_explicit(&ppa_kept_live, memory_order_relaxed) - 1;
	if (d != last) {
		live[d] = live[last];
		slots[find(live[d].p)] = d + 1;
	}
	atomic_store_explicit(&ppa_kept_live, last, memory_order_relaxed);
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
	if (!slots) {
		const char *v = getenv(PP_ENV_KEPT);
		if (off || (v && strcmp(v, "0") == 0))
			return;
		uint32_t *s = ppa_map(sizeof *s * KCAP);
		kentry *l = ppa_map(sizeof *l * KMAX);
		group *g = ppa_map(sizeof *g * GROUPS);
		acc_entry *ac = ppa_map(sizeof *ac * (ACAP + 1));
		if (!s || !l || !g || !ac) {
			if (ac)
				ppa_unmap(ac, sizeof *ac * (ACAP + 1));
			/* no memory for it: no step_kept rows, said once */
			if (s)
				ppa_unmap(s, sizeof *s * KCAP);
			if (l)
				ppa_unmap(l, sizeof *l * KMAX);
			if (g)
				ppa_unmap(g, sizeof *g * GROUPS);
			off = 1;
			pp_meta("agent.kept", "off: no memory for the live table");
			return;
		}
		/* The slots (128 KiB, spread over by the hash) and the groups
		 * are touched now, in the first step (which the memory rule
		 * leaves out), so their pages never join the program's
		 * resident memory step by step; the dense live array grows by
		 * 96 bytes per live block of >= 64 KiB (0.15% of what the
		 * program holds). */
		memset(s, 0, sizeof *s * KCAP);
		memset(g, 0, sizeof *g * GROUPS);
		memset(ac, 0, sizeof *ac * (ACAP + 1));
		acc = ac;
		pthread_atfork(NULL, NULL, atfork_child);
		groups = g;
		live = l;
		slots = s;
	}
	ppa_pystack_probe();
	cur_step = step;
	atomic_store_explicit(&ppa_kept_on, 1, memory_order_relaxed);
}


static int by_bytes(const void *a, const void *b)
{
	const group *x = a, *y = b;
	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* Sites by call stack hash, kept across steps: reading a site's code
 * objects costs a few system calls per frame, once per call stack rather
 * than per step. Cleared when full. (A code object freed and another made
 * at its address with the same instruction offsets would inherit its
 * site: the py_frames cache of the sampler has the same limit.) */
#define SITES 1024
typedef struct site_entry {
	uint64_t hash;
	int64_t frame;
	char site[200];
} site_entry;
static site_entry *sites;
static uint32_t n_sites;

static void site_of(group *g)
{
	if (!g->hash) {
		snprintf(g->site, sizeof g->site, "(other call stacks: more than %d)", ACC_MAX);
		g->frame = 0;
		return;
	}
	if (!sites && !(sites = ppa_map(sizeof *sites * SITES)))
		goto read;
	uint32_t b = (uint32_t)(g->hash >> 40) & (SITES - 1);
	for (uint32_t k = 0; k < SITES && sites[b].hash; k++, b = (b + 1) & (SITES - 1))
		if (sites[b].hash == g->hash) {
			g->frame = sites[b].frame;
			memcpy(g->site, sites[b].site, sizeof g->site);
			return;
		}
read:
	g->frame = ppa_pystack_site(g->e.f, g->e.nf, g->site, sizeof g->site);
	if (!g->site[0])
		snprintf(g->site, sizeof g->site, "(no Python frame: native code)");
	if (!sites)
		return;
	if (n_sites >= SITES / 2) {
		memset(sites, 0, sizeof *sites * SITES);
		n_sites = 0;
	}
	b = (uint32_t)(g->hash >> 40) & (SITES - 1);
	while (sites[b].hash)
		b = (b + 1) & (SITES - 1);
	sites[b].hash = g->hash ? g->hash : 1;
	sites[b].frame = g->frame;
	memcpy(sites[b].site, g->site, sizeof sites[b].site);
	n_sites++;
}

/* Groups the live blocks by call stack under the lock (a copy of a few
 * words per block), then by site outside it (code objects read). */
void ppa_kept_step_end(void)
{
	if (!slots || !atomic_load_explicit(&ppa_kept_on, memory_order_relaxed))
		return;
	int ng = 0;
	lock();
	for (uint32_t u = 0; u <= n_used; u++) {
		uint32_t a = u < n_used ? used[u] : ACAP;
		const acc_entry *t = &acc[a];
		if (!t->blocks || (a == ACAP && !other_used))
			continue;
		group *g = &groups[ng++];
		g->hash = a == ACAP ? 0 : t->hash;
		g->e.nf = a == ACAP ? 0 : t->nf;
		memcpy(g->e.f, t->f, sizeof t->f);
		g->bytes = t->bytes;
		g->blocks = t->blocks;
		g->new_bytes = t->new_step == cur_step ? t->new_bytes : 0;
	}
	unlock();
	for (int g = 0; g < ng; g++) {
		groups[g].merged = 0;
		site_of(&groups[g]);
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
		pp_row_step_kept(cur_step, groups[g].site, groups[g].frame, (int64_t)groups[g].bytes,
				 (int64_t)groups[g].blocks, (int64_t)groups[g].new_bytes);
	}
}

/* The losses, once at the end (agent.c's final rows). */
void ppa_kept_report(void)
{
	uint64_t u = atomic_load(&untracked), d = atomic_load(&sites_dropped);
	if (!slots || (!u && !d))
		return;
	char v[96];
	snprintf(v, sizeof v, "%llu", (unsigned long long)u);
	pp_meta("agent.kept_untracked", v);
	snprintf(v, sizeof v, "%llu", (unsigned long long)d);
	pp_meta("agent.kept_sites_dropped", v);
}
