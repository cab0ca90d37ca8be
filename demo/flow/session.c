/*
 * session.c — sessions: creation and close, the plan cache (in memory per
 * signature), re-validation after the graph grew, and run. Compiling is
 * session_compile.c, plans on disk session_plan_file.c, the executor
 * session_exec.c.
 */
#include "session_internal.h"
#include "phaseprof.h"
#include "pp_grow.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- plan memory ---- */
void sess_pnode_clear(pnode *p)
{
	free(p->name);
	flow__attrs_free(&p->attrs);
	free(p->in_node);
	free(p->in_idx);
	free(p->in_ref);
	free(p->ctrl);
	free(p->out_dt);
	free(p->in_var);
	free(p->release);
	free(p->in_dead);
	memset(p, 0, sizeof *p);
}

void sess_plan_free(plan *pl)
{
	if (!pl)
		return;
	for (int i = 0; i < pl->n; i++)
		sess_pnode_clear(&pl->nodes[i]);
	free(pl->nodes);
	free(pl->fetch_slot);
	free(pl->values);
	free(pl->ins);
	free(pl->outs);
	free(pl->vslots);
	free(pl->key);
	free(pl);
}

static void drop_plans(flow_session *s)
{
	for (int i = 0; i < s->n_plans; i++)
		sess_plan_free(s->plans[i]);
	s->n_plans = 0;
	pp_hash_clear(&s->plan_index);
}

static int ensure_ids(flow_session *s)
{
	int need = s->g->n_ops;
	if (need <= s->cap_ids)
		return 0;
	int nc = s->cap_ids ? s->cap_ids : 64;
	while (nc < need)
		nc *= 2;
	flow_tensor **nv = realloc(s->vars, sizeof *nv * (size_t)nc);
	if (!nv)
		return -1;
	s->vars = nv;
	uint64_t *ns = realloc(s->state, sizeof *ns * (size_t)nc);
	if (!ns)
		return -1;
	s->state = ns;
	memset(s->vars + s->cap_ids, 0, sizeof *nv * (size_t)(nc - s->cap_ids));
	memset(s->state + s->cap_ids, 0, sizeof *ns * (size_t)(nc - s->cap_ids));
	s->cap_ids = nc;
	return 0;
}

/* ---- sessions ---- */
flow_session *flow_session_new(flow_graph *g, const flow_session_options *opts, flow_status *st)
{
	flow__ensure_init();
	PP_PHASE(PP_SESSION_CREATE, "session_create");
	if (!g) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "flow_session_new: graph is NULL");
		return NULL;
	}
	flow_session *s = calloc(1, sizeof *s);
	if (!s) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "session: out of memory");
		return NULL;
	}
	s->g = g;
	s->alloc = opts && opts->allocator ? opts->allocator : flow_default_allocator();
	s->op_timing = opts && opts->op_timing ? opts->op_timing > 0 : flow__op_timing_default;
	const char *dir = opts && opts->plan_cache_dir ? opts->plan_cache_dir : flow__plan_dir_default;
	s->plan_dir = dir && *dir ? strdup(dir) : NULL;
	s->no_step_phase = opts ? opts->no_step_phase : 0;
	s->disable = opts ? opts->disable_passes : 0;
	pthread_mutex_init(&s->mu, NULL);
	pp_hash_init(&s->plan_index, NULL);
	if (ensure_ids(s)) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "session: out of memory");
		s->closed = 1; /* never counted on the graph */
		flow_session_free(s);
		return NULL;
	}
	flow__graph_attach(g);
	return s;
}

int flow_session_close(flow_session *s, flow_status *st)
{
	if (!s)
		return 0;
	if (s->closed) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "session is already closed");
		return -1;
	}
	PP_PHASE(PP_SESSION_CLOSE, "session_close");
	pthread_mutex_lock(&s->mu);
	drop_plans(s);
	for (int i = 0; i < s->cap_ids; i++) {
		flow_tensor_unref(s->vars[i]);
		s->vars[i] = NULL;
	}
	s->closed = 1;
	flow_graph *g = s->g;
	s->g = NULL;
	pthread_mutex_unlock(&s->mu);
	flow_allocator_record(s->alloc);
	flow__graph_detach(g);
	return 0;
}

void flow_session_free(flow_session *s)
{
	if (!s)
		return;
	if (!s->closed)
		flow_session_close(s, NULL);
	drop_plans(s);
	free(s->plans);
	pp_hash_free(&s->plan_index);
	if (s->vars)
		for (int i = 0; i < s->cap_ids; i++)
			flow_tensor_unref(s->vars[i]);
	free(s->vars);
	free(s->state);
	free(s->plan_dir);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void flow_session_stats_get(const flow_session *s, flow_session_stats *out)
{
	*out = s->st;
}

flow_tensor *flow_session_variable_value(flow_session *s, flow_op *var, flow_status *st)
{
	if (s->closed) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "session is closed");
		return NULL;
	}
	if (!var || var->graph != s->g || var->var_index < 0) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "'%s' is not a variable of this session's graph",
				var ? var->name : "(null)");
		return NULL;
	}
	if (var->id >= s->cap_ids || !s->vars[var->id]) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "variable '%s' is uninitialized in this session",
				var->name);
		return NULL;
	}
	return flow_tensor_ref(s->vars[var->id]);
}

/* ---- signature ---- */
static char *signature_key(const flow_output *feeds, int nf, const flow_output *fetches, int nx,
			   flow_op *const *targets, int nt)
{
	flow_buf b = {0};
	char tmp[32];
	for (int i = 0; i < nf; i++) {
		flow__buf_put(&b, feeds[i].op->name, strlen(feeds[i].op->name));
		int w = snprintf(tmp, sizeof tmp, ":%d,", feeds[i].index);
		flow__buf_put(&b, tmp, (size_t)w);
	}
	flow__buf_put(&b, "->", 2);
	for (int i = 0; i < nx; i++) {
		flow__buf_put(&b, fetches[i].op->name, strlen(fetches[i].op->name));
		int w = snprintf(tmp, sizeof tmp, ":%d,", fetches[i].index);
		flow__buf_put(&b, tmp, (size_t)w);
	}
	flow__buf_put(&b, "/", 1);
	for (int i = 0; i < nt; i++) {
		flow__buf_put(&b, targets[i]->name, strlen(targets[i]->name));
		flow__buf_put(&b, ",", 1);
	}
	flow__buf_put(&b, "", 1);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return (char *)b.p;
}

/* ---- run ---- */
static int check_outputs(flow_session *s, const flow_output *o, int n, const char *what, flow_status *st)
{
	for (int i = 0; i < n; i++) {
		if (!o[i].op) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "%s %d is NULL", what, i);
			return -1;
		}
		if (o[i].op->graph != s->g) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"%s %d ('%s:%d') is from another graph than the session's", what, i,
					o[i].op->name, o[i].index);
			return -1;
		}
		if (o[i].index < 0 || o[i].index >= o[i].op->n_outputs) {
			flow_status_set(st, FLOW_OUT_OF_RANGE, "%s %d: node '%s' has no output %d", what, i,
					o[i].op->name, o[i].index);
			return -1;
		}
	}
	return 0;
}

static int check_feeds(flow_session *s, const flow_output *feeds, flow_tensor *const *vals, int nf,
		       flow_status *st)
{
	if (check_outputs(s, feeds, nf, "feed", st))
		return -1;
	for (int i = 0; i < nf; i++) {
		flow_op *op = feeds[i].op;
		if (strcmp(op->reg->def->name, "Placeholder")) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"feed %d: node '%s' is a %s, not a Placeholder; only placeholders can be fed",
					i, op->name, op->reg->def->name);
			return -1;
		}
		for (int j = 0; j < i; j++)
			if (feeds[j].op == op) {
				flow_status_set(st, FLOW_INVALID_ARGUMENT, "placeholder '%s' is fed twice", op->name);
				return -1;
			}
		flow_tensor *t = vals ? vals[i] : NULL;
		if (!t) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "feed %d ('%s'): value is NULL", i, op->name);
			return -1;
		}
		if (t->dtype != op->out_dtypes[0]) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "feed '%s': placeholder is %s, fed %s", op->name,
					flow_dtype_name(op->out_dtypes[0]), flow_dtype_name(t->dtype));
			return -1;
		}
		const flow_shape *ps = &op->out_shapes[0];
		int bad = ps->ndim >= 0 && ps->ndim != t->ndim;
		for (int k = 0; !bad && ps->ndim >= 0 && k < ps->ndim; k++)
			bad = ps->dims[k] >= 0 && ps->dims[k] != t->dims[k];
		if (bad) {
			char a[96], b[96];
			flow_shape ts = flow_tensor_shape(t);
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "feed '%s': placeholder shape %s, fed shape %s",
					op->name, flow_shape_str(ps, a, sizeof a), flow_shape_str(&ts, b, sizeof b));
			return -1;
		}
	}
	return 0;
}

static plan *plan_lookup(flow_session *s, const char *key, uint32_t h)
{
	for (uint32_t it = 0, i; pp_hash_next(&s->plan_index, h, &it, &i);)
		if (!strcmp(s->plans[i]->key, key))
			return s->plans[i];
	return NULL;
}

static int plan_insert(flow_session *s, plan *pl, uint32_t h)
{
	if (PP_GROW(s->plans, s->n_plans + 1, s->cap_plans) ||
	    pp_hash_add(&s->plan_index, h, (uint32_t)s->n_plans))
		return -1;
	s->plans[s->n_plans++] = pl;
	return 0;
}

static plan *get_plan(flow_session *s, const flow_output *feeds, int nf, const flow_output *fetches,
		      int nx, flow_op *const *targets, int nt, flow_status *st)
{
	/* The graph grew since this session last looked: like TF's
	 * ExtendSession, check the whole graph again (O(nodes + edges)) and
	 * drop the plans compiled against the old version. */
	if (s->g->version != s->seen_version) {
		PP_PHASE(PP_SPAN, "extend_graph");
		uint64_t t0 = flow_now_ns();
		if (flow__graph_validate(s->g, st))
			return NULL;
		if (ensure_ids(s)) {
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "session: out of memory");
			return NULL;
		}
		s->st.revalidations++;
		s->st.last_validate_ns = flow_now_ns() - t0;
		drop_plans(s);
		s->seen_version = s->g->version;
	}
	char *key = signature_key(feeds, nf, fetches, nx, targets, nt);
	if (!key) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "session: out of memory");
		return NULL;
	}
	uint32_t h = pp_hash_str(key);
	plan *pl = plan_lookup(s, key, h);
	if (pl) {
		s->st.plan_cache_hits++;
		free(key);
		return pl;
	}
	if (s->plan_dir) {
		pl = sess_plan_load(s, key, nf);
		if (pl) {
			/* The feed order of this call must match the file's. */
			s->st.plan_disk_hits++;
		}
	}
	if (!pl) {
		pl = sess_compile(s, feeds, nf, fetches, nx, targets, nt, st);
		if (pl && s->plan_dir)
			sess_plan_save(s, pl, key);
	}
	if (!pl) {
		free(key);
		return NULL;
	}
	pl->key = key;
	if (plan_insert(s, pl, h)) {
		sess_plan_free(pl);
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "session: out of memory");
		return NULL;
	}
	s->st.last_plan_nodes = pl->n;
	s->st.last_pruned_nodes = pl->pruned;
	s->st.last_folded = pl->folded;
	s->st.last_cse_removed = pl->cse;
	s->st.last_fused = pl->fused;
	s->st.last_inplace = pl->inplace;
	return pl;
}

int flow_session_run(flow_session *s, const flow_output *feeds, flow_tensor *const *feed_values, int nf,
		     const flow_output *fetches, flow_tensor **fetch_values, int nx, flow_op *const *targets,
		     int nt, flow_status *st)
{
	if (!s) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "flow_session_run: session is NULL");
		return -1;
	}
	if (s->closed) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "attempted to use a closed session");
		return -1;
	}
	if (nf < 0 || nx < 0 || nt < 0 || (nf && !feeds) || (nx && (!fetches || !fetch_values)) ||
	    (nt && !targets)) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "flow_session_run: bad feed/fetch/target arrays");
		return -1;
	}
	if (!nx && !nt) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "flow_session_run: nothing to fetch or run");
		return -1;
	}
	for (int i = 0; i < nx; i++)
		fetch_values[i] = NULL;
	if (check_feeds(s, feeds, feed_values, nf, st) || check_outputs(s, fetches, nx, "fetch", st))
		return -1;
	int init = 0;
	for (int i = 0; i < nt; i++) {
		if (!targets[i] || targets[i]->graph != s->g) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "target %d ('%s') is %s", i,
					targets[i] ? targets[i]->name : "(null)",
					targets[i] ? "from another graph than the session's" : "NULL");
			return -1;
		}
		init |= targets[i]->is_init;
	}
	pthread_mutex_lock(&s->mu);
	/* An initializer run is always a variable_init phase (named after what
	 * it initialises); other runs are steps unless the caller records its own. */
	int step = !init && !s->no_step_phase;
	if (init) {
		char name[300];
		flow_op *t0 = targets[0];
		for (int i = 0; i < nt; i++)
			if (targets[i]->is_init) {
				t0 = targets[i];
				break;
			}
		flow_op *var = t0->n_inputs > 0 ? t0->inputs[0].op : NULL;
		if (nt == 1 && var && var->initializer == t0)
			snprintf(name, sizeof name, "%.140s:%.140s", t0->name, var->name);
		else
			snprintf(name, sizeof name, "%.200s", t0->name);
		pp_phase_begin(PP_VARIABLE_INIT, name);
	} else if (step) {
		pp_step_begin((int64_t)s->st.runs);
	}
	int rc = -1;
	plan *pl = get_plan(s, feeds, nf, fetches, nx, targets, nt, st);
	if (pl)
		rc = sess_execute(s, pl, feed_values, fetch_values, st);
	s->st.runs++;
	/* Allocator counters at every step end: the allocation-trend rules
	 * need one point per step. */
	flow__allocator_counters(s->alloc);
	if (init)
		pp_phase_end();
	else if (step)
		pp_step_end();
	pthread_mutex_unlock(&s->mu);
	return rc;
}

char *flow_session_plan_dump(flow_session *s, const flow_output *feeds, int nf, const flow_output *fetches,
			     int nx, flow_op *const *targets, int nt, flow_status *st)
{
	if (s->closed) {
		flow_status_set(st, FLOW_FAILED_PRECONDITION, "attempted to use a closed session");
		return NULL;
	}
	if (check_outputs(s, feeds, nf, "feed", st) || check_outputs(s, fetches, nx, "fetch", st))
		return NULL;
	pthread_mutex_lock(&s->mu);
	plan *pl = get_plan(s, feeds, nf, fetches, nx, targets, nt, st);
	flow_buf b = {0};
	if (pl) {
		char line[1024], attrs[600];
		for (int i = 0; i < pl->n; i++) {
			pnode *p = &pl->nodes[i];
			int w = snprintf(line, sizeof line, "%s = %s(", p->name, p->reg->def->name);
			flow__buf_put(&b, line, (size_t)w);
			for (int k = 0; k < p->n_in; k++) {
				w = snprintf(line, sizeof line, "%s%s:%d", k ? ", " : "", pl->nodes[p->in_node[k]].name,
					     p->in_idx[k]);
				flow__buf_put(&b, line, (size_t)w < sizeof line ? (size_t)w : sizeof line - 1);
			}
			for (int k = 0; k < p->n_ctrl; k++) {
				w = snprintf(line, sizeof line, "%s^%s", k || p->n_in ? ", " : "",
					     pl->nodes[p->ctrl[k]].name);
				flow__buf_put(&b, line, (size_t)w < sizeof line ? (size_t)w : sizeof line - 1);
			}
			flow__attrs_str(&p->attrs, attrs, sizeof attrs);
			w = snprintf(line, sizeof line, ") {%s}\n", attrs);
			flow__buf_put(&b, line, (size_t)w < sizeof line ? (size_t)w : sizeof line - 1);
		}
		flow__buf_put(&b, "", 1);
	}
	pthread_mutex_unlock(&s->mu);
	if (!pl || b.oom) {
		free(b.p);
		if (pl)
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "plan dump: out of memory");
		return NULL;
	}
	return (char *)b.p;
}

