/* fixture.h — recordings for the viewer tests and benchmarks: a program
 * that records through the public recorder API (phases, steps, ops,
 * counters, marks, graph snapshots, side-table rows), ingested into a
 * database with pp_store_ingest. */
#ifndef VFIX_H
#define VFIX_H

#include <stdint.h>

typedef struct vfix_opts {
	const char *scenario, *variant, *label;
	int steps;                /* step phases (first one = step 0) */
	int ops_per_step;         /* op executions per step */
	int graph_versions;       /* graph snapshots; node count grows by 3 each */
	int graph_nodes;          /* nodes in the first snapshot */
	int gpu;                  /* 1: gpu_activity rows + gpu_status available */
	int samples;              /* CPU samples (frames/stacks/samples) */
	int threads;              /* extra worker threads with their own spans */
	uint32_t buffer_events;   /* recorder buffer size (0 = default) */
	uint32_t max_buffers;
} vfix_opts;

/* Op durations the fixture records with pp_op (exact, for assertions). */
#define VFIX_MATMUL_FIRST_NS 50000
#define VFIX_MATMUL_STEADY_NS 2000
#define VFIX_RELU_NS 700

/* Records one run per call into db (created if missing), using spool_dir for
 * the spool. Returns the run id, or -1 with a message on stderr. */
int64_t vfix_record(const char *db, const char *spool_dir, const vfix_opts *o);
/* A scratch directory under $TMPDIR; free with vfix_rmdir. */
char *vfix_tmpdir(void);
void vfix_rmdir(char *dir);
/* Whole file into a malloc'd NUL-terminated buffer (NULL on error). */
char *vfix_slurp(const char *path, long *len);

#endif
