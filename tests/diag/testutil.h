/* testutil.h — hand-built recordings for the diagnostics tests: rows go
 * straight into a temporary database made by pp_store_open, so every time
 * and count is exact. */
#ifndef PP_DIAG_TESTUTIL_H
#define PP_DIAG_TESTUTIL_H

#include <stdint.h>

#include "phaseprof.h"
#include "store.h"

#define MS 1000000LL
#define US 1000LL

typedef struct trec {
	pp_store *st;
	int64_t run;
	char path[512];
} trec;

/* A fresh database in a private temp folder (removed at exit). */
void trec_open(trec *t, const char *name);
void trec_close(trec *t);
/* A new run; the following rows go to it. */
int64_t trec_run(trec *t, const char *label, int64_t duration_ns);
/* A closed span (end < 0: left open); parent 0 = top level; returns its id. */
int64_t trec_span(trec *t, int kind, const char *name, int64_t start, int64_t end,
		  int64_t parent, int64_t step);
void trec_counter(trec *t, const char *name, int64_t ts, double value);
void trec_mark(trec *t, const char *name, int64_t ts);
int64_t trec_graph(trec *t, const char *label, int64_t version, int64_t ts, int64_t n_nodes);
void trec_graph_node(trec *t, int64_t graph_id, int idx, const char *name, const char *op);
void trec_io(trec *t, const char *path, const char *op, int64_t calls, int64_t bytes,
	     int64_t time_ns, int64_t small_calls);
void trec_lib(trec *t, const char *path, int64_t open_ns, int64_t end_ns, int64_t size,
	      int64_t ctor_ns);
void trec_gpu(trec *t, const char *kind, int64_t start, int64_t end, int device, int64_t corr,
	      const char *name, int64_t bytes, const char *copy_kind, const char *src_kind,
	      const char *dst_kind);
void trec_exec(trec *t, const char *sql);

/* A step loop from t0: step i lasts dur[i]; gap between steps. Step span ids
 * and starts go to ids/starts (may be NULL). Returns the end time. */
int64_t trec_steps(trec *t, int64_t t0, const int64_t *dur, int n, int64_t gap, int64_t *ids,
		   int64_t *starts);

/* Deterministic noise. */
double trand_uniform(uint64_t *s);
double trand_normal(uint64_t *s);

const char *ttmpdir(void);

#endif
