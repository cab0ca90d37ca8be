/*
 * alloc.c — the allocators: a BFC arena (after TensorFlow's BFCAllocator,
 * "a very simple version of Doug Lea's malloc") and a plain-malloc mode for
 * comparison.
 *
 * BFC: sizes round up to 256 bytes; free chunks sit in 21 power-of-two bins
 * (bin b holds [256<<b, 256<<(b+1))); an allocation takes the best fitting
 * free chunk of the smallest adequate bin and splits off the rest when the
 * remainder is worth keeping; a free coalesces with free physical
 * neighbours. When nothing fits, a new region is obtained from the system,
 * its size doubling until the request fits (so a growing workload pays a
 * logarithmic number of system allocations — the "arena growth" a first step
 * pays). Chunk lookup on free goes through a per-region handle table indexed
 * by (ptr - base) / 256, as TF's RegionManager.
 */
#include "flow_internal.h"
#include "core.h"
#include "phaseprof.h"
#include "pp_rows.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BFC_MIN_BITS 8
#define BFC_MIN ((size_t)1 << BFC_MIN_BITS)
#define BFC_BINS 21
#define BFC_DEFAULT_REGION ((size_t)2 << 20)

typedef struct chunk chunk;
struct chunk {
	char *ptr;
	size_t size;        /* bytes of the chunk (multiple of 256) */
	size_t requested;   /* bytes asked for (in use only) */
	chunk *prev, *next; /* physical neighbours in the region */
	chunk *fprev, *fnext; /* free list of the bin */
	int in_use;
	int bin;            /* -1 when not in a bin */
};

typedef struct region {
	char *base;
	size_t size;
	chunk **handles;    /* one per 256 bytes; the chunk starting there */
} region;

struct flow_allocator {
	int kind;
	char name[32];
	pthread_mutex_t mu;
	size_t limit;
	size_t next_region;
	void *(*region_alloc)(void *ctx, size_t bytes);
	void (*region_free)(void *ctx, void *base, size_t bytes);
	void *region_ctx;
	char cnames[6][64];  /* counter names, built once */
	region *regions;
	int n_regions, cap_regions;
	chunk *bins[BFC_BINS];
	chunk *spare;       /* recycled chunk structs */
	flow_allocator_stats st;
};

static int bin_of(size_t size)
{
	size_t v = size >> BFC_MIN_BITS;
	int b = 0;
	while (v > 1 && b < BFC_BINS - 1) {
		v >>= 1;
		b++;
	}
	return b;
}

static chunk *chunk_get(flow_allocator *a)
{
	chunk *c = a->spare;
	if (c)
		a->spare = c->fnext;
	else
		c = malloc(sizeof *c);
	if (c)
		memset(c, 0, sizeof *c);
	return c;
}

static void chunk_put(flow_allocator *a, chunk *c)
{
	c->fnext = a->spare;
	a->spare = c;
}

static void bin_insert(flow_allocator *a, chunk *c)
{
	int b = bin_of(c->size);
	c->bin = b;
	c->fprev = NULL;
	c->fnext = a->bins[b];
	if (a->bins[b])
		a->bins[b]->fprev = c;
	a->bins[b] = c;
}

static void bin_remove(flow_allocator *a, chunk *c)
{
	if (c->fprev)
		c->fprev->fnext = c->fnext;
	else
		a->bins[c->bin] = c->fnext;
	if (c->fnext)
		c->fnext->fprev = c->fprev;
	c->fprev = c->fnext = NULL;
	c->bin = -1;
}

static region *region_of(flow_allocator *a, const void *p)
{
	for (int i = 0; i < a->n_regions; i++) {
		region *r = &a->regions[i];
		if ((const char *)p >= r->base && (const char *)p < r->base + r->size)
			return r;
	}
	return NULL;
}

static void handle_set(flow_allocator *a, chunk *c)
{
	region *r = region_of(a, c->ptr);
	r->handles[(size_t)(c->ptr - r->base) >> BFC_MIN_BITS] = c;
}

static void region_release(flow_allocator *a, void *base, size_t size)
{
	if (a->region_free)
		a->region_free(a->region_ctx, base, size);
	else
		free(base);
}

/* Obtains a region of at least `need` bytes; 0 on success. */
static int extend(flow_allocator *a, size_t need)
{
	size_t sz = a->next_region;
	while (sz < need)
		sz *= 2;
	if (a->limit && a->st.bytes_reserved + sz > a->limit) {
		/* Back off to exactly what is left, as TF's backpedal. */
		if (a->st.bytes_reserved + need > a->limit)
			return -1;
		sz = a->limit - a->st.bytes_reserved;
		sz &= ~(BFC_MIN - 1);
	}
	PP_PHASE(PP_MEMORY_ALLOC, "bfc_region_grow");
	void *base = NULL;
	if (a->region_alloc)
		base = a->region_alloc(a->region_ctx, sz);
	else if (posix_memalign(&base, 4096, sz))
		base = NULL;
	if (!base)
		return -1;
	chunk **handles = calloc(sz >> BFC_MIN_BITS, sizeof *handles);
	chunk *c = chunk_get(a);
	if (!handles || !c) {
		region_release(a, base, sz);
		free(handles);
		free(c);
		return -1;
	}
	if (a->n_regions == a->cap_regions) {
		int nc = a->cap_regions ? a->cap_regions * 2 : 8;
		region *nr = realloc(a->regions, (size_t)nc * sizeof *nr);
		if (!nr) {
			region_release(a, base, sz);
			free(handles);
			chunk_put(a, c);
			return -1;
		}
		a->regions = nr;
		a->cap_regions = nc;
	}
	region *r = &a->regions[a->n_regions++];
	r->base = base;
	r->size = sz;
	r->handles = handles;
	c->ptr = base;
	c->size = sz;
	c->bin = -1;
	handles[0] = c;
	bin_insert(a, c);
	a->st.bytes_reserved += sz;
	a->st.num_regions++;
	a->next_region = sz * 2;
	pp_counter("flow.bfc.bytes_reserved", (double)a->st.bytes_reserved);
	return 0;
}

static chunk *find_chunk(flow_allocator *a, size_t rounded)
{
	for (int b = bin_of(rounded); b < BFC_BINS; b++) {
		chunk *best = NULL;
		for (chunk *c = a->bins[b]; c; c = c->fnext)
			if (c->size >= rounded &&
			    (!best || c->size < best->size || (c->size == best->size && c->ptr < best->ptr)))
				best = c;
		if (best)
			return best;
	}
	return NULL;
}

static void *bfc_alloc(flow_allocator *a, size_t bytes)
{
	size_t rounded = (bytes + BFC_MIN - 1) & ~(BFC_MIN - 1);
	if (!rounded)
		rounded = BFC_MIN;
	chunk *c = find_chunk(a, rounded);
	if (!c) {
		if (extend(a, rounded))
			return NULL;
		c = find_chunk(a, rounded);
		if (!c)
			return NULL;
	}
	bin_remove(a, c);
	/* Split when the remainder is at least as big as the request (TF's rule:
	 * keeps internal fragmentation under 50%). */
	if (c->size >= 2 * rounded) {
		chunk *rest = chunk_get(a);
		if (rest) {
			rest->ptr = c->ptr + rounded;
			rest->size = c->size - rounded;
			rest->prev = c;
			rest->next = c->next;
			if (c->next)
				c->next->prev = rest;
			c->next = rest;
			c->size = rounded;
			handle_set(a, rest);
			bin_insert(a, rest);
		}
	}
	c->in_use = 1;
	c->requested = bytes;
	a->st.bytes_in_use += c->size;
	if (a->st.bytes_in_use > a->st.peak_bytes_in_use)
		a->st.peak_bytes_in_use = a->st.bytes_in_use;
	return c->ptr;
}

static void merge_next(flow_allocator *a, chunk *c)
{
	chunk *n = c->next;
	region *r = region_of(a, n->ptr);
	r->handles[(size_t)(n->ptr - r->base) >> BFC_MIN_BITS] = NULL;
	c->size += n->size;
	c->next = n->next;
	if (n->next)
		n->next->prev = c;
	chunk_put(a, n);
}

static void bfc_free(flow_allocator *a, void *p)
{
	region *r = region_of(a, p);
	chunk *c = r ? r->handles[(size_t)((char *)p - r->base) >> BFC_MIN_BITS] : NULL;
	if (!c || !c->in_use || c->ptr != p) {
		fprintf(stderr, "flow: allocator '%s': free of %p which it did not allocate\n", a->name, p);
		abort();
	}
	a->st.bytes_in_use -= c->size;
	c->in_use = 0;
	c->requested = 0;
	if (c->next && !c->next->in_use) {
		bin_remove(a, c->next);
		merge_next(a, c);
	}
	if (c->prev && !c->prev->in_use) {
		chunk *pc = c->prev;
		bin_remove(a, pc);
		merge_next(a, pc);
		c = pc;
	}
	bin_insert(a, c);
}

/* malloc mode: a 64-byte header keeps the size for the statistics. */
#define MALLOC_HDR 64
static void *malloc_alloc(flow_allocator *a, size_t bytes)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, bytes + MALLOC_HDR))
		return NULL;
	*(size_t *)p = bytes;
	a->st.bytes_in_use += bytes;
	if (a->st.bytes_in_use > a->st.peak_bytes_in_use)
		a->st.peak_bytes_in_use = a->st.bytes_in_use;
	return (char *)p + MALLOC_HDR;
}

static void malloc_free(flow_allocator *a, void *p)
{
	char *h = (char *)p - MALLOC_HDR;
	a->st.bytes_in_use -= *(size_t *)h;
	free(h);
}

flow_allocator *flow_allocator_new(const flow_allocator_options *opts, flow_status *st)
{
	flow_allocator_options o = {0};
	if (opts)
		o = *opts;
	if (o.kind != FLOW_ALLOC_BFC && o.kind != FLOW_ALLOC_MALLOC) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "allocator: unknown kind %d", o.kind);
		return NULL;
	}
	flow_allocator *a = calloc(1, sizeof *a);
	if (!a) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "allocator: out of memory");
		return NULL;
	}
	a->kind = o.kind;
	snprintf(a->name, sizeof a->name, "%s", o.name ? o.name : (o.kind == FLOW_ALLOC_BFC ? "bfc" : "malloc"));
	static const char *const cn[6] = {"bytes_in_use", "peak_bytes", "allocs", "fragmentation", "regions",
					  "alloc_ns"};
	for (int i = 0; i < 6; i++)
		snprintf(a->cnames[i], sizeof a->cnames[i], "flow.%.20s.%s", a->name, cn[i]);
	pthread_mutex_init(&a->mu, NULL);
	a->limit = o.limit;
	a->next_region = BFC_DEFAULT_REGION;
	a->region_alloc = o.region_alloc;
	a->region_free = o.region_free;
	a->region_ctx = o.region_ctx;
	if (a->kind == FLOW_ALLOC_BFC && o.reserve) {
		size_t r = (o.reserve + BFC_MIN - 1) & ~(BFC_MIN - 1);
		a->next_region = r;
		if (extend(a, r)) {
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED,
					"allocator '%s': cannot reserve %zu bytes", a->name, r);
			flow_allocator_free(a);
			return NULL;
		}
	}
	return a;
}

void flow_allocator_free(flow_allocator *a)
{
	if (!a)
		return;
	for (int i = 0; i < a->n_regions; i++) {
		region *r = &a->regions[i];
		/* Walk the physical chunk list to free chunk structs. */
		chunk *c = r->handles[0];
		while (c) {
			chunk *n = c->next;
			free(c);
			c = n;
		}
		free(r->handles);
		region_release(a, r->base, r->size);
	}
	free(a->regions);
	chunk *c = a->spare;
	while (c) {
		chunk *n = c->fnext;
		free(c);
		c = n;
	}
	pthread_mutex_destroy(&a->mu);
	free(a);
}

void *flow_allocator_alloc(flow_allocator *a, size_t bytes)
{
	uint64_t t0 = flow_now_ns();
	pthread_mutex_lock(&a->mu);
	void *p = a->kind == FLOW_ALLOC_BFC ? bfc_alloc(a, bytes) : malloc_alloc(a, bytes);
	if (p) {
		a->st.num_allocs++;
		a->st.live_allocs++;
		a->st.bytes_allocated += bytes;
	}
	a->st.alloc_ns += flow_now_ns() - t0;
	pthread_mutex_unlock(&a->mu);
	return p;
}

void flow_allocator_release(flow_allocator *a, void *p)
{
	if (!p)
		return;
	uint64_t t0 = flow_now_ns();
	pthread_mutex_lock(&a->mu);
	if (a->kind == FLOW_ALLOC_BFC)
		bfc_free(a, p);
	else
		malloc_free(a, p);
	a->st.num_frees++;
	a->st.live_allocs--;
	a->st.alloc_ns += flow_now_ns() - t0;
	pthread_mutex_unlock(&a->mu);
}

void flow_allocator_stats_get(flow_allocator *a, flow_allocator_stats *out)
{
	pthread_mutex_lock(&a->mu);
	*out = a->st;
	uint64_t largest = 0, total = 0;
	for (int b = 0; b < BFC_BINS; b++)
		for (chunk *c = a->bins[b]; c; c = c->fnext) {
			total += c->size;
			if (c->size > largest)
				largest = c->size;
		}
	pthread_mutex_unlock(&a->mu);
	out->largest_free = largest;
	out->total_free = total;
	out->fragmentation = total ? 1.0 - (double)largest / (double)total : 0.0;
}

const char *flow_allocator_name(const flow_allocator *a)
{
	return a->name;
}

void flow__allocator_counters(flow_allocator *a)
{
	if (!pp_is_open())
		return;
	flow_allocator_stats s;
	flow_allocator_stats_get(a, &s);
	pp_counter(a->cnames[0], (double)s.bytes_in_use);
	pp_counter(a->cnames[1], (double)s.peak_bytes_in_use);
	pp_counter(a->cnames[2], (double)s.num_allocs);
	pp_counter(a->cnames[3], s.fragmentation);
	pp_counter(a->cnames[4], (double)s.num_regions);
	pp_counter(a->cnames[5], (double)s.alloc_ns);
}

void flow_allocator_record(flow_allocator *a)
{
	if (!pp_is_open())
		return;
	flow__allocator_counters(a);
	flow_allocator_stats s;
	flow_allocator_stats_get(a, &s);
	pp_row_allocations(flow_tid(), (int64_t)pp_now(), a->name, "summary", (int64_t)s.num_allocs,
			   (int64_t)s.bytes_allocated, (int64_t)s.alloc_ns, (int64_t)s.bytes_in_use,
			   (int64_t)s.peak_bytes_in_use, PP_NULL);
}

/* Internal invariant check for tests: chunks tile each region exactly,
 * no two free neighbours, bins hold exactly the free chunks, in-use bytes
 * add up. Returns 0 or -1 with a message. */
int flow_allocator_check(flow_allocator *a, char *msg, size_t len)
{
	if (a->kind != FLOW_ALLOC_BFC)
		return 0;
	pthread_mutex_lock(&a->mu);
	uint64_t in_use = 0, n_free = 0, n_binned = 0;
	int rc = 0;
	for (int i = 0; i < a->n_regions && !rc; i++) {
		region *r = &a->regions[i];
		char *expect = r->base;
		for (chunk *c = r->handles[0]; c; c = c->next) {
			if (c->ptr != expect || c->size % BFC_MIN || !c->size) {
				snprintf(msg, len, "region %d: chunk at %p size %zu breaks tiling", i, (void *)c->ptr, c->size);
				rc = -1;
				break;
			}
			if (r->handles[(size_t)(c->ptr - r->base) >> BFC_MIN_BITS] != c) {
				snprintf(msg, len, "region %d: handle table misses chunk %p", i, (void *)c->ptr);
				rc = -1;
				break;
			}
			if (!c->in_use && c->next && !c->next->in_use) {
				snprintf(msg, len, "region %d: two adjacent free chunks not coalesced", i);
				rc = -1;
				break;
			}
			if (c->in_use)
				in_use += c->size;
			else
				n_free++;
			expect += c->size;
		}
		if (!rc && expect != r->base + r->size) {
			snprintf(msg, len, "region %d: chunks cover %zu of %zu bytes", i,
				 (size_t)(expect - r->base), r->size);
			rc = -1;
		}
	}
	for (int b = 0; b < BFC_BINS && !rc; b++)
		for (chunk *c = a->bins[b]; c; c = c->fnext) {
			n_binned++;
			if (c->in_use || bin_of(c->size) != b) {
				snprintf(msg, len, "bin %d holds a wrong chunk (size %zu, in use %d)", b, c->size, c->in_use);
				rc = -1;
				break;
			}
		}
	if (!rc && n_binned != n_free) {
		snprintf(msg, len, "%llu free chunks but %llu in bins", (unsigned long long)n_free,
			 (unsigned long long)n_binned);
		rc = -1;
	}
	if (!rc && in_use != a->st.bytes_in_use) {
		snprintf(msg, len, "in-use chunks add to %llu, stats say %llu", (unsigned long long)in_use,
			 (unsigned long long)a->st.bytes_in_use);
		rc = -1;
	}
	pthread_mutex_unlock(&a->mu);
	return rc;
}
