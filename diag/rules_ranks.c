/*
 * rules_ranks.c — diagnostics over the ranks of a distributed job: start-up
 * / init skew, a straggler rank, communication share per step, slow
 * communicator set-up, a rank that failed.
 *
 * The job is read once (diag_job_load: every rank of the run's job, its
 * sync points, pre-sync phases and per-step compute/communication), then
 * checked by diag_ranks_check, which the unit tests call on hand-built jobs.
 * Findings go on the job's lowest rank, so a job reports them once.
 * Times are placed on one clock by each run's start_unix_ns, which merge
 * has aligned (clock.offset_ns); within one database the host clock is
 * shared already.
 */
#include "diag_internal.h"
#include "pp_grow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int64_t median_i64(int64_t *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof *v, cmp_i64);
	return n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2;
}

void diag_job_free(diag_job *j)
{
	for (int i = 0; i < j->n; i++) {
		free(j->ranks[i].pre);
		free(j->ranks[i].pre_coll);
		free(j->ranks[i].step_ns);
		free(j->ranks[i].step_comm_ns);
		free(j->ranks[i].step_sync_ns);
		for (int q = 0; q < j->ranks[i].n_sync; q++)
			free(j->ranks[i].sync[q].pre);
		free(j->ranks[i].sync);
	}
	free(j->ranks);
	memset(j, 0, sizeof *j);
}

/* ---- loading ---- */

static int add_phase(diag_phase **v, int *n, int *cap, int kind, const char *name, int64_t ns)
{
	for (int i = 0; i < *n; i++)
		if ((*v)[i].kind == kind && strcmp((*v)[i].name, name) == 0) {
			(*v)[i].ns += ns;
			return 0;
		}
	if (PP_GROW(*v, *n + 1, *cap) != 0)
		return -1;
	diag_phase *q = *v;
	q[*n].kind = kind;
	snprintf(q[*n].name, sizeof q[*n].name, "%s", name ? name : "");
	q[*n].ns = ns;
	(*n)++;
	return 0;
}

/* Outermost spans (depth 0) inside [from, to) that are not communication:
 * what a rank was doing before it reached a sync point. */
static int collect_before(const diag_run *r, int64_t from, int64_t to, diag_phase **v, int *n)
{
	int cap = *n; /* a list not empty was allocated to its length */
	for (int i = 0; i < r->spans.n; i++) {
		const pp_span_row *s = &r->spans.rows[i];
		if (s->depth != 0 || !diag_span_closed(s) || s->start_ns < from || s->end_ns > to ||
		    s->kind == PP_COMM || s->kind == PP_COMM_INIT)
			continue;
		if (add_phase(v, n, &cap, s->kind, s->name, diag_span_dur(s)) != 0)
			return -1;
	}
	return 0;
}

#define DIAG_MAX_SYNC 64 /* a job with a barrier in every iteration and no steps */
static int is_barrier(const char *name)
{
	return name && (strstr(name, "barrier") || strstr(name, "Barrier"));
}

static int cmp_sync(const void *a, const void *b)
{
	const diag_sync *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

/* The rank's sync points: every communicator set-up (comm_init), the first
 * collective after each before the steps begin, and every barrier outside
 * the steps (checkpoint barriers; the steps' collectives are the straggler
 * rule's); each with what the rank did since the previous one. */
static int collect_syncs(diag_rank *k, const diag_run *r)
{
	const pp_span_list *l = &r->spans;
	int cap = 0, rc = -1;
	int *ini = malloc((size_t)(l->n ? l->n : 1) * sizeof *ini), ni = 0;
	if (!ini)
		return -1;
	for (int i = 0; i < l->n; i++)
		if (l->rows[i].kind == PP_COMM_INIT && diag_span_closed(&l->rows[i]) && r->outer[i])
			ini[ni++] = i;
	int64_t steps_at = r->n_steps ? r->steps[0].start_ns : INT64_MAX;
	/* per set-up: the earliest collective after it (index, -1 none) */
	int *first = malloc((size_t)(ni ? ni : 1) * sizeof *first);
	if (!first)
		goto out;
	for (int q = 0; q < ni; q++)
		first[q] = -1;
	for (int i = 0; i < l->n; i++) {
		const pp_span_row *s = &l->rows[i];
		if (s->kind != PP_COMM || !diag_span_closed(s) || !r->outer[i])
			continue;
		int inside = 0;
		for (int q = 0; q < ni && !inside; q++) {
			const pp_span_row *t = &l->rows[ini[q]];
			inside = t->start_ns <= s->start_ns && t->end_ns >= s->end_ns;
		}
		if (inside)
			continue; /* the set-up's own traffic */
		for (int q = 0; q < ni; q++) {
			const pp_span_row *t = &l->rows[ini[q]];
			if (s->start_ns >= t->end_ns && (first[q] < 0 || s->start_ns < l->rows[first[q]].start_ns))
				first[q] = i;
		}
	}
	for (int i = 0; i < l->n; i++) {
		const pp_span_row *s = &l->rows[i];
		if (!diag_span_closed(s) || !r->outer[i])
			continue;
		int take = s->kind == PP_COMM_INIT, is_barrier_only = 0;
		if (s->kind == PP_COMM && r->step_of[i] < 0) {
			int is_first = 0;
			for (int q = 0; q < ni && !is_first; q++)
				is_first = first[q] == i;
			/* the first one only while the set-up lasts: a collective
			 * after a step is the steps' business */
			if (is_first && s->start_ns > steps_at)
				is_first = 0;
			/* one collective first after several set-ups: taken once */
			take = is_first || is_barrier(s->name);
			is_barrier_only = !is_first;
		}
		if (!take || k->n_sync >= DIAG_MAX_SYNC)
			continue;
		if (PP_GROW(k->sync, k->n_sync + 1, cap) != 0)
			goto out;
		diag_sync *y = &k->sync[k->n_sync++];
		memset(y, 0, sizeof *y);
		snprintf(y->name, sizeof y->name, "%s", s->name ? s->name : pp_kind_name((pp_kind)s->kind));
		y->start = s->start_ns;
		y->end = s->end_ns;
		y->kind = s->kind;
		y->first = s->kind == PP_COMM && !is_barrier_only;
	}
	if (k->n_sync > 1)
		qsort(k->sync, (size_t)k->n_sync, sizeof *k->sync, cmp_sync);
	for (int q = 0; q < k->n_sync; q++) {
		diag_sync *y = &k->sync[q];
		y->ord = 0;
		for (int p = 0; p < q; p++)
			if (strcmp(k->sync[p].name, y->name) == 0)
				y->ord++;
		y->from = q ? k->sync[q - 1].end : 0;
		if (y->from > y->start)
			y->from = y->start;
		if (collect_before(r, y->from, y->start, &y->pre, &y->n_pre) != 0)
			goto out;
	}
	rc = 0;
out:
	free(ini);
	free(first);
	return rc;
}

static int load_rank(diag_rank *k, const pp_rank_run *rr, pp_store *st, char *err, size_t errlen)
{
	diag_run r;
	memset(k, 0, sizeof *k);
	k->rank = rr->rank;
	k->run_id = rr->run_id;
	snprintf(k->host, sizeof k->host, "%s", rr->host);
	snprintf(k->status, sizeof k->status, "%s", rr->status);
	k->term_signal = rr->term_signal;
	k->exit_code = rr->exit_code;
	k->origin_ns = rr->start_unix_ns;
	k->end_ns = rr->duration_ns;
	k->init_start = k->init_end = k->coll_start = k->coll_end = -1;
	if (diag_run_load(&r, st, rr->run_id, err, errlen) != 0) {
		diag_run_free(&r);
		return -1;
	}
	int rc = -1;
	const pp_span_list *l = &r.spans;
	/* the first communicator set-up, then the first communication after it */
	for (int i = 0; i < l->n; i++) {
		const pp_span_row *s = &l->rows[i];
		if (s->kind == PP_COMM_INIT && diag_span_closed(s) && (k->init_start < 0 || s->start_ns < k->init_start)) {
			k->init_start = s->start_ns;
			k->init_end = s->end_ns;
			snprintf(k->init_name, sizeof k->init_name, "%s", s->name ? s->name : "");
		}
	}
	for (int i = 0; i < l->n; i++) {
		const pp_span_row *s = &l->rows[i];
		if (s->kind == PP_COMM && diag_span_closed(s) && s->start_ns >= k->init_end &&
		    (k->coll_start < 0 || s->start_ns < k->coll_start)) {
			k->coll_start = s->start_ns;
			k->coll_end = s->end_ns;
			snprintf(k->coll_name, sizeof k->coll_name, "%s", s->name ? s->name : "");
		}
	}
	/* where the last open span was when the run ended (a failed rank) */
	for (int i = 0; i < l->n; i++) {
		const pp_span_row *s = &l->rows[i];
		if (s->end_ns < 0 && s->kind != PP_SPAN && s->depth >= k->open_depth) {
			k->open_depth = s->depth;
			const char *kn = pp_kind_name((pp_kind)s->kind);
			if (s->kind == PP_STEP || !s->name || !s->name[0] || strcmp(s->name, kn) == 0)
				snprintf(k->open_phase, sizeof k->open_phase, "%s", kn);
			else
				snprintf(k->open_phase, sizeof k->open_phase, "%s '%s'", kn, s->name);
			k->open_step = s->step;
		}
	}
	if (k->init_start >= 0 && collect_before(&r, 0, k->init_start, &k->pre, &k->n_pre) != 0)
		goto out;
	if (k->coll_start >= 0 &&
	    collect_before(&r, k->init_end, k->coll_start, &k->pre_coll, &k->n_pre_coll) != 0)
		goto out;
	if (collect_syncs(k, &r) != 0)
		goto out;
	/* steps: duration and outermost communication inside each; with DDP
	 * the gradient allreduce waits inside backward (C++ reducer hooks), so
	 * backward is where a faster rank waits for a slower one */
	char ddp[16];
	int has_ddp = pp_store_run_meta(st, rr->run_id, "torch.ddp", ddp, sizeof ddp) == 0;
	k->n_steps = r.n_steps;
	if (r.n_steps) {
		k->step_ns = calloc((size_t)r.n_steps, sizeof *k->step_ns);
		k->step_comm_ns = calloc((size_t)r.n_steps, sizeof *k->step_comm_ns);
		k->step_sync_ns = calloc((size_t)r.n_steps, sizeof *k->step_sync_ns);
		if (!k->step_ns || !k->step_comm_ns || !k->step_sync_ns)
			goto out;
		for (int i = 0; i < r.n_steps; i++)
			k->step_ns[i] = r.steps[i].end_ns - r.steps[i].start_ns;
		for (int i = 0; i < l->n; i++) {
			const pp_span_row *s = &l->rows[i];
			if (!r.outer[i] || r.step_of[i] < 0 || !diag_span_closed(s))
				continue;
			if (s->kind == PP_COMM) {
				k->step_comm_ns[r.step_of[i]] += diag_span_dur(s);
				k->step_sync_ns[r.step_of[i]] += diag_span_dur(s);
			} else if (s->kind == PP_BACKWARD && has_ddp) {
				k->step_sync_ns[r.step_of[i]] += diag_span_dur(s);
			}
		}
	}
	if (pp_store_comm_totals(st, rr->run_id, &k->comm_calls, &k->comm_bytes) != 0)
		goto out;
	rc = 0;
out:
	if (rc != 0)
		snprintf(err, errlen, "run %lld: out of memory loading rank %d", (long long)rr->run_id, rr->rank);
	diag_run_free(&r);
	return rc;
}

int diag_job_load(diag_job *j, pp_store *st, int64_t run_id, char *err, size_t errlen)
{
	memset(j, 0, sizeof *j);
	pp_rank_run *all = NULL;
	int n = 0, rc = -1;
	if (pp_store_rank_runs(st, &all, &n) != 0) {
		snprintf(err, errlen, "run %lld: cannot read the job's ranks", (long long)run_id);
		return -1;
	}
	int me = -1;
	for (int i = 0; i < n; i++)
		if (all[i].run_id == run_id)
			me = i;
	if (me < 0) {
		rc = 1; /* not a rank */
		goto done;
	}
	int first = me;
	while (first > 0 && strcmp(all[first - 1].job, all[me].job) == 0)
		first--;
	if (first != me) {
		rc = 1; /* the job's findings belong to its lowest rank */
		goto done;
	}
	int last = me;
	while (last + 1 < n && strcmp(all[last + 1].job, all[me].job) == 0)
		last++;
	snprintf(j->job, sizeof j->job, "%s", all[me].job);
	j->world_size = all[me].world_size;
	j->ranks = calloc((size_t)(last - first + 1), sizeof *j->ranks);
	if (!j->ranks) {
		snprintf(err, errlen, "run %lld: out of memory", (long long)run_id);
		goto done;
	}
	for (int i = first; i <= last; i++) {
		if (load_rank(&j->ranks[j->n], &all[i], st, err, errlen) != 0) {
			j->n++;
			goto done;
		}
		j->n++;
	}
	rc = 0;
done:
	free(all);
	if (rc != 0)
		diag_job_free(j);
	return rc;
}

/* ---- the checks ---- */

static int64_t job_wall(const diag_job *j)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (int i = 0; i < j->n; i++) {
		const diag_rank *k = &j->ranks[i];
		if (k->origin_ns < lo)
			lo = k->origin_ns;
		if (k->origin_ns + k->end_ns > hi)
			hi = k->origin_ns + k->end_ns;
	}
	return hi > lo ? hi - lo : 0;
}

static double jshare(const diag_job *j, double ns)
{
	int64_t w = job_wall(j);
	return w > 0 ? ns / (double)w : 0;
}

/* A failed rank: crashed, killed or cut short. The earliest to end is the
 * one that failed first; the others were usually stopped by the launcher. */
static int rank_errored(const diag_rank *k)
{
	return strcmp(k->status, "complete") == 0 && k->exit_code > 0;
}

/* the rank ended on its own account: a crash, or an exit with an error
 * code (sys.exit(1), os._exit(3)); the others were usually stopped */
static int rank_culprit(const diag_rank *k)
{
	return strcmp(k->status, "crashed") == 0 || rank_errored(k);
}

static void check_failed(const diag_job *j, diag_ctx *c)
{
	int first = -1, nbad = 0;
	for (int i = 0; i < j->n; i++) {
		const diag_rank *k = &j->ranks[i];
		if (strcmp(k->status, "complete") == 0 && !rank_errored(k))
			continue;
		nbad++;
		int culprit = rank_culprit(k);
		if (first < 0 || (culprit && !rank_culprit(&j->ranks[first])) ||
		    (culprit == rank_culprit(&j->ranks[first]) &&
		     k->origin_ns + k->end_ns < j->ranks[first].origin_ns + j->ranks[first].end_ns))
			first = i;
	}
	if (first < 0)
		return;
	const diag_rank *k = &j->ranks[first];
	char where[160] = "";
	if (k->open_phase[0] && k->open_step >= 0 && strcmp(k->open_phase, "step") == 0)
		snprintf(where, sizeof where, " in step %lld", (long long)k->open_step);
	else if (k->open_phase[0] && k->open_step >= 0)
		snprintf(where, sizeof where, " in step %lld (%s)", (long long)k->open_step, k->open_phase);
	else if (k->open_phase[0])
		snprintf(where, sizeof where, " in %s", k->open_phase);
	int cut = strcmp(k->status, "truncated") == 0;
	char what[160];
	if (cut)
		snprintf(what, sizeof what, "stopped abruptly (its recording was cut: SIGKILL, OOM killer or a lost "
					    "node)%s", where[0] ? "; last seen" : "");
	else if (rank_errored(k))
		snprintf(what, sizeof what, "exited with code %d", k->exit_code);
	else
		snprintf(what, sizeof what, "%s%s", k->status, k->term_signal ? " by a signal" : "");
	pp_finding *f = diag_emit(c, "rank_failed", DIAG_HIGH, 0.9,
				  "Look at the rank's own output (mpirun prints which rank and signal); every other rank's "
				  "recording is complete up to the moment it was stopped, so compare where they were.",
				  "Rank %d %s%s", k->rank, what, where);
	char d[32];
	diag_evidence(f, "Rank %d (run %lld, host %s) ended %s after %s", k->rank, (long long)k->run_id, k->host,
		      rank_errored(k) ? "with an error exit code" : k->status, pp_fmt_dur(d, sizeof d, (double)k->end_ns));
	if (k->term_signal)
		diag_evidence(f, " (signal %d)", k->term_signal);
	diag_evidence(f, "; %d of %d ranks did not complete", nbad, j->n);
	for (int i = 0; i < j->n; i++)
		if (i != first && rank_errored(&j->ranks[i]))
			diag_evidence(f, "; rank %d exited with code %d", j->ranks[i].rank, j->ranks[i].exit_code);
		else if (i != first && strcmp(j->ranks[i].status, "complete") != 0)
			diag_evidence(f, "; rank %d %s", j->ranks[i].rank, j->ranks[i].status);
	diag_evidence(f, ".");
}

/* The rank's sync points; a hand-built rank without a list has its init
 * and first collective (tmp holds them). */
static const diag_sync *rank_syncs(const diag_rank *k, diag_sync tmp[2], int *n)
{
	if (k->sync) {
		*n = k->n_sync;
		return k->sync;
	}
	*n = 0;
	memset(tmp, 0, 2 * sizeof *tmp);
	if (k->init_start >= 0) {
		diag_sync *y = &tmp[(*n)++];
		snprintf(y->name, sizeof y->name, "%s", k->init_name);
		y->start = k->init_start;
		y->end = k->init_end;
		y->kind = PP_COMM_INIT;
		y->pre = k->pre;
		y->n_pre = k->n_pre;
	}
	if (k->coll_start >= 0) {
		diag_sync *y = &tmp[(*n)++];
		snprintf(y->name, sizeof y->name, "%s", k->coll_name);
		y->start = k->coll_start;
		y->end = k->coll_end;
		y->kind = PP_COMM;
		y->first = 1;
		y->from = k->init_start >= 0 ? k->init_end : 0;
		y->pre = k->pre_coll;
		y->n_pre = k->n_pre_coll;
	}
	return tmp;
}

/* rank i's sync point of that name and occurrence into *out: 0, or -1 if
 * it has none */
static int find_sync(const diag_job *j, int i, const char *name, int ord, diag_sync *out)
{
	diag_sync tmp[2];
	int n;
	const diag_sync *v = rank_syncs(&j->ranks[i], tmp, &n);
	for (int q = 0; q < n; q++)
		if (v[q].ord == ord && strcmp(v[q].name, name) == 0) {
			*out = v[q];
			return 0;
		}
	return -1;
}

/* The phase of the late rank before the sync point that cost the most more
 * than the median of the others' same phase. */
static void late_phase(const diag_job *j, int late, const diag_sync *const *at, char *out, size_t len,
		       char *label, size_t llen, const diag_run *run, int64_t *excess_out, int *shared_import)
{
	label[0] = 0;
	*shared_import = 0;
	const diag_rank *k = &j->ranks[late];
	const diag_phase *v = at[late]->pre;
	int nv = at[late]->n_pre;
	int64_t best = 0;
	out[0] = 0;
	*excess_out = 0;
	int64_t *others = malloc((size_t)(j->n > 0 ? j->n : 1) * sizeof *others);
	if (!others)
		return;
	for (int p = 0; p < nv; p++) {
		int no = 0;
		for (int i = 0; i < j->n; i++) {
			if (i == late)
				continue;
			int64_t ns = 0;
			for (int q = 0; q < at[i]->n_pre; q++)
				if (at[i]->pre[q].kind == v[p].kind && strcmp(at[i]->pre[q].name, v[p].name) == 0)
					ns += at[i]->pre[q].ns;
			others[no++] = ns;
		}
		int64_t ex = v[p].ns - median_i64(others, no);
		if (ex > best) {
			best = ex;
			char a[32], b[32];
			snprintf(out, len, "%s '%s' (%s on rank %d, %s more than the other ranks' median)",
				 pp_kind_name((pp_kind)v[p].kind), v[p].name, pp_fmt_dur(a, sizeof a, (double)v[p].ns),
				 k->rank, pp_fmt_dur(b, sizeof b, (double)ex));
			snprintf(label, llen, "%s '%s'", diag_kind_word(run, v[p].kind), v[p].name);
			/* every other rank imported it too (none took 0) */
			int all = v[p].kind == PP_IMPORT && no > 0;
			for (int i = 0; all && i < no; i++)
				all = others[i] > 0;
			*shared_import = all;
		}
	}
	free(others);
	*excess_out = best;
}

/* The median steady step over the ranks (0: no steps) */
static int64_t job_step_ns(const diag_job *j)
{
	int64_t *v = malloc((size_t)(j->n > 0 ? j->n : 1) * sizeof *v);
	int n = 0;
	if (!v)
		return 0;
	for (int i = 0; i < j->n; i++) {
		const diag_rank *k = &j->ranks[i];
		if (k->n_steps < 2)
			continue;
		int64_t *t = malloc((size_t)k->n_steps * sizeof *t);
		if (!t)
			continue;
		for (int s = 1; s < k->n_steps; s++)
			t[s - 1] = k->step_ns[s];
		v[n++] = median_i64(t, k->n_steps - 1);
		free(t);
	}
	int64_t m = median_i64(v, n);
	free(v);
	return m;
}

/* A late rank at a sync point: the set-up of a communicator (MPI_Init,
 * init_process_group, DistributedDataParallel.__init__), the first
 * collective after it, a barrier outside the steps. What counts is the
 * rank's own delay since the previous sync point (a launcher starting
 * ranks one after the other is not the program's doing), judged against
 * the job: at least SYNC_JITTER_NS and a quarter of the others' time for
 * the same stretch, and at least SYNC_JOB_SHARE of the job's wall time or
 * SYNC_STEPS steps.
 * SYNC_JITTER_NS is launch and scheduling jitter measured on this 2-CPU VM
 * with balanced `mpirun -np 4 --oversubscribe` jobs: at load average 10-14
 * the latest rank reached MPI_Init 63-205 ms after the others' median, 38-88
 * ms of it its own; with two more busy loops 90-241 ms late, up to 184 ms
 * its own. */
#define SYNC_JITTER_NS 250000000LL
#define SYNC_JOB_SHARE 0.05
#define SYNC_STEPS 10
static void check_skew(const diag_job *j, diag_ctx *c)
{
	if (j->n < 2)
		return;
	const diag_sync **at = calloc((size_t)j->n, sizeof *at);
	diag_sync *copy = calloc((size_t)j->n, sizeof *copy);
	int64_t *arr = malloc((size_t)j->n * sizeof *arr), *tmp = malloc((size_t)j->n * sizeof *tmp);
	if (!at || !copy || !arr || !tmp)
		goto out;
	int64_t step = job_step_ns(j), wall = job_wall(j);
	diag_sync t0[2];
	int n0;
	const diag_sync *v0 = rank_syncs(&j->ranks[0], t0, &n0);
	int reported = 0;
	for (int q = 0; q < n0 && reported < 3; q++) {
		int all = 1, late = -1;
		for (int i = 0; i < j->n && all; i++) {
			if (find_sync(j, i, v0[q].name, v0[q].ord, &copy[i]) != 0) {
				all = 0; /* a rank never got there: rank_failed says why */
				break;
			}
			at[i] = &copy[i];
			arr[i] = j->ranks[i].origin_ns + copy[i].start;
			if (late < 0 || arr[i] > arr[late])
				late = i;
		}
		if (!all)
			continue;
		const diag_rank *k = &j->ranks[late];
		int m = 0;
		for (int i = 0; i < j->n; i++)
			if (i != late)
				tmp[m++] = arr[i];
		int64_t lateness = arr[late] - median_i64(tmp, m);
		/* what the rank itself added since the previous sync point */
		m = 0;
		for (int i = 0; i < j->n; i++)
			if (i != late)
				tmp[m++] = at[i]->start - at[i]->from;
		int64_t stretch = median_i64(tmp, m);
		int64_t own = (at[late]->start - at[late]->from) - stretch;
		double share = wall > 0 ? (double)lateness / (double)wall : 0;
		/* the same stretch of work a quarter longer on a loaded host is
		 * noise (two ranks importing torch side by side for 20 s) */
		if (lateness < SYNC_JITTER_NS || own < SYNC_JITTER_NS || own < lateness / 2 || own < stretch / 4 ||
		    (share < SYNC_JOB_SHARE && (step <= 0 || lateness < SYNC_STEPS * step)))
			continue;
		/* the others' wait: from their arrival to the late rank's */
		int64_t wait = 0;
		for (int i = 0; i < j->n; i++)
			if (i != late && arr[late] > arr[i])
				wait += arr[late] - arr[i];
		char phase[256], label[128];
		int64_t excess = 0;
		int shared_import = 0;
		late_phase(j, late, at, phase, sizeof phase, label, sizeof label, c->run, &excess,
			   &shared_import);
		const char *sync = at[late]->name;
		const char *rule = at[late]->kind == PP_COMM_INIT ? "rank_init_skew"
				   : at[late]->first			 ? "rank_first_collective_skew"
									 : "rank_barrier_skew";
		char a[32], b[32], d[32], e[32];
		int phase_says = phase[0] && excess > lateness / 2;
		/* The same import on every rank, slower on one: that rank's host
		 * (its page cache, its share of the CPUs) rather than the job's
		 * work. A balanced DDP job's rank 0 imported torch 658 ms after
		 * the other on the loaded 2-CPU CI machine. Said, as information. */
		int host_only = phase_says && shared_import;
		pp_finding *f = diag_emit(
			c, rule, host_only ? DIAG_INFO : share >= 0.2 ? DIAG_HIGH : DIAG_MODERATE, share,
			phase_says
				? DIAG_SAY(c->run,
					   "Make that rank's extra work parallel or shared: split or pre-shard what it loads, "
					   "load it after the collective set-up in the background, or give every rank its "
					   "share; the other ranks otherwise sit waiting at the sync point.",
					   "Make that rank's extra work parallel or shared: pre-shard what it loads so every "
					   "rank loads its part, prepare datasets or download weights before launching "
					   "torchrun, or save checkpoints in the background; the other ranks otherwise sit "
					   "waiting in the next collective (DistributedDataParallel(...) broadcasts from "
					   "every rank).")
				: DIAG_SAY(c->run,
					   "Keep per-rank work between sync points equal (rank-0-only set-up such as "
					   "downloads, dataset preparation or checkpoint writing belongs before the job, on "
					   "every rank in turn, or in the background), so no rank holds the others at the "
					   "next collective.",
					   "Keep per-rank work between collectives equal: rank-0-only work (`if rank == 0:` "
					   "downloads, dataset preparation, checkpoint saving, evaluation) belongs before "
					   "torchrun, on every rank's share, or in a background thread, so no rank holds the "
					   "others in init_process_group, DistributedDataParallel(...) or dist.barrier()."),
			"Rank %d reached %s %s after the other ranks%s%s%s", k->rank, sync,
			pp_fmt_dur(a, sizeof a, (double)lateness), phase_says ? ": its " : "", phase_says ? label : "",
			phase_says ? " took longer" : "");
		diag_evidence(f, "Rank %d (host %s) entered %s %s after the median of the %d other ranks; ", k->rank,
			      k->host, sync, pp_fmt_dur(b, sizeof b, (double)lateness), j->n - 1);
		diag_evidence(f, "since the previous sync point it spent %s more than the others%s. ",
			      pp_fmt_dur(d, sizeof d, (double)own),
			      at[late]->from > 0 ? "" : " (from its own start)");
		if (phase[0] && excess > lateness / 4)
			diag_evidence(f, "Phase: %s. ", phase);
		else
			diag_evidence(f, "No recorded phase explains it (the time is in the program's own code). ");
		diag_evidence(f,
			      "The other ranks waited %s in total (%s each on average) in %s; the delay is %.0f%% of the "
			      "job's wall time",
			      pp_fmt_dur(a, sizeof a, (double)wait), pp_fmt_dur(b, sizeof b, (double)wait / (j->n - 1)),
			      sync, share * 100);
		if (step > 0)
			diag_evidence(f, " and %.1f steps of %s", (double)lateness / (double)step,
				      pp_fmt_dur(e, sizeof e, (double)step));
		diag_evidence(f, ".");
		if (host_only)
			diag_evidence(f, " Every rank makes this import; one rank making it slower points at its "
					 "host (a cold page cache, a shared or network file system, its share of "
					 "the CPUs), not at the job's work.");
		reported++;
	}
out:
	free(at);
	free(copy);
	free(arr);
	free(tmp);
}

/* A step's time spent where ranks wait for each other: communication, and
 * with DDP backward (its allreduce waits there) */
static int64_t step_sync(const diag_rank *k, int s)
{
	return k->step_sync_ns ? k->step_sync_ns[s] : k->step_comm_ns[s];
}

/* Straggler: one rank computes longer in most steps, the others wait for
 * it in their communication (with DDP: in backward, where the gradient
 * allreduce waits). Steps are matched by position; the first (warm-up) is
 * left out. Returns 1 when found. */
static int check_straggler(const diag_job *j, diag_ctx *c)
{
	int steps = -1;
	for (int i = 0; i < j->n; i++)
		if (steps < 0 || j->ranks[i].n_steps < steps)
			steps = j->ranks[i].n_steps;
	if (j->n < 2 || steps < 4)
		return 0;
	int found = 0;
	int64_t *comp = calloc((size_t)j->n, sizeof *comp), *tmp = malloc((size_t)(j->n + steps) * sizeof *tmp);
	int *slowest = calloc((size_t)j->n, sizeof *slowest);
	if (!comp || !tmp || !slowest)
		goto out;
	for (int s = 1; s < steps; s++) {
		int w = 0;
		for (int i = 0; i < j->n; i++) {
			const diag_rank *k = &j->ranks[i];
			int64_t ci = k->step_ns[s] - step_sync(k, s);
			int64_t cw = j->ranks[w].step_ns[s] - step_sync(&j->ranks[w], s);
			if (ci > cw)
				w = i;
		}
		slowest[w]++;
	}
	for (int i = 0; i < j->n; i++) {
		const diag_rank *k = &j->ranks[i];
		for (int s = 1; s < steps; s++)
			tmp[s - 1] = k->step_ns[s] - step_sync(k, s);
		comp[i] = median_i64(tmp, steps - 1);
	}
	int st = 0;
	for (int i = 1; i < j->n; i++)
		if (comp[i] > comp[st])
			st = i;
	int m = 0;
	for (int i = 0; i < j->n; i++)
		if (i != st)
			tmp[m++] = comp[i];
	int64_t med = median_i64(tmp, m);
	int64_t excess = comp[st] - med;
	const diag_rank *k = &j->ranks[st];
	for (int s = 1; s < steps; s++)
		tmp[s - 1] = k->step_ns[s];
	int64_t step_med = median_i64(tmp, steps - 1);
	double share = step_med > 0 ? (double)excess / (double)step_med : 0;
	double consistent = (double)slowest[st] / (double)(steps - 1);
	/* slowest more often than chance: with 2 ranks each is the slowest in
	 * half the steps, so 3 of 5 says nothing; two standard deviations
	 * above the count by chance (a balanced torch 2 job on 2 loaded CPUs
	 * showed one rank 10 ms slower in a 37 ms step over 5 steps) */
	double p = 1.0 / j->n, chance = (steps - 1) * p + 2 * sqrt((steps - 1) * p * (1 - p));
	if (comp[st] < med * 13 / 10 || excess < 1000000 || consistent < 0.6 || slowest[st] < chance ||
	    share < 0.05)
		goto out;
	/* the others' wait per step: their time at the sync beyond the
	 * straggler's own (which is the collective's real cost); in total over
	 * the steady steps */
	int64_t wait_total = 0;
	m = 0;
	for (int i = 0; i < j->n; i++) {
		if (i == st)
			continue;
		for (int s = 1; s < steps; s++) {
			int64_t w = step_sync(&j->ranks[i], s) - step_sync(k, s);
			tmp[s - 1] = w;
			if (w > 0)
				wait_total += w;
		}
		comp[m++] = median_i64(tmp, steps - 1); /* reuse: comp no longer needed past here */
	}
	int64_t wait_med = median_i64(comp, m);
	/* the signature of a straggler is the others waiting for it; without
	 * that wait (a slower rank whose time nobody waits for) a slower rank
	 * is not shown to slow the job */
	if (wait_med < excess / 2)
		goto out;
	const int ddp = k->step_sync_ns != NULL && c->run->torch;
	char a[32], b[32], d[32], e[32];
	pp_finding *f = diag_emit(c, "rank_straggler", share >= 0.2 ? DIAG_HIGH : DIAG_MODERATE, share,
				  DIAG_SAY(c->run,
					   "Balance the work: give that rank the same share of data as the others (uneven "
					   "shards, a last partial batch), check its host for other load or a slower device, "
					   "and move rank-specific extras (logging, checkpointing, evaluation on rank 0) out "
					   "of the step or onto every rank in turn.",
					   "Balance the work: give that rank the same share of data as the others "
					   "(DistributedSampler, drop_last for a last partial batch), give its DataLoader "
					   "enough num_workers if its batches arrive late, check its host for other load or a "
					   "slower GPU, and move rank-0 extras (logging, checkpointing, evaluation) out of the "
					   "training step or onto every rank in turn."),
				  "Rank %d is a straggler: %s more compute per step than the others; they wait for it",
				  k->rank, pp_fmt_dur(a, sizeof a, (double)excess));
	diag_evidence(f, "Median compute per step (step time minus %s, %d steady steps): rank %d %s, "
			 "the other %d ranks' median %s; rank %d was the slowest in %d of %d steps. ",
		      ddp ? "communication and backward, where DDP's allreduce waits" : "communication", steps - 1,
		      k->rank, pp_fmt_dur(b, sizeof b, (double)(med + excess)), m, pp_fmt_dur(d, sizeof d, (double)med),
		      k->rank, slowest[st], steps - 1);
	diag_evidence(f, "The other ranks wait a median %s per step for it (%s, beyond rank %d's own), "
			 "%.0f%% of the %s step; %s in total over the steady steps.",
		      pp_fmt_dur(e, sizeof e, (double)wait_med), ddp ? "in backward and communication" : "in communication",
		      k->rank, step_med > 0 ? 100.0 * (double)wait_med / (double)step_med : 0,
		      pp_fmt_dur(a, sizeof a, (double)step_med), pp_fmt_dur(b, sizeof b, (double)wait_total));
	found = 1;
out:
	free(comp);
	free(tmp);
	free(slowest);
	return found;
}

/* Communication share of the steady steps, median over the ranks. */
static void check_comm_share(const diag_job *j, diag_ctx *c)
{
	int64_t *share_pm = malloc((size_t)(j->n > 0 ? j->n : 1) * sizeof *share_pm);
	if (!share_pm)
		return;
	int n = 0;
	int64_t comm_all = 0, step_all = 0, calls = 0, bytes = 0;
	/* a step's communication is what the collective itself costs: the
	 * least any rank spent in it (the last to arrive waited for nobody);
	 * the rest is ranks waiting for each other, which on a starved host
	 * (ranks outnumbering CPUs under other load) is most of it */
	int steps = -1;
	for (int i = 0; i < j->n; i++)
		if (j->ranks[i].n_steps >= 3 && (steps < 0 || j->ranks[i].n_steps < steps))
			steps = j->ranks[i].n_steps;
	for (int i = 0; i < j->n; i++) {
		const diag_rank *k = &j->ranks[i];
		if (k->n_steps < 3)
			continue;
		int64_t cs = 0, ss = 0;
		for (int s = 1; s < steps; s++) {
			int64_t least = k->step_comm_ns[s];
			for (int o = 0; o < j->n; o++)
				if (j->ranks[o].n_steps >= 3 && j->ranks[o].step_comm_ns[s] < least)
					least = j->ranks[o].step_comm_ns[s];
			cs += least;
			ss += k->step_ns[s];
		}
		if (ss <= 0)
			continue;
		share_pm[n++] = cs * 1000 / ss;
		comm_all += cs;
		step_all += ss;
		calls += k->comm_calls;
		bytes += k->comm_bytes;
	}
	if (n >= 2) {
		int64_t med = median_i64(share_pm, n);
		double share = (double)med / 1000.0;
		if (share >= 0.3) {
			char a[32], b[32];
			pp_finding *f = diag_emit(
				c, "rank_comm_share", share >= 0.5 ? DIAG_HIGH : DIAG_MODERATE, share,
				"Overlap communication with computation (DDP's bucketed allreduce during backward, "
				"non-blocking MPI_Iallreduce started before the next compute), send fewer and larger "
				"messages, use a bigger batch per step, or a faster interconnect/transport.",
				"Communication takes %.0f%% of every step (median over %d ranks)", share * 100, n);
			diag_evidence(f, "In the steady steps the ranks spend %s communicating out of %s of step time "
					 "(all ranks together; per step the time of the rank that spent least in it, the "
					 "rest being waits for each other); median share per rank %.0f%%.",
				      pp_fmt_dur(a, sizeof a, (double)comm_all), pp_fmt_dur(b, sizeof b, (double)step_all),
				      share * 100);
			if (calls)
				diag_evidence(f, " %lld communication calls moved %s.", (long long)calls,
					      pp_fmt_bytes(a, sizeof a, (double)bytes));
		}
	}
	free(share_pm);
}

/* Slow communicator set-up: even the last rank to arrive, which waited for
 * nobody, spent long in MPI_Init / init_process_group. */
#define INIT_FLOOR_NS 3000000000LL
static void check_slow_init(const diag_job *j, diag_ctx *c)
{
	int late = -1;
	for (int i = 0; i < j->n; i++) {
		const diag_rank *k = &j->ranks[i];
		if (k->init_start < 0)
			return;
		if (late < 0 || k->origin_ns + k->init_start > j->ranks[late].origin_ns + j->ranks[late].init_start)
			late = i;
	}
	if (late < 0)
		return;
	const diag_rank *k = &j->ranks[late];
	int64_t d = k->init_end - k->init_start;
	double share = jshare(j, (double)d);
	if (d < INIT_FLOOR_NS || share < 0.15)
		return;
	char a[32];
	pp_finding *f = diag_emit(
		c, "rank_slow_comm_init", DIAG_MODERATE, share,
		"Point the set-up at the right network and skip what it probes: Open MPI `--mca btl self,vader,tcp "
		"--mca btl_tcp_if_include <iface>` and `--mca pml ob1` (or exclude unused MTLs such as psm/psm2/ofi); "
		"torch.distributed: MASTER_ADDR that resolves quickly, GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME; "
		"Slurm: launch with srun --mpi=pmix.",
		"Communicator set-up (%s) takes %s even on the last rank to arrive", k->init_name,
		pp_fmt_dur(a, sizeof a, (double)d));
	diag_evidence(f, "Rank %d entered %s last, so waited for no other rank, and still spent %s in it "
			 "(%.0f%% of the job's wall time).",
		      k->rank, k->init_name, a, share * 100);
}

void diag_ranks_check(const diag_job *j, diag_ctx *c)
{
	check_failed(j, c);
	check_skew(j, c);
	if (!check_straggler(j, c))
		check_comm_share(j, c); /* with a straggler the communication is its wait */
	check_slow_init(j, c);
}

void rule_ranks(diag_ctx *c)
{
	diag_job j;
	char err[256];
	if (!(c->run->has & PP_RUN_IS_RANK)) /* not a rank: no read of the job */
		return;
	if (diag_job_load(&j, c->run->st, c->run->run_id, err, sizeof err) != 0)
		return;
	diag_ranks_check(&j, c);
	diag_job_free(&j);
}
