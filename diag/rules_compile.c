/* rules_compile.c — torch.compile (PyTorch 2): a function recompiled again
 * and again (recompile_storm), a first step that is mostly compilation
 * (first_step_compile). They read what python/phaseprof/adapters/
 * torch_compile.py records: outermost `compile` phases named
 * "compile <frame>" / "backward compile <frame>" with the stages nested
 * in them, and the marks "torch.compile recompile: <frame> #<n>: <guard>". */
#include "diag_internal.h"
#include "diag_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fix texts, in PyTorch's words; they must fit pp_finding.fix. */
#define FIX_SHAPE                                                                                  \
	"Each new input shape fails a guard on it, so Dynamo compiles the function again. "      \
	"Compile with dynamic shapes: torch.compile(model, dynamic=True), or mark the "           \
	"dimension that varies before the first call: torch._dynamo.mark_dynamic(x, 0). Or pad "  \
	"the inputs to a few fixed sizes (shape buckets, e.g. batch sizes rounded up to a "        \
	"multiple of 8). Past torch._dynamo.config.recompile_limit (8) recompiles Dynamo runs "    \
	"the function eagerly."
#define FIX_GUARD                                                                                  \
	"A guard on something the function reads (a Python number, an object's identity or "      \
	"type, a dtype or device) fails call after call, so Dynamo compiles the function again. " \
	"Pass a changing Python number as a tensor, keep the guarded object, dtype and device "    \
	"constant, or use dynamic=True when it is a shape. Past "                                 \
	"torch._dynamo.config.recompile_limit (8) recompiles Dynamo runs the function eagerly."
#define FIX_FIRST                                                                                  \
	"Warm up before timing: call the compiled model once (same shapes, with a backward when "  \
	"training) before the measured loop, and compile once (keep the torch.compile'd object). " \
	"Keep the compile caches across runs: TORCHINDUCTOR_CACHE_DIR on a persistent folder "     \
	"(the FX graph and AOTAutograd caches are on by default), so a warm start skips "          \
	"Inductor's code generation and C++ build. mode=\"max-autotune\" compiles far longer "     \
	"than the default mode."
_Static_assert(sizeof FIX_SHAPE <= sizeof((pp_finding *)0)->fix, "fix text too long");
_Static_assert(sizeof FIX_GUARD <= sizeof((pp_finding *)0)->fix, "fix text too long");
_Static_assert(sizeof FIX_FIRST <= sizeof((pp_finding *)0)->fix, "fix text too long");

#define RECOMPILE_MARK "torch.compile recompile: "
#define BREAK_MARK "torch.compile graph break: "

/* The frame of an outermost torch.compile phase name, or NULL: the runtime's
 * own phase is called plain "compile". */
static const char *compile_frame(const char *name)
{
	if (!name)
		return NULL;
	if (strncmp(name, "compile ", 8) == 0)
		return name + 8;
	if (strncmp(name, "backward compile ", 17) == 0)
		return name + 17;
	return NULL;
}

static int is_torch_compile(const pp_span_row *s)
{
	return s->kind == PP_COMPILE && compile_frame(s->name) != NULL;
}

int diag_has_torch_compile(const diag_run *r)
{
	for (int i = r->kind_at[PP_COMPILE]; i < r->kind_at[PP_COMPILE + 1]; i++)
		if (is_torch_compile(&r->spans.rows[r->by_kind[i]]))
			return 1;
	return 0;
}

/* ---- recompile_storm ---- */

#define STORM_MIN_RECOMPILES 2   /* Dynamo's automatic dynamic shapes recompile once */
#define STORM_HIGH_RECOMPILES 5
#define STORM_FUNCS 16

typedef struct storm_fn {
	char frame[256];
	int recompiles;
	char first_reason[256], last_reason[256];
} storm_fn;

typedef struct storm_scan {
	storm_fn fn[STORM_FUNCS];
	int n;
	int breaks;
} storm_scan;

/* "<frame> #<n>: <reason>" after the mark's prefix. */
static int storm_mark(const pp_mark_row *m, void *ud)
{
	storm_scan *s = ud;
	if (!m->name)
		return 0;
	if (strncmp(m->name, BREAK_MARK, strlen(BREAK_MARK)) == 0) {
		const char *x = strrchr(m->name, '(');
		int k = x && x[1] == 'x' ? atoi(x + 2) : 0;
		s->breaks += k > 0 ? k : 1;
		return 0;
	}
	if (strncmp(m->name, RECOMPILE_MARK, strlen(RECOMPILE_MARK)) != 0)
		return 0;
	const char *p = m->name + strlen(RECOMPILE_MARK);
	const char *hash = strstr(p, " #");
	if (!hash)
		return 0;
	const char *reason = strstr(hash, ": ");
	reason = reason ? reason + 2 : "";
	int len = (int)(hash - p);
	storm_fn *f = NULL;
	for (int i = 0; i < s->n; i++)
		if ((int)strlen(s->fn[i].frame) == len && strncmp(s->fn[i].frame, p, (size_t)len) == 0)
			f = &s->fn[i];
	if (!f) {
		if (s->n == STORM_FUNCS)
			return 0;
		f = &s->fn[s->n++];
		memset(f, 0, sizeof *f);
		snprintf(f->frame, sizeof f->frame, "%.*s", len, p);
		snprintf(f->first_reason, sizeof f->first_reason, "%s", reason);
	}
	f->recompiles++;
	snprintf(f->last_reason, sizeof f->last_reason, "%s", reason);
	return 0;
}

/* A shape guard (size or stride of an input) as Dynamo words it. */
static int shape_guard(const char *reason)
{
	return strstr(reason, "size mismatch") || strstr(reason, "stride mismatch") ||
	       strstr(reason, ".size()") || strstr(reason, "dimensionality");
}

void rule_recompile_storm(diag_ctx *c)
{
	const diag_run *r = c->run;
	storm_scan s;
	memset(&s, 0, sizeof s);
	if (pp_store_each_mark(r->st, r->run_id, 0, storm_mark, &s) != 0)
		return;
	for (int k = 0; k < s.n; k++) {
		storm_fn *fn = &s.fn[k];
		if (fn->recompiles < STORM_MIN_RECOMPILES)
			continue;
		/* Time of this frame's compiles: the first and every recompile. */
		int compiles = 0, in_steps = 0, first_step = -1, last_step = -1;
		int64_t t_all = 0, t_re = 0;
		for (int i = 0; i < r->spans.n; i++) {
			const pp_span_row *sp = &r->spans.rows[i];
			const char *fr = compile_frame(sp->name);
			if (sp->kind != PP_COMPILE || !fr || strncmp(sp->name, "compile ", 8) != 0 ||
			    strcmp(fr, fn->frame) != 0 || !diag_span_closed(sp))
				continue;
			compiles++;
			t_all += diag_span_dur(sp);
			/* spans of one thread come by start time: the first is the compile */
			if (compiles > 1)
				t_re += diag_span_dur(sp);
			int st = r->step_of[i];
			if (st >= 0) {
				in_steps++;
				if (first_step < 0)
					first_step = st;
				last_step = st;
			}
		}
		double share = diag_run_share(r, (double)t_re);
		int sev = fn->recompiles >= STORM_HIGH_RECOMPILES || share >= 0.2 ? DIAG_HIGH
										   : DIAG_MODERATE;
		sev = diag_sev_for_win(sev, (double)t_re);
		int shape = shape_guard(fn->last_reason) || shape_guard(fn->first_reason);
		char ta[32], tr[32];
		pp_finding *f = diag_emit(
			c, "recompile_storm", sev, share,
			shape ? FIX_SHAPE : FIX_GUARD,
			"torch.compile recompiled %s %d times (%d compiles, %s)", fn->frame,
			fn->recompiles, compiles > fn->recompiles ? compiles : fn->recompiles + 1,
			pp_fmt_dur(ta, sizeof ta, (double)t_all));
		diag_evidence(f, "Guard that failed at the first recompile: %s", fn->first_reason);
		if (strcmp(fn->first_reason, fn->last_reason) != 0)
			diag_evidence(f, "; at the last: %s", fn->last_reason);
		diag_evidence(f, ". Recompiles took %s (%.0f%% of the run)",
			      pp_fmt_dur(tr, sizeof tr, (double)t_re), 100.0 * share);
		if (in_steps > 0)
			diag_evidence(f, "; %d of the %d compiles ran inside steps %d to %d", in_steps,
				      compiles, first_step, last_step);
		diag_evidence(f, ".");
	}
}

/* ---- first_step_compile ---- */

#define FSC_MIN_SHARE 0.5   /* "mostly compilation" */
#define FSC_FRAMES 5
#define FSC_OTHER 64

/* Stage label of a nested torch.compile phase ("aot_autograd <frame>"). */
static const char *const stages[] = {"dynamo capture", "aot_autograd", "inductor lowering",
				     "inductor codegen", "c++ compile", "backward compile"};
#define N_STAGES ((int)(sizeof stages / sizeof stages[0]))

static int stage_of(const char *name)
{
	for (int k = 0; k < N_STAGES; k++) {
		size_t l = strlen(stages[k]);
		if (name && strncmp(name, stages[k], l) == 0 && name[l] == ' ')
			return k;
	}
	return -1;
}

/* A cumulative counter's value at t (-1 when absent). */
static double counter_at(const diag_run *r, const char *name, int64_t t_ns)
{
	diag_series s = {0};
	double v = -1;
	if (diag_counter(r, name, &s) == 0 && s.n > 0)
		v = diag_series_at(&s, t_ns, -1);
	free(s.rows);
	return v;
}

void rule_first_step_compile(diag_ctx *c)
{
	const diag_run *r = c->run;
	if (r->n_steps < 2)
		return;
	const diag_step *s0 = &r->steps[0];
	int64_t first = s0->end_ns - s0->start_ns;
	if (first <= 0)
		return;
	/* Outermost torch.compile phases inside the first step. */
	int64_t t_comp = 0, stage_ns[N_STAGES] = {0};
	int frames = 0, compiles = 0, n_other = 0;
	int other[FSC_OTHER];   /* a span of each frame seen (bounded) */
	int top[FSC_FRAMES];
	int n_top = 0;
	for (int i = 0; i < r->spans.n; i++) {
		const pp_span_row *sp = &r->spans.rows[i];
		if (sp->kind != PP_COMPILE || r->step_of[i] != 0 || !diag_span_closed(sp))
			continue;
		int k = stage_of(sp->name);
		if (k >= 0 && !(k == 4 && r->parent[i] >= 0 &&
				stage_of(r->spans.rows[r->parent[i]].name) == 4))
			stage_ns[k] += diag_span_dur(sp);
		if (!is_torch_compile(sp) || !r->outer[i])
			continue;
		t_comp += diag_span_dur(sp);
		compiles++;
		/* distinct frames: a backward compile or a recompile is the same frame */
		int seen = 0;
		for (int j = 0; j < n_other && !seen; j++)
			seen = !strcmp(compile_frame(r->spans.rows[other[j]].name), compile_frame(sp->name));
		if (!seen) {
			frames++;
			if (n_other < FSC_OTHER)
				other[n_other++] = i;
		}
		/* the longest FSC_FRAMES, longest first */
		int at = n_top;
		if (n_top < FSC_FRAMES)
			n_top++;
		else if (diag_span_dur(sp) > diag_span_dur(&r->spans.rows[top[--at]]))
			;
		else
			continue;
		while (at > 0 && diag_span_dur(&r->spans.rows[top[at - 1]]) < diag_span_dur(sp)) {
			top[at] = top[at - 1];
			at--;
		}
		top[at] = i;
	}
	double part = (double)t_comp / (double)first;
	if (compiles == 0 || part < FSC_MIN_SHARE)
		return;
	double *y = malloc((size_t)(r->n_steps - 1) * sizeof *y);
	if (!y)
		return;
	for (int i = 1; i < r->n_steps; i++)
		y[i - 1] = (double)(r->steps[i].end_ns - r->steps[i].start_ns);
	double med = diag_median(y, r->n_steps - 1);
	free(y);
	/* One compile at the start of a long run is the price of compiling:
	 * information. It becomes a claim when it is a visible part of the run. */
	double share = diag_run_share(r, (double)t_comp);
	int sev = share >= 0.5 ? DIAG_HIGH : share >= 0.1 ? DIAG_MODERATE : DIAG_INFO;
	sev = diag_sev_for_win(sev, (double)t_comp);
	char tc[32], tf[32], tm[32], tx[32];
	pp_finding *f = diag_emit(
		c, "first_step_compile", sev, share,
		FIX_FIRST,
		"The first step is %.0f%% compilation: torch.compile took %s of its %s (%d frame%s)",
		100.0 * part, pp_fmt_dur(tc, sizeof tc, (double)t_comp),
		pp_fmt_dur(tf, sizeof tf, (double)first), frames, frames == 1 ? "" : "s");
	diag_evidence(f, "First step %s, median of the %d later steps %s. Compiled in it:", tf,
		      r->n_steps - 1, pp_fmt_dur(tm, sizeof tm, med));
	for (int j = 0; j < n_top; j++) {
		const pp_span_row *sp = &r->spans.rows[top[j]];
		diag_evidence(f, "%s %s %s", j ? "," : "", sp->name,
			      pp_fmt_dur(tx, sizeof tx, (double)diag_span_dur(sp)));
	}
	if (compiles > n_top)
		diag_evidence(f, ", and %d more", compiles - n_top);
	diag_evidence(f, ". Stages:");
	int shown = 0;
	for (int k = 0; k < N_STAGES; k++)
		if (stage_ns[k] > 0)
			diag_evidence(f, "%s %s %s", shown++ ? "," : "", stages[k],
				      pp_fmt_dur(tx, sizeof tx, (double)stage_ns[k]));
	if (!shown)
		diag_evidence(f, " none recorded");
	double hit = counter_at(r, "torch.compile.fx_graph_cache_hits", s0->end_ns);
	double miss = counter_at(r, "torch.compile.fx_graph_cache_misses", s0->end_ns);
	if (hit > 0 || miss > 0) /* none with a backend that is not Inductor */
		diag_evidence(f, ". Inductor FX graph cache in the first step: %.0f hits, %.0f misses (%s start)",
			      hit > 0 ? hit : 0, miss > 0 ? miss : 0,
			      hit > 0 && miss <= 0 ? "warm" : hit > 0 ? "partly warm" : "cold");
	storm_scan sc;
	memset(&sc, 0, sizeof sc);
	if (pp_store_each_mark(r->st, r->run_id, 0, storm_mark, &sc) == 0 && sc.breaks > 0)
		diag_evidence(f, ". %d graph break%s (marks \"torch.compile graph break\"): each "
				 "break splits the frame into more graphs to compile", sc.breaks,
			      sc.breaks == 1 ? "" : "s");
	diag_evidence(f, ".");
}
