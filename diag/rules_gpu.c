/* rules_gpu.c — rules over gpu_activity (CUPTI records, Nsight-style). */
#include "diag_internal.h"
#include "diag_stats.h"
#include "pp_grow.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Gaps shorter than this are launch latency between back-to-back kernels. */
#define GAP_MIN_NS 10000
/* Launch overhead assumed when no runtime API records give a measured one. */
#define LAUNCH_NS_DEFAULT 5000
/* As nsys' cuda_memcpy_sync rule: small host-to-device copies are exempt. */
#define SMALL_H2D_BYTES 65536
/* Idle fraction of the GPU's active window: moderate / high (the PyTorch
 * TensorBoard plugin recommends action below 50% utilisation). */
#define IDLE_MODERATE 0.2
#define IDLE_HIGH 0.5

enum { ACT_KERNEL, ACT_MEMCPY, ACT_MEMSET, ACT_RUNTIME, ACT_OTHER };

typedef struct act {
	int kind;
	int64_t start, end, device, corr, bytes;
	char name[96];
	char copy_kind[12], src_kind[12], dst_kind[12];
} act;

typedef struct acts {
	act *v;
	int n, cap;
} acts;

static int act_kind(const char *k)
{
	if (!k)
		return ACT_OTHER;
	if (strcmp(k, "kernel") == 0)
		return ACT_KERNEL;
	if (strcmp(k, "memcpy") == 0)
		return ACT_MEMCPY;
	if (strcmp(k, "memset") == 0)
		return ACT_MEMSET;
	if (strcmp(k, "runtime") == 0 || strcmp(k, "driver") == 0)
		return ACT_RUNTIME;
	return ACT_OTHER;
}

static void copy_text(char *dst, size_t len, const char *s)
{
	snprintf(dst, len, "%s", s ? s : "");
}

static int act_cb(const pp_gpu_row *row, void *ud)
{
	acts *a = ud;
	if (PP_GROW(a->v, a->n + 1, a->cap) != 0)
		return 1;
	act *p = &a->v[a->n++];
	p->kind = act_kind(row->kind);
	p->start = row->start_ns;
	p->end = row->end_ns;
	p->device = row->device;
	p->corr = row->correlation_id;
	p->bytes = row->bytes;
	copy_text(p->name, sizeof p->name, row->name);
	copy_text(p->copy_kind, sizeof p->copy_kind, row->copy_kind);
	copy_text(p->src_kind, sizeof p->src_kind, row->src_kind);
	copy_text(p->dst_kind, sizeof p->dst_kind, row->dst_kind);
	return 0;
}

/* Device activity (kernels, copies, sets) and API calls, by start time. */
static void load_acts(const diag_run *r, acts *a)
{
	memset(a, 0, sizeof *a);
	if (r->has & PP_RUN_HAS_GPU) /* a CPU-only run: no query for each GPU rule */
		pp_store_each_gpu(r->st, r->run_id, 1, act_cb, a);
}

static int on_device(const act *x)
{
	return x->kind == ACT_KERNEL || x->kind == ACT_MEMCPY || x->kind == ACT_MEMSET;
}

/* CUPTI names: HtoD / DtoH (also accepted: h2d, d2h, any case). */
static int is_h2d(const act *x)
{
	return strcasecmp(x->copy_kind, "HtoD") == 0 || strcasecmp(x->copy_kind, "h2d") == 0;
}
static int is_d2h(const act *x)
{
	return strcasecmp(x->copy_kind, "DtoH") == 0 || strcasecmp(x->copy_kind, "d2h") == 0;
}
static int is_pageable(const char *k)
{
	return strncasecmp(k, "pageable", 8) == 0;
}

/* First start and last end of device activity. */
static int64_t gpu_window(const acts *a, int64_t *first)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (int i = 0; i < a->n; i++)
		if (on_device(&a->v[i])) {
			lo = a->v[i].start < lo ? a->v[i].start : lo;
			hi = a->v[i].end > hi ? a->v[i].end : hi;
		}
	if (first)
		*first = lo;
	return hi > lo ? hi - lo : 0;
}

/* The deepest recorded phase covering time t (what the host was doing). */
static const pp_span_row *host_phase_at(const diag_run *r, int64_t t)
{
	const pp_span_row *best = NULL;
	for (int i = 0; i < r->spans.n; i++) {
		const pp_span_row *s = &r->spans.rows[i];
		if (diag_span_closed(s) && s->start_ns <= t && s->end_ns >= t &&
		    (!best || s->depth > best->depth))
			best = s;
	}
	return best;
}

/* Why the device sat idle in a gap, by what bounded it (first that holds):
 * the host was blocked in a synchronising call while the device drained
 * (cudaDeviceSynchronize, cudaStreamSynchronize, a blocking cudaMemcpy:
 * `.item()`, `.cpu()`), so the queue was empty when it came back; the work
 * after the gap is a host-to-device copy (the step waited for its data);
 * the launch of the work after the gap was issued only during the gap (the
 * host was too slow to keep the queue full); else another reason (a stream
 * waiting on an event, work on another device). */
enum { GAP_SYNC, GAP_DATA, GAP_LAUNCH, GAP_OTHER, GAP_CAUSES };
static const char *const gap_cause_name[GAP_CAUSES] = {
	"after the host synchronised", "waiting for host-to-device copies",
	"launches issued late by the host", "other"};
static const char *const gap_cause_fix[GAP_CAUSES] = {
	"The host waits for the GPU to drain and then has nothing queued: remove synchronising calls "
	"from the loop (tensor.item(), .cpu(), print of a device tensor, cudaDeviceSynchronize, "
	"blocking copies); read values back every N steps, or copy them asynchronously "
	"(non_blocking=True into pinned memory) and read them a step later.",
	"The GPU waits for each batch to arrive: load and copy the next batch while the current one "
	"computes (DataLoader with pin_memory=True and .to(device, non_blocking=True), a prefetching "
	"stream), or keep the data on the device.",
	"The host does not launch work fast enough to keep the GPU busy: move Python work out of the "
	"step (preprocessing into DataLoader workers), fuse small kernels (torch.compile), capture the "
	"step in a CUDA graph, or raise the batch size so each launch carries more work.",
	"Keep the GPU fed: overlap input preparation with compute (prefetch, background loading), "
	"avoid host synchronisation between kernels, batch small launches with CUDA graphs, or raise "
	"the batch size."};

static int is_sync_api(const act *x)
{
	if (x->kind != ACT_RUNTIME)
		return 0;
	if (strstr(x->name, "Synchronize"))
		return 1;
	/* cudaMemcpy / cuMemcpyDtoH… without Async block the host */
	return (strncmp(x->name, "cudaMemcpy", 10) == 0 || strncmp(x->name, "cuMemcpy", 8) == 0) &&
	       !strstr(x->name, "Async");
}

/* The synchronising API calls, by start time, and the correlation ids of
 * all API calls (when the work after a gap was launched). */
typedef struct gap_ctx {
	const acts *a;
	int *sync; /* indexes into a->v */
	int nsync;
	diag_id_index *launch;
	int nlaunch;
} gap_ctx;

/* The gap on one device is [from, next->start). */
static int gap_cause(const gap_ctx *g, int64_t from, const act *next)
{
	/* the last synchronising calls begun by `from` (a host thread makes
	 * one at a time: the few before it are enough) */
	int lo = 0, hi = g->nsync;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (g->a->v[g->sync[mid]].start <= from)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int i = lo - 1; i >= 0 && i >= lo - 4; i--) {
		const act *x = &g->a->v[g->sync[i]];
		if (x->end >= from - GAP_MIN_NS && x->end <= next->start)
			return GAP_SYNC;
	}
	if (next->kind == ACT_MEMCPY && is_h2d(next))
		return GAP_DATA;
	int k = next->corr > 0 ? diag_id_find(g->launch, g->nlaunch, next->corr) : -1;
	if (k >= 0 && g->a->v[k].start > from)
		return GAP_LAUNCH;
	return GAP_OTHER;
}

void rule_gpu_idle_gaps(diag_ctx *c)
{
	const diag_run *r = c->run;
	acts a;
	load_acts(r, &a);
	gap_ctx g = {.a = &a};
	g.launch = malloc(((size_t)a.n + 1) * sizeof *g.launch);
	g.sync = malloc(((size_t)a.n + 1) * sizeof *g.sync);
	if (!g.launch || !g.sync)
		goto out;
	for (int i = 0; i < a.n; i++) {
		if (a.v[i].kind == ACT_RUNTIME && a.v[i].corr > 0)
			g.launch[g.nlaunch++] = (diag_id_index){a.v[i].corr, i};
		if (is_sync_api(&a.v[i]))
			g.sync[g.nsync++] = i;
	}
	diag_id_sort(g.launch, g.nlaunch);
	/* Per device; devices are few, so a pass per distinct device. */
	for (int d0 = 0; d0 < a.n; d0++) {
		if (!on_device(&a.v[d0]))
			continue;
		int64_t dev = a.v[d0].device;
		int seen = 0;
		for (int j = 0; j < d0 && !seen; j++)
			seen = on_device(&a.v[j]) && a.v[j].device == dev;
		if (seen)
			continue;
		int n = 0, ngaps = 0;
		int64_t first = -1, busy_end = -1, idle = 0, largest = 0, largest_at = 0;
		int64_t by_cause[GAP_CAUSES] = {0};
		int n_cause[GAP_CAUSES] = {0};
		for (int i = d0; i < a.n; i++) {
			const act *x = &a.v[i];
			if (!on_device(x) || x->device != dev)
				continue;
			if (first < 0)
				first = x->start;
			else if (x->start - busy_end >= GAP_MIN_NS) {
				int64_t gap = x->start - busy_end;
				int cause = gap_cause(&g, busy_end, x);
				by_cause[cause] += gap;
				n_cause[cause]++;
				idle += gap;
				ngaps++;
				if (gap > largest) {
					largest = gap;
					largest_at = busy_end;
				}
			}
			if (x->end > busy_end)
				busy_end = x->end;
			n++;
		}
		int64_t window = busy_end - first;
		if (n < 10 || window <= 0)
			continue;
		double frac = (double)idle / window;
		if (frac < IDLE_MODERATE)
			continue;
		int top = 0;
		for (int k = 1; k < GAP_CAUSES; k++)
			if (by_cause[k] > by_cause[top])
				top = k;
		/* a cause is named only when it holds most of the idle time */
		int named = top != GAP_OTHER && by_cause[top] * 2 >= idle;
		char w[32], t[32], l[32], at[32];
		pp_finding *f = diag_emit(c, "gpu_idle_gaps", frac >= IDLE_HIGH ? DIAG_HIGH : DIAG_MODERATE,
					  frac, gap_cause_fix[named ? top : GAP_OTHER],
					  "GPU %lld is idle %.0f%% of the time between its first and last "
					  "activity%s%s",
					  (long long)dev, 100 * frac, named ? ", mostly " : "",
					  named ? gap_cause_name[top] : "");
		diag_evidence(f, "%d activities over %s; %d gaps of at least %d us, %s idle in total; "
				 "largest gap %s at t=%s",
			      n, pp_fmt_dur(w, sizeof w, (double)window), ngaps, GAP_MIN_NS / 1000,
			      pp_fmt_dur(t, sizeof t, (double)idle), pp_fmt_dur(l, sizeof l, (double)largest),
			      pp_fmt_dur(at, sizeof at, (double)largest_at));
		const pp_span_row *h = host_phase_at(r, largest_at + largest / 2);
		if (h)
			diag_evidence(f, ", while the host was in %s '%s'", pp_kind_name((pp_kind)h->kind),
				      h->name ? h->name : "");
		diag_evidence(f, ". Idle time by cause:");
		for (int k = 0, sep = 0; k < GAP_CAUSES; k++) {
			if (!n_cause[k])
				continue;
			diag_evidence(f, "%s %s %s (%d gap%s)", sep++ ? ";" : "", gap_cause_name[k],
				      pp_fmt_dur(t, sizeof t, (double)by_cause[k]), n_cause[k],
				      n_cause[k] == 1 ? "" : "s");
		}
		diag_evidence(f, ".");
	}
out:
	free(g.launch);
	free(g.sync);
	free(a.v);
}

void rule_gpu_sync_copies(diag_ctx *c)
{
	const diag_run *r = c->run;
	acts a;
	load_acts(r, &a);
	/* API calls by correlation id, to tell which call issued each copy. */
	diag_id_index *api = malloc(((size_t)a.n + 1) * sizeof *api);
	int napi = 0;
	if (!api) {
		free(a.v);
		return;
	}
	for (int i = 0; i < a.n; i++)
		if (a.v[i].kind == ACT_RUNTIME && a.v[i].corr)
			api[napi++] = (diag_id_index){a.v[i].corr, i};
	diag_id_sort(api, napi);
	int64_t window = gpu_window(&a, NULL);
	int n = 0, n_pageable = 0, n_sync = 0, n_h2d = 0, n_d2h = 0;
	int64_t t = 0, bytes = 0;
	for (int i = 0; i < a.n; i++) {
		const act *x = &a.v[i];
		if (x->kind != ACT_MEMCPY || (!is_h2d(x) && !is_d2h(x)))
			continue;
		int pageable = is_pageable(x->src_kind) || is_pageable(x->dst_kind);
		/* Synchronous: marked so by the collector, or the API call that
		 * issued it (found by correlation id) has no "Async" in its name
		 * (cudaMemcpy, cuMemcpyHtoD_v2). */
		/* record/gpu names each copy "sync" or "async" (CUPTI's flag). */
		int sync = strcmp(x->name, "sync") == 0;
		int h = x->corr ? diag_id_find(api, napi, x->corr) : -1;
		if (h >= 0 && !sync) {
			const char *nm = a.v[h].name;
			sync = strstr(nm, "emcpy") && !strstr(nm, "Async");
		}
		if (sync && is_h2d(x) && x->bytes <= SMALL_H2D_BYTES && !pageable)
			sync = 0;
		if (!pageable && !sync)
			continue;
		n++;
		n_pageable += pageable;
		n_sync += sync;
		n_h2d += is_h2d(x);
		n_d2h += is_d2h(x);
		t += x->end - x->start;
		bytes += x->bytes;
	}
	free(a.v);
	free(api);
	double share = window > 0 ? (double)t / window : 0;
	if (n < 2 || share < 0.05)
		return;
	char ts[32], bs[32];
	pp_finding *f = diag_emit(
		c, "gpu_sync_copies", share >= 0.2 ? DIAG_HIGH : DIAG_MODERATE, share,
		"Allocate host buffers as pinned (page-locked) memory (cudaHostAlloc, "
		"pin_memory=True) and copy with cudaMemcpyAsync on a non-default stream so copies "
		"overlap compute.",
		"%d host-device copies block the host (pageable memory or synchronous calls)", n);
	diag_evidence(f, "%d copies (%d host-to-device, %d device-to-host), %s, %s in total "
			 "(%.0f%% of the GPU's active time); %d from pageable memory, %d issued "
			 "by synchronous calls.",
		      n, n_h2d, n_d2h, pp_fmt_bytes(bs, sizeof bs, (double)bytes),
		      pp_fmt_dur(ts, sizeof ts, (double)t), 100 * share, n_pageable, n_sync);
}

void rule_gpu_step_transfers(diag_ctx *c)
{
	const diag_run *r = c->run;
	int steady = r->n_steps - 1;
	if (steady < 3)
		return;
	acts a;
	load_acts(r, &a);
	int *per = calloc((size_t)r->n_steps, sizeof *per);
	double *bytes = calloc((size_t)r->n_steps, sizeof *bytes);
	double *tns = calloc((size_t)r->n_steps, sizeof *tns);
	if (!per || !bytes || !tns)
		goto out;
	int n_h2d = 0, n_d2h = 0;
	for (int i = 0; i < a.n; i++) {
		const act *x = &a.v[i];
		if (x->kind != ACT_MEMCPY || (!is_h2d(x) && !is_d2h(x)))
			continue;
		int s = diag_step_containing(r, x->start, x->end);
		if (s <= 0)
			continue;
		per[s]++;
		bytes[s] += (double)x->bytes;
		tns[s] += (double)(x->end - x->start);
		n_h2d += is_h2d(x);
		n_d2h += is_d2h(x);
	}
	int with = 0;
	double t = 0;
	for (int s = 1; s < r->n_steps; s++) {
		with += per[s] > 0;
		t += tns[s];
	}
	int64_t steady_ns = diag_steady_time(r);
	double share = steady_ns > 0 ? t / steady_ns : 0;
	if (with < 3 || 2 * with < steady || share < 0.05)
		goto out;
	char bs[32], ts[32];
	double *pb = bytes + 1, *pt = tns + 1;
	pp_finding *f = diag_emit(
		c, "gpu_step_transfers", share >= 0.2 ? DIAG_HIGH : DIAG_MODERATE, share,
		"Keep weights and intermediate tensors on the device across steps; prefetch input "
		"batches asynchronously (pinned memory, a second stream) and avoid reading values "
		"back to the host every step.",
		"Host<->device copies in %d of %d steps take %.0f%% of step time", with, steady,
		100 * share);
	diag_evidence(f, "%d host-to-device and %d device-to-host copies inside steady steps; "
			 "per step median %s in %s.",
		      n_h2d, n_d2h, pp_fmt_bytes(bs, sizeof bs, diag_median(pb, steady)),
		      pp_fmt_dur(ts, sizeof ts, diag_median(pt, steady)));
out:
	free(per);
	free(bytes);
	free(tns);
	free(a.v);
}

void rule_gpu_short_kernels(diag_ctx *c)
{
	const diag_run *r = c->run;
	acts a;
	load_acts(r, &a);
	int nk = 0, nl = 0;
	double *kd = malloc(((size_t)a.n + 1) * sizeof *kd);
	double *ld = malloc(((size_t)a.n + 1) * sizeof *ld);
	if (!kd || !ld)
		goto out;
	for (int i = 0; i < a.n; i++) {
		const act *x = &a.v[i];
		if (x->kind == ACT_KERNEL)
			kd[nk++] = (double)(x->end - x->start);
		else if (x->kind == ACT_RUNTIME && strstr(x->name, "aunch"))
			ld[nl++] = (double)(x->end - x->start);
	}
	if (nk < 50)
		goto out;
	int measured = nl >= 10;
	double launch = measured ? diag_median(ld, nl) : LAUNCH_NS_DEFAULT;
	int shorter = 0;
	for (int i = 0; i < nk; i++)
		shorter += kd[i] < launch;
	int64_t window = gpu_window(&a, NULL);
	double share = window > 0 ? shorter * launch / window : 0;
	if (2 * shorter < nk || share < 0.05)
		goto out;
	char ls[32], ms[32];
	pp_finding *f = diag_emit(
		c, "gpu_short_kernels", share >= 0.2 ? DIAG_HIGH : DIAG_MODERATE, share,
		"Fuse small kernels (XLA, torch.compile, a fused op), do more work per launch (larger "
		"batches), or capture the step in a CUDA graph so launches stop costing more than "
		"the kernels.",
		"%d of %d kernels (%.0f%%) run shorter than their launch overhead", shorter, nk,
		100.0 * shorter / nk);
	diag_evidence(f, "median kernel %s; launch overhead %s (%s); launching the short kernels "
			 "costs about %.0f%% of the GPU's active time.",
		      pp_fmt_dur(ms, sizeof ms, diag_median(kd, nk)), pp_fmt_dur(ls, sizeof ls, launch),
		      measured ? "median of the recorded launch calls" : "typical value, no launch calls recorded",
		      100 * share);
out:
	free(kd);
	free(ld);
	free(a.v);
}
