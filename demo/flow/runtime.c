/*
 * runtime.c — flow_init / flow_shutdown and the process defaults (registry
 * mode, default allocator, intra-op pool).
 */
#include "core.h"
#include "phaseprof.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int flow__op_timing_default;
const char *flow__plan_dir_default;
static char *plan_dir_copy;

static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static int inited;
static flow_allocator *default_alloc;
static flow_threadpool *default_pool;

int flow_init(const flow_init_options *opts, flow_status *st)
{
	flow_init_options o = {0};
	if (opts)
		o = *opts;
	const char *e = getenv("FLOW_REGISTRATION");
	if (e && !strcmp(e, "lite"))
		o.registration = FLOW_REGISTER_LITE;
	else if (e && !strcmp(e, "full"))
		o.registration = FLOW_REGISTER_FULL;
	e = getenv("FLOW_OP_TIMING");
	if (e && *e)
		o.op_timing = atoi(e) > 0;
	e = getenv("FLOW_PLAN_CACHE");
	if (e && *e && !o.plan_cache_dir)
		o.plan_cache_dir = e;
	pthread_mutex_lock(&init_mu);
	if (inited) {
		pthread_mutex_unlock(&init_mu);
		/* Already up: a FULL request completes a LITE registry. */
		if (opts && o.registration == FLOW_REGISTER_FULL && flow__registry_mode() != FLOW_REGISTER_FULL)
			return flow__registry_complete(st);
		return 0;
	}
	PP_PHASE(PP_RUNTIME_INIT, "runtime_init");
	inited = 1; /* set first: registration below may call back into flow__ensure_init */
	flow_allocator_options ao = {.kind = o.allocator, .reserve = o.arena_reserve,
				     .name = o.allocator == FLOW_ALLOC_MALLOC ? "malloc" : "bfc"};
	default_alloc = flow_allocator_new(&ao, st);
	default_pool = flow__pool_new(o.threads > 0 ? o.threads : flow_threads_default());
	flow__op_timing_default = o.op_timing;
	free(plan_dir_copy);
	plan_dir_copy = o.plan_cache_dir ? strdup(o.plan_cache_dir) : NULL;
	flow__plan_dir_default = plan_dir_copy;
	pthread_mutex_unlock(&init_mu);
	int rc = default_alloc && default_pool ? 0 : -1;
	if (rc)
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "flow_init: cannot create the allocator or pool");
	if (!rc)
		rc = flow__registry_init(o.registration, st);
	if (!rc) {
		pp_counter("flow.threads", flow_threadpool_size(default_pool));
		pp_meta("flow.registration", o.registration == FLOW_REGISTER_LITE ? "lite" : "full");
	}
	return rc;
}

void flow__ensure_init(void)
{
	if (!__atomic_load_n(&inited, __ATOMIC_ACQUIRE)) {
		flow_status st = {0};
		if (flow_init(NULL, &st))
			fprintf(stderr, "flow: initialisation failed: %s\n", st.msg);
	}
}

void flow_shutdown(void)
{
	pthread_mutex_lock(&init_mu);
	if (!inited) {
		pthread_mutex_unlock(&init_mu);
		return;
	}
	inited = 0;
	pthread_mutex_unlock(&init_mu);
	flow_reset_default_graph();
	flow__registry_free();
	flow__pool_free(default_pool);
	default_pool = NULL;
	/* Tensors still alive point into the default allocator: keep it (a
	 * deliberate leak) so their later unref stays valid. */
	flow_allocator_stats as;
	flow_allocator_stats_get(default_alloc, &as);
	if (as.live_allocs == 0)
		flow_allocator_free(default_alloc);
	default_alloc = NULL;
	free(plan_dir_copy);
	plan_dir_copy = NULL;
	flow__plan_dir_default = NULL;
	flow__op_timing_default = 0;
}

flow_allocator *flow_default_allocator(void)
{
	flow__ensure_init();
	return default_alloc;
}

flow_threadpool *flow_default_pool(void)
{
	flow__ensure_init();
	return default_pool;
}
