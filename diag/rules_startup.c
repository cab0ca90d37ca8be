/* rules_startup.c — start-up and init rules (registration, initialisers,
 * weight loading, libraries), retracing, and the generic phase share. */
#include "diag_internal.h"
#include "pp_grow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The TensorFlow profiler's input-bound thresholds, used for every share. */
#define SHARE_MODERATE 0.05
#define SHARE_HIGH 0.20
/* A share alone is no claim: 46% of a 42 ms run is 19 ms nobody can win
 * back. The generic share finding also needs the time at stake (what
 * removing the phase would save in this recording) above a floor:
 * 1 s for moderate, 5 s for high; below, it stays an info line. The
 * specific rules (small reads, initialisers, registration...) judge their
 * phases on their own, lower floors. */
#define SHARE_WIN_MODERATE_NS 1000000000LL
#define SHARE_WIN_HIGH_NS 5000000000LL

/* Severity of a share-of-time finding: both the share and the absolute
 * time a user could win back must pass each level. */
static int share_severity(double share, int64_t win_ns)
{
	if (share >= SHARE_HIGH && win_ns >= SHARE_WIN_HIGH_NS)
		return DIAG_HIGH;
	if (share >= SHARE_MODERATE && win_ns >= SHARE_WIN_MODERATE_NS)
		return DIAG_MODERATE;
	return DIAG_INFO;
}

/* Start-up: from the run's start to the first step (the whole run when
 * there is no step loop). */
static int64_t startup_ns(const diag_run *r)
{
	return r->startup_end_ns > 0 ? r->startup_end_ns : r->total_ns;
}

/* Start-up rules also need the cost to matter to the whole run (the TF
 * profiler's 5%): 300 us of registration in a 1 ms start-up of a program
 * that then runs for seconds is nobody's problem. */
static int matters(const diag_run *r, int64_t t)
{
	return r->total_ns <= 0 || (double)t / r->total_ns >= SHARE_MODERATE;
}

/* Time of the outermost spans of kind that end inside start-up. */
static int64_t startup_kind_time(const diag_run *r, int kind, int *count)
{
	int64_t t = 0, end = startup_ns(r);
	int n = 0;
	for (int i = 0; i < r->spans.n; i++) {
		const pp_span_row *s = &r->spans.rows[i];
		if (s->kind != kind || !r->outer[i] || !diag_span_closed(s) || s->start_ns >= end)
			continue;
		int64_t e = s->end_ns < end ? s->end_ns : end;
		t += e - s->start_ns;
		n++;
	}
	if (count)
		*count = n;
	return t;
}


/* ---- retracing ---- */

typedef struct name_count {
	const char *fn;           /* function part of the name (not owned) */
	size_t fn_len;
	int n;
	int64_t t_ns;
	int steps;                /* steady steps with a retrace of it */
	int last_step;
} name_count;

void rule_repeated_retracing(diag_ctx *c)
{
	const diag_run *r = c->run;
	name_count *g = calloc((size_t)r->spans.n + 1, sizeof *g);
	if (!g)
		return;
	int ng = 0;
	for (int i = 0; i < r->spans.n; i++) {
		const pp_span_row *s = &r->spans.rows[i];
		if (s->kind != PP_RETRACE || !r->outer[i] || !diag_span_closed(s))
			continue;
		const char *nm = s->name ? s->name : "";
		const char *paren = strchr(nm, '(');
		size_t len = paren ? (size_t)(paren - nm) : strlen(nm);
		int k = 0;
		while (k < ng && !(g[k].fn_len == len && strncmp(g[k].fn, nm, len) == 0))
			k++;
		if (k == ng)
			g[ng++] = (name_count){nm, len, 0, 0, 0, -1};
		g[k].n++;
		g[k].t_ns += diag_span_dur(s);
		if (r->step_of[i] > 0 && r->step_of[i] != g[k].last_step) {
			g[k].steps++;
			g[k].last_step = r->step_of[i];
		}
	}
	for (int k = 0; k < ng; k++) {
		/* One trace per signature in use is normal; TF warns at 5. */
		if (g[k].n < 3)
			continue;
		double share = r->total_ns > 0 ? (double)g[k].t_ns / r->total_ns : 0;
		int sev = (g[k].n >= 5 || share >= SHARE_HIGH) ? DIAG_HIGH : DIAG_MODERATE;
		char fn[96], tt[32], tm[32];
		snprintf(fn, sizeof fn, "%.*s", (int)(g[k].fn_len < 90 ? g[k].fn_len : 90), g[k].fn);
		pp_finding *f = diag_emit(
			c, "repeated_retracing", sev, share,
			DIAG_SAY(r,
				 "Give the function a relaxed input signature (an unknown batch "
				 "dimension such as [None, 784], or reduce_retracing=True), or "
				 "pad/bucket inputs to a few fixed shapes; never create the traced "
				 "function inside the loop.",
				 "Mark the dimension that changes as dynamic (torch.compile(dynamic=True) "
				 "or torch._dynamo.mark_dynamic on the input), or pad/bucket inputs to a "
				 "few fixed shapes; keep input types and Python constants stable, and "
				 "create the compiled function once, outside the loop."),
			DIAG_SAY(r, "Traced function '%s' is traced %d times",
				 "Compiled function '%s' is compiled %d times"),
			fn[0] ? fn : "?", g[k].n);
		diag_evidence(f,
			      DIAG_SAY(r, "%d traces of '%s', %s in total (%s each, %.0f%% of the run)",
				       "%d compilations of '%s', %s in total (%s each, %.0f%% of the run)"),
			      g[k].n, fn, pp_fmt_dur(tt, sizeof tt, (double)g[k].t_ns),
			      pp_fmt_dur(tm, sizeof tm, (double)g[k].t_ns / g[k].n), 100 * share);
		if (r->n_steps > 1)
			diag_evidence(f, DIAG_SAY(r, "; retraced in %d of %d steady steps",
						  "; recompiled in %d of %d steady steps"),
				      g[k].steps, r->n_steps - 1);
		/* Distinct signatures, in order of first appearance. */
		int shown = 0, distinct = 0;
		for (int i = 0; i < r->spans.n; i++) {
			const pp_span_row *s = &r->spans.rows[i];
			if (s->kind != PP_RETRACE || !r->outer[i] || !s->name ||
			    strncmp(s->name, g[k].fn, g[k].fn_len) != 0 ||
			    (s->name[g[k].fn_len] != '(' && s->name[g[k].fn_len] != 0))
				continue;
			int dup = 0;
			for (int j = 0; j < i && !dup; j++)
				dup = r->spans.rows[j].kind == PP_RETRACE && r->outer[j] &&
				      r->spans.rows[j].name && strcmp(r->spans.rows[j].name, s->name) == 0;
			if (dup)
				continue;
			distinct++;
			if (shown < 4)
				diag_evidence(f, "%s%s", shown ? ", " : "; signatures: ", s->name);
			shown++;
		}
		if (distinct > shown || distinct > 4)
			diag_evidence(f, " (+%d more)", distinct - (shown < 4 ? shown : 4));
		diag_evidence(f, "; %d distinct signatures.", distinct);
	}
	free(g);
}

/* ---- op registration ---- */

void rule_op_registration_startup(diag_ctx *c)
{
	const diag_run *r = c->run;
	int n = 0;
	int64_t t = startup_kind_time(r, PP_OP_REGISTRATION, &n), su = startup_ns(r);
	if (su <= 0 || t <= 0)
		return;
	double share = (double)t / su;
	if (share < SHARE_HIGH || !matters(r, t))
		return;
	char ts[32], ss[32];
	pp_finding *f = diag_emit(
		c, "op_registration_startup", share >= 0.4 ? DIAG_HIGH : DIAG_MODERATE,
		diag_run_share(r, (double)t),
		DIAG_SAY(r,
			 "Register only the ops the program uses (selective / lite registration), or "
			 "register lazily on first lookup; a cached compiled plan lets later processes "
			 "skip it.",
			 "Load only the operator libraries the program uses (custom-op extensions, "
			 "torchvision or torchaudio ops), when first needed; a lean build or "
			 "torch.ops.load_library on demand keeps start-up short."),
		DIAG_SAY(r, "Op registration takes %.0f%% of start-up (%s of %s)",
			 "Operator registration takes %.0f%% of start-up (%s of %s)"),
		100 * share, pp_fmt_dur(ts, sizeof ts, (double)t), pp_fmt_dur(ss, sizeof ss, (double)su));
	diag_evidence(f, "%d %s phases, %s before the first step (start-up %s)", n,
		      diag_kind_word(r, PP_OP_REGISTRATION), ts, ss);
	diag_series reg;
	diag_counter(r, "ops.registered", &reg);
	if (reg.n == 0) {
		free(reg.rows);
		diag_counter(r, "flow.ops_registered", &reg); /* the runtime's name */
	}
	if (reg.n > 0)
		diag_evidence(f, "; %.0f ops registered", reg.rows[reg.n - 1].value);
	free(reg.rows);
	int64_t used = 0;
	if (pp_store_graph_op_types(r->st, r->run_id, &used) != 0)
		used = 0;
	if (used > 0)
		diag_evidence(f, "; the recorded graphs use %lld distinct op types", (long long)used);
	diag_evidence(f, ".");
}

/* ---- initialisers ---- */

void rule_initializer_dominates_init(diag_ctx *c)
{
	const diag_run *r = c->run;
	int nvi = 0, nvc = 0;
	int64_t vi = startup_kind_time(r, PP_VARIABLE_INIT, &nvi);
	int64_t vc = startup_kind_time(r, PP_VARIABLE_CREATE, &nvc);
	int64_t su = startup_ns(r);
	if (su <= 0 || vi <= 0)
		return;
	/* Initialisation repeated and growing is a different problem, named by
	 * repeated_phase_grows: the initialiser is not what got slow. */
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->f[i].rule, "repeated_phase_grows") == 0 &&
		    strstr(c->f[i].title, diag_kind_word(r, PP_VARIABLE_INIT)))
			return;
	double share = (double)vi / su;
	/* "Dominates": at least 30% of start-up and more than creating them. */
	if (share < 0.3 || vi <= vc || vi < 100000 || !matters(r, vi))
		return;
	char a[32], b[32], d[32], e[32];
	pp_finding *f = diag_emit(
		c, "initializer_dominates_init",
		diag_sev_for_win(share >= 0.5 ? DIAG_HIGH : DIAG_MODERATE, (double)vi),
		diag_run_share(r, (double)vi),
		DIAG_SAY(r,
			 "Use a cheaper initialiser where accuracy allows (zeros or constants for "
			 "biases, uniform rather than orthogonal), fill in parallel with a "
			 "counter-based RNG (Philox slices per thread), or load saved weights instead "
			 "of initialising and then overwriting them.",
			 "Do not initialise parameters that are overwritten: build the model on the "
			 "meta device (torch.device(\"meta\"), or torch.nn.utils.skip_init) and then "
			 "load_state_dict(..., assign=True); where the model is trained from scratch, "
			 "prefer cheap torch.nn.init schemes (orthogonal_ runs a QR per weight)."),
		DIAG_SAY(r, "Variable initialisers take %.0f%% of start-up (%s of %s)",
			 "Parameter initialisation takes %.0f%% of start-up (%s of %s)"),
		100 * share, pp_fmt_dur(a, sizeof a, (double)vi), pp_fmt_dur(b, sizeof b, (double)su));
	diag_evidence(f, "%s %s in %d phases; %s %s in %d phases; the rest of start-up %s",
		      diag_kind_word(r, PP_VARIABLE_INIT), a, nvi, diag_kind_word(r, PP_VARIABLE_CREATE),
		      pp_fmt_dur(d, sizeof d, (double)vc), nvc,
		      pp_fmt_dur(e, sizeof e, (double)(su - vi - vc > 0 ? su - vi - vc : 0)));
	/* The slowest initialisers by name (names such as "glorot_uniform:dense/kernel"). */
	const pp_span_row *top[3] = {0};
	for (int i = 0; i < r->spans.n; i++) {
		const pp_span_row *s = &r->spans.rows[i];
		if (s->kind != PP_VARIABLE_INIT || !r->outer[i] || !diag_span_closed(s))
			continue;
		int dup = -1; /* one entry per name: its slowest phase */
		for (int k = 0; k < 3 && top[k] && dup < 0; k++)
			if (strcmp(top[k]->name ? top[k]->name : "", s->name ? s->name : "") == 0)
				dup = k;
		if (dup >= 0) {
			if (diag_span_dur(s) > diag_span_dur(top[dup])) {
				top[dup] = s;
				for (int k = dup; k > 0 && diag_span_dur(top[k]) > diag_span_dur(top[k - 1]); k--) {
					const pp_span_row *x = top[k];
					top[k] = top[k - 1];
					top[k - 1] = x;
				}
			}
			continue;
		}
		for (int k = 0; k < 3; k++)
			if (!top[k] || diag_span_dur(s) > diag_span_dur(top[k])) {
				memmove(top + k + 1, top + k, (size_t)(2 - k) * sizeof *top);
				top[k] = s;
				break;
			}
	}
	for (int k = 0; k < 3 && top[k]; k++)
		diag_evidence(f, "%s%s %s", k ? ", " : "; slowest: ", top[k]->name ? top[k]->name : "?",
			      pp_fmt_dur(a, sizeof a, (double)diag_span_dur(top[k])));
	diag_series ib;
	diag_counter(r, "init.bytes", &ib);
	if (ib.n > 0 && vi > 0) {
		double bytes = ib.rows[ib.n - 1].value;
		diag_evidence(f, "; %s initialised at %.0f MB/s", pp_fmt_bytes(a, sizeof a, bytes),
			      bytes / ((double)vi / 1e9) / 1e6);
	}
	free(ib.rows);
	diag_evidence(f, ".");
}

/* ---- weight loading ---- */

void rule_weight_load_small_reads(diag_ctx *c)
{
	const diag_run *r = c->run;
	int nw = 0;
	int64_t w = diag_kind_time(r, PP_WEIGHT_LOAD, DIAG_ANYWHERE, &nw);
	if (w <= 0)
		return;
	/* The loader's own counters first; the agent's io rows otherwise. */
	double calls = 0, bytes = 0, small = 0;
	const char *src = "the weight loader's counters";
	diag_series sc, sb, ss;
	diag_counter(r, "weights.read_calls", &sc);
	if (sc.n == 0) {
		free(sc.rows);
		diag_counter(r, "weights.reads", &sc); /* the runtime's names */
	}
	diag_counter(r, "weights.read_bytes", &sb);
	if (sb.n == 0) {
		free(sb.rows);
		diag_counter(r, "weights.bytes", &sb);
	}
	diag_counter(r, "weights.small_reads", &ss);
	if (sc.n > 0) {
		/* The loader emits each load's totals once (README), so the run's
		 * totals are the sums. */
		for (int i = 0; i < sc.n; i++)
			calls += sc.rows[i].value;
		for (int i = 0; i < sb.n; i++)
			bytes += sb.rows[i].value;
		for (int i = 0; i < ss.n; i++)
			small += ss.rows[i].value;
		/* No small-read count: a mean read under 4 KiB makes them all small. */
		if (ss.n == 0 && calls > 0 && bytes / calls < 4096)
			small = calls;
	} else {
		int64_t v[3] = {0, 0, 0};
		if (pp_store_io_op_totals(r->st, r->run_id, "read", &v[0], &v[1], &v[2]) != 0)
			v[0] = v[1] = v[2] = 0;
		calls = (double)v[0], bytes = (double)v[1], small = (double)v[2];
		src = "io rows (every file read of the run)";
	}
	free(sc.rows);
	free(sb.rows);
	free(ss.rows);
	int64_t scope = r->n_steps ? startup_ns(r) : r->total_ns;
	if (scope < w)
		scope = r->total_ns;
	double share = scope > 0 ? (double)w / scope : 0;
	if (calls < 100 || small < 0.5 * calls || share < SHARE_MODERATE || !matters(r, w))
		return;
	char a[32], b[32];
	pp_finding *f = diag_emit(
		c, "weight_load_small_reads", share >= SHARE_HIGH ? DIAG_HIGH : DIAG_MODERATE,
		diag_run_share(r, (double)w),
		"Read tensors in large blocks or mmap the file (safetensors and .npy are laid out for "
		"it); avoid per-value reads and unbuffered I/O.",
		"Weight loading is made of small reads: %.0f of %.0f reads are small", small, calls);
	diag_evidence(f, "weight_load %s in %d phases (%.0f%% of %s); %.0f reads (%.0f%% small), "
			 "%s read, %.0f bytes per read on average",
		      pp_fmt_dur(a, sizeof a, (double)w), nw, 100 * share,
		      r->n_steps ? "start-up" : "the run", calls, 100 * small / calls,
		      pp_fmt_bytes(b, sizeof b, bytes), calls > 0 ? bytes / calls : 0);
	if (bytes > 0)
		diag_evidence(f, "; %.1f MB/s while loading", bytes / ((double)w / 1e9) / 1e6);
	diag_evidence(f, " (from %s).", src);
}

/* ---- shared libraries ---- */

typedef struct lib_row {
	char path[160];
	int64_t open_ns, end_ns, size, ctor_ns;
} lib_row;
typedef struct lib_rows {
	lib_row *v;
	int n, cap;
} lib_rows;

static int lib_cb(const pp_library_row *row, void *ud)
{
	lib_rows *l = ud;
	if (PP_GROW(l->v, l->n + 1, l->cap) != 0)
		return 1;
	lib_row *p = &l->v[l->n++];
	snprintf(p->path, sizeof p->path, "%s", row->path ? row->path : "?");
	p->open_ns = row->open_ns;
	p->end_ns = row->end_ns;
	p->size = row->size;
	p->ctor_ns = row->ctor_ns;
	return 0;
}

typedef struct ival {
	int64_t a, b;
} ival;
static int cmp_ival(const void *x, const void *y)
{
	int64_t p = ((const ival *)x)->a, q = ((const ival *)y)->a;
	return (p > q) - (p < q);
}

/* Length of the union of intervals, clipped to [0, end]. Sorts iv. */
static int64_t union_len(ival *iv, int n, int64_t end)
{
	qsort(iv, (size_t)n, sizeof *iv, cmp_ival);
	int64_t t = 0, ca = 0, cb = -1;
	for (int i = 0; i < n; i++) {
		int64_t a = iv[i].a < 0 ? 0 : iv[i].a, b = iv[i].b > end ? end : iv[i].b;
		if (b <= a)
			continue;
		if (a > cb) {
			if (cb > ca)
				t += cb - ca;
			ca = a;
			cb = b;
		} else if (b > cb) {
			cb = b;
		}
	}
	if (cb > ca)
		t += cb - ca;
	return t;
}

void rule_library_load_startup(diag_ctx *c)
{
	const diag_run *r = c->run;
	lib_rows l = {0};
	pp_store_each_library(r->st, r->run_id, 0, lib_cb, &l);
	int nphase = 0;
	for (int i = 0; i < r->spans.n; i++)
		nphase += r->spans.rows[i].kind == PP_LIBRARY_LOAD && r->outer[i];
	ival *iv = malloc((size_t)(l.n + nphase + 1) * sizeof *iv);
	if (!iv) {
		free(l.v);
		return;
	}
	int n = 0;
	int64_t bytes = 0;
	for (int i = 0; i < l.n; i++) {
		bytes += l.v[i].size > 0 ? l.v[i].size : 0;
		if (l.v[i].end_ns > l.v[i].open_ns)
			iv[n++] = (ival){l.v[i].open_ns, l.v[i].end_ns};
	}
	for (int i = 0; i < r->spans.n; i++) {
		const pp_span_row *s = &r->spans.rows[i];
		if (s->kind == PP_LIBRARY_LOAD && r->outer[i] && diag_span_closed(s))
			iv[n++] = (ival){s->start_ns, s->end_ns};
	}
	/* A wrapped program loads libraries long after its own set-up phases
	 * (an import): without a step loop the whole run is start-up here. */
	int64_t su = r->n_steps ? startup_ns(r) : r->total_ns;
	int64_t t = n ? union_len(iv, n, su) : 0;
	free(iv);
	double share = su > 0 ? (double)t / su : 0;
	if (share < SHARE_HIGH || t < 1000000 || !matters(r, t)) {
		free(l.v);
		return;
	}
	char a[32], b[32], d[32];
	pp_finding *f = diag_emit(
		c, "library_load_startup",
		diag_sev_for_startup(r, share >= 0.4 ? DIAG_HIGH : DIAG_MODERATE, (double)t),
		diag_run_share(r, (double)t),
		DIAG_SAY(r,
			 "Load optional libraries lazily, on first use (TensorFlow cut its import time "
			 "by 24% that way, PR #47833); drop unneeded dependencies and heavy static "
			 "constructors.",
			 "Import torch's optional parts (torchvision, torchaudio, CUDA extensions, "
			 "compiled custom ops) only where they are used, on first use; drop unneeded "
			 "dependencies. Loading libtorch itself is a fixed cost of every PyTorch "
			 "process."),
		"Loading shared libraries takes %.0f%% of start-up (%s of %s)", 100 * share,
		pp_fmt_dur(a, sizeof a, (double)t), pp_fmt_dur(b, sizeof b, (double)su));
	diag_evidence(f, "%d libraries mapped (%s)", l.n, pp_fmt_bytes(d, sizeof d, (double)bytes));
	if (nphase)
		diag_evidence(f, ", %d library_load phases", nphase);
	/* Slowest three by their own load time. */
	for (int k = 0; k < 3; k++) {
		int best = -1;
		for (int i = 0; i < l.n; i++)
			if (l.v[i].end_ns - l.v[i].open_ns > 0 &&
			    (best < 0 || l.v[i].end_ns - l.v[i].open_ns > l.v[best].end_ns - l.v[best].open_ns))
				best = i;
		if (best < 0)
			break;
		const char *base = strrchr(l.v[best].path, '/');
		diag_evidence(f, "%s%s %s", k ? ", " : "; slowest: ", base ? base + 1 : l.v[best].path,
			      pp_fmt_dur(a, sizeof a, (double)(l.v[best].end_ns - l.v[best].open_ns)));
		if (l.v[best].ctor_ns > 0)
			diag_evidence(f, " (constructors %s)",
				      pp_fmt_dur(b, sizeof b, (double)l.v[best].ctor_ns));
		l.v[best].end_ns = l.v[best].open_ns; /* taken */
	}
	diag_evidence(f, ".");
	free(l.v);
}

/* ---- generic share ---- */

/* A kind already explained by a specific finding is not repeated. */
static int explained(const diag_ctx *c, int kind)
{
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->f[i].rule, "repeated_phase_grows") == 0 &&
		    strstr(c->f[i].title, diag_kind_word(c->run, kind)))
			return 1;
	switch (kind) {
	case PP_GRAPH_BUILD:
	case PP_SHAPE_INFERENCE:
		return diag_has(c, "graph_grows");
	case PP_COMPILE:
		return diag_has(c, "graph_grows") || diag_has(c, "repeated_retracing") ||
		       diag_has(c, "recompile_storm") || diag_has(c, "first_step_compile") ||
		       diag_has_torch_compile(c->run);
	case PP_SESSION_CREATE:
	case PP_SESSION_CLOSE:
		return diag_has(c, "session_per_iteration");
	case PP_RETRACE:
		return diag_has(c, "repeated_retracing");
	case PP_MEMORY_ALLOC:
		return diag_has(c, "alloc_count_not_flat");
	case PP_DATA_TRANSFER:
		return diag_has(c, "gpu_step_transfers") || diag_has(c, "gpu_sync_copies");
	case PP_OP_REGISTRATION:
		return diag_has(c, "op_registration_startup");
	case PP_VARIABLE_INIT:
		return diag_has(c, "initializer_dominates_init");
	case PP_WEIGHT_LOAD:
		return diag_has(c, "weight_load_small_reads") || diag_has(c, "weight_load_slow");
	case PP_LIBRARY_LOAD:
		return diag_has(c, "library_load_startup");
	}
	return 0;
}

/* The same advice in PyTorch's words; NULL: share_fix's holds for both. */
static const char *share_fix_torch(int kind)
{
	switch (kind) {
	case PP_COMPILE:
		return "Compile once: keep input shapes, dtypes and Python constants stable so "
		       "torch.compile reuses its graphs (dynamic=True or torch._dynamo.mark_dynamic "
		       "for a dimension that changes), and keep the Inductor cache "
		       "(TORCHINDUCTOR_CACHE_DIR) between processes.";
	case PP_VARIABLE_CREATE:
	case PP_VARIABLE_INIT:
		return "Build the model on the meta device and load saved weights, or use cheaper "
		       "torch.nn.init schemes.";
	case PP_MEMORY_ALLOC:
		return "Keep tensor shapes fixed so the caching allocator reuses its blocks, and "
		       "write into preallocated tensors.";
	case PP_GRAPH_BUILD:
	case PP_GRADIENT_BUILD:
	case PP_SHAPE_INFERENCE:
		return "Build the model once, before the loop; keep shapes stable so a compiled or "
		       "scripted model reuses its captured graph.";
	case PP_OP_REGISTRATION:
		return "Load only the operator libraries and extensions the program uses, when first "
		       "needed.";
	case PP_SESSION_CREATE:
	case PP_SESSION_CLOSE:
		return "Set up the model and its runtime context once and reuse them.";
	case PP_OPTIMIZER_SETUP:
		return "Create the optimizer once, before the loop; its state is created on the "
		       "first optimizer.step().";
	}
	return NULL;
}

static const char *share_fix(const diag_run *r, int kind)
{
	const char *t = r->torch ? share_fix_torch(kind) : NULL;
	if (t)
		return t;
	switch (kind) {
	case PP_COMPILE:
		return "Compile once: keep feed/fetch signatures stable so the compiled plan is "
		       "cached, and persist the compile cache across processes.";
	case PP_WEIGHT_LOAD:
		return "Load weights from a binary format read through mmap (safetensors, .npy) "
		       "instead of parsing text.";
	case PP_VARIABLE_INIT:
		return "Use a cheaper or parallel initialiser, or load saved weights directly.";
	case PP_DATA_TRANSFER:
		return "Overlap input transfer with compute (prefetch, pinned memory, async copies).";
	case PP_MEMORY_ALLOC:
		return "Reserve memory up front and reuse it (arena allocator, fixed shapes).";
	case PP_GRAPH_BUILD:
	case PP_GRADIENT_BUILD:
	case PP_SHAPE_INFERENCE:
		return "Build graphs once and reuse them; cache a compiled plan between processes.";
	case PP_OP_REGISTRATION:
		return "Register only the ops the program uses, or register them lazily.";
	case PP_LIBRARY_LOAD:
		return "Load optional libraries lazily and drop unneeded dependencies.";
	default:
		return "Look at what this phase does and whether it must run here, every time.";
	}
}

void rule_phase_share(diag_ctx *c)
{
	const diag_run *r = c->run;
	int64_t steady = r->n_steps >= 3 ? diag_steady_time(r) : 0;
	int python_imports = 0;
	diag_kind_time(r, PP_IMPORT, DIAG_OUTSIDE_STEPS, &python_imports);
	for (int k = 1; k < PP_KIND_COUNT; k++) {
		/* Retracing has its own rule, which knows one trace per signature
		 * is the normal cost. */
		/* The anatomy of a step (forward, backward, optimizer) always
		 * fills it; data waits and imports have their own rules. */
		if (k == PP_STEP || k == PP_FIRST_STEP || k == PP_OP || k == PP_RETRACE ||
		    k == PP_FORWARD || k == PP_BACKWARD || k == PP_OPTIMIZER_STEP ||
		    k == PP_DATA_WAIT || k == PP_IMPORT || explained(c, k))
			continue;
		/* A loader producing batches: its cost is judged against the
		 * loop's waits (data_starvation); a worker does nothing else. */
		if (k == PP_DATA_FETCH || k == PP_DATA_COLLATE)
			continue;
		/* Every Python run starts its interpreter and imports modules: a
		 * share of the run alone says nothing about a healthy program. */
		if (k == PP_PROCESS_START || k == PP_IMPORT)
			continue;
		/* Communication is judged across the job's ranks (rules_ranks.c):
		 * a share of one rank's time is waiting that another rank causes,
		 * and some communication is the normal cost of a distributed job. */
		if (k == PP_COMM || k == PP_COMM_INIT)
			continue;
		/* A Python program maps its libraries inside imports (extension
		 * modules), lazily too (torch 2 imports Dynamo at the first
		 * optimizer step): the import rules judge that time. */
		if (k == PP_LIBRARY_LOAD && python_imports)
			continue;
		/* Exclusive time, as the TF profiler's step-time categories: a
		 * runtime_init that contains op_registration is charged only for
		 * the rest. */
		int n_in = 0, n_out = 0;
		if (steady > 0)
			diag_kind_time(r, k, DIAG_IN_STEADY, &n_in);
		diag_kind_time(r, k, DIAG_OUTSIDE_STEPS, &n_out);
		int64_t t_in = steady > 0 ? diag_kind_self_time(r, k, DIAG_IN_STEADY) : 0;
		int64_t t_out = diag_kind_self_time(r, k, DIAG_OUTSIDE_STEPS);
		/* One compile or one session before the loop is the expected
		 * cost, not a finding; repeated ones are. */
		if ((k == PP_COMPILE || k == PP_SESSION_CREATE || k == PP_SESSION_CLOSE) && n_out < 2)
			t_out = 0;
		double s_in = steady > 0 ? (double)t_in / steady : 0;
		double s_out = r->total_ns > 0 ? (double)t_out / r->total_ns : 0;
		double s = s_in > s_out ? s_in : s_out;
		if (s < SHARE_MODERATE)
			continue;
		char rule[64], a[32], b[32];
		const char *kn = diag_kind_word(r, k);
		snprintf(rule, sizeof rule, "phase_share.%s", pp_kind_name((pp_kind)k));
		int sev = share_severity(s, s_in >= s_out ? t_in : t_out);
		pp_finding *f;
		if (s_in >= s_out)
			f = diag_emit(c, rule, sev, 0, share_fix(r, k),
				      "%s takes %.0f%% of step time", kn, 100 * s_in);
		else
			f = diag_emit(c, rule, sev, 0, share_fix(r, k),
				      "%s takes %.0f%% of the run", kn, 100 * s_out);
		/* A generic share ranks below every specific finding of its
		 * severity and above those of the severity below: score in
		 * [sev - 0.5, sev). */
		if (f)
			f->score = sev > DIAG_INFO ? sev - 0.5 + 0.499 * diag_run_share(r, (double)(t_in + t_out))
						   : 0.499 * diag_run_share(r, (double)(t_in + t_out));
		diag_evidence(f, "Outside steps: %d %s phases, %s (%.1f%% of the run's %s)", n_out,
			      kn, pp_fmt_dur(a, sizeof a, (double)t_out), 100 * s_out,
			      pp_fmt_dur(b, sizeof b, (double)r->total_ns));
		if (steady > 0)
			diag_evidence(f, "; inside the %d steady steps: %d phases, %s (%.1f%% of step "
					 "time)",
				      r->n_steps - 1, n_in, pp_fmt_dur(a, sizeof a, (double)t_in),
				      100 * s_in);
		diag_evidence(f, DIAG_SAY(r, ". Exclusive time (phases of other kinds nested in it are "
					     "not counted). Thresholds as the TensorFlow profiler, 5%% "
					     "moderate and 20%% high, and at least %s (moderate) or %s "
					     "(high) to win back",
					  ". Exclusive time (phases of other kinds nested in it are "
					  "not counted). Thresholds 5%% moderate and 20%% high of the "
					  "time, and at least %s (moderate) or %s (high) to win back"),
			      pp_fmt_dur(a, sizeof a, (double)SHARE_WIN_MODERATE_NS),
			      pp_fmt_dur(b, sizeof b, (double)SHARE_WIN_HIGH_NS));
		if (sev == DIAG_INFO)
			diag_evidence(f, "; here only %s could be won back, so it is reported as "
					 "information",
				      pp_fmt_dur(a, sizeof a, (double)(s_in >= s_out ? t_in : t_out)));
		diag_evidence(f, ".");
	}
}

/* ---- the recording itself ---- */

/* Findings from a damaged or lossy recording can miss things: say so. */
void rule_recording_incomplete(diag_ctx *c)
{
	const pp_run_info *in = &c->run->info;
	int damaged = in->status[0] && strcmp(in->status, "complete") != 0 &&
		      strcmp(in->status, "running") != 0;
	if (!damaged && in->events_lost <= 0 && in->rows_lost <= 0)
		return;
	pp_finding *f = diag_emit(
		c, "recording_incomplete", DIAG_INFO, 0,
		"Findings may miss what was not recorded. For lost events, raise "
		"pp_options.buffer_events / max_buffers; for a cut run, let the program exit "
		"normally or record a shorter stretch.",
		"The recording is incomplete (%s%s%lld events and %lld rows lost)",
		damaged ? in->status : "", damaged ? ", " : "", (long long)in->events_lost,
		(long long)in->rows_lost);
	diag_evidence(f, "run status %s", in->status[0] ? in->status : "unknown");
	if (in->term_signal)
		diag_evidence(f, ", ended by signal %d", in->term_signal);
	diag_evidence(f, "; %lld events recorded, %lld lost, %lld rows lost", (long long)in->events,
		      (long long)in->events_lost, (long long)in->rows_lost);
	if (in->note[0])
		diag_evidence(f, "; ingest: %s", in->note);
	diag_evidence(f, ".");
}
