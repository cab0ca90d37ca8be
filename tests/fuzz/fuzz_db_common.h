/* fuzz_db_common.h — what the database fuzz target and its corpus replay do
 * with one file: open it read-only and call every read function of the
 * store on its runs. A refusal must be one line naming the file; a read
 * may fail (damaged pages) but never crash, hang or leak. */
#ifndef FUZZ_DB_COMMON_H
#define FUZZ_DB_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

static int fz_stop_after(void *ud)
{
	return ++*(int *)ud > 100000; /* bounds a scan of a mutated file */
}
static int fz_kv(const pp_kv_row *r, void *ud) { (void)r; return fz_stop_after(ud); }
static int fz_loss(const pp_loss_row *r, void *ud) { (void)r; return fz_stop_after(ud); }
static int fz_mark(const pp_mark_row *r, void *ud) { (void)r; return fz_stop_after(ud); }
static int fz_counter(const pp_counter_sample *r, void *ud) { (void)r; return fz_stop_after(ud); }
static int fz_op(const pp_op_row *r, void *ud) { (void)r; return fz_stop_after(ud); }
static int fz_node(const pp_graph_node_row *r, void *ud) { (void)r; return fz_stop_after(ud); }
static int fz_edge(int64_t a, int64_t b, void *ud) { (void)a; (void)b; return fz_stop_after(ud); }
static int fz_stack(const pp_stack_row *r, void *ud) { (void)r; return fz_stop_after(ud); }
static int fz_count(int64_t a, int64_t b, void *ud) { (void)a; (void)b; return fz_stop_after(ud); }
static int fz_gpu(const pp_gpu_row *r, void *ud) { (void)r; return fz_stop_after(ud); }
static int fz_gst(const pp_gpu_status *r, void *ud) { (void)r; return fz_stop_after(ud); }
static int fz_lib(const pp_library_row *r, void *ud) { (void)r; return fz_stop_after(ud); }
static int fz_io(const pp_io_row *r, void *ud) { (void)r; return fz_stop_after(ud); }
static int fz_alloc(const pp_alloc_source *r, void *ud) { (void)r; return fz_stop_after(ud); }

/* Reads of one run; returns the number of calls that reported an error. */
static int fz_read_run(pp_store *st, int64_t id)
{
	int bad = 0, k = 0;
	pp_run_info ri;
	bad += pp_store_run(st, id, &ri) != 0;
	pp_span_list l;
	if (pp_store_spans(st, id, -1, &l) == 0)
		pp_span_list_free(&l);
	else
		bad++;
	void *p = NULL;
	int n = 0;
	bad += pp_store_steps(st, id, (pp_step_row **)&p, &n) != 0;
	free(p);
	bad += pp_store_phase_totals(st, id, (pp_phase_total **)&p, &n) != 0;
	free(p);
	char **names = pp_store_counter_names(st, id);
	bad += names == NULL;
	for (int i = 0; names && names[i] && i < 4; i++) {
		bad += pp_store_counter(st, id, names[i], (pp_counter_row **)&p, &n) != 0;
		free(p);
	}
	pp_store_free_names(names);
	bad += pp_store_findings(st, id, (pp_finding **)&p, &n) != 0;
	free(p);
	char buf[64];
	bad += pp_store_run_meta(st, id, "model", buf, sizeof buf) < 0;
	bad += pp_store_each_run_meta(st, id, fz_kv, &k) != 0;
	bad += pp_store_each_loss(st, id, fz_loss, &k) != 0;
	bad += pp_store_threads(st, id, (pp_thread_row **)&p, &n) != 0;
	free(p);
	bad += pp_store_each_mark(st, id, 0, fz_mark, &k) != 0;
	bad += pp_store_each_counter(st, id, fz_counter, &k) != 0;
	int64_t a = 0, b = 0, c = 0;
	bad += pp_store_span_name_total(st, id, "step", &a, &b) != 0;
	bad += pp_store_kind_first_step_total(st, id, 9, 13, &a, &b) != 0;
	bad += pp_store_ops(st, id, 10, (pp_op_stat **)&p, &n) != 0;
	free(p);
	bad += pp_store_each_op(st, id, fz_op, &k) != 0;
	bad += pp_store_op_times(st, id, (pp_op_time **)&p, &n) != 0;
	free(p);
	pp_graph_info *g = NULL;
	if (pp_store_graphs(st, id, 0, &g, &n) == 0) {
		for (int i = 0; i < n && i < 3; i++) {
			pp_graph_info one;
			bad += pp_store_graph(st, g[i].id, &one) < 0;
			bad += pp_store_each_graph_node(st, g[i].id, fz_node, &k) != 0;
			bad += pp_store_each_graph_edge(st, g[i].id, fz_edge, &k) != 0;
		}
		free(g);
	} else {
		bad++;
	}
	bad += pp_store_graphs(st, id, 1, &g, &n) != 0;
	free(g);
	bad += pp_store_last_graph(st, id, &a) != 0;
	bad += pp_store_graph_op_types(st, id, &a) != 0;
	bad += pp_store_each_stack(st, id, fz_stack, &k) != 0;
	bad += pp_store_each_sample_count(st, id, fz_count, &k) != 0;
	int has;
	bad += pp_store_has_samples(st, id, &has) != 0;
	bad += pp_store_each_gpu(st, id, 0, fz_gpu, &k) != 0;
	bad += pp_store_each_gpu(st, id, 1, fz_gpu, &k) != 0;
	bad += pp_store_each_gpu_status(st, id, fz_gst, &k) != 0;
	bad += pp_store_each_library(st, id, 40, fz_lib, &k) != 0;
	bad += pp_store_library_totals(st, id, &a, &b, &c) != 0;
	bad += pp_store_each_io(st, id, 40, fz_io, &k) != 0;
	bad += pp_store_io_totals(st, id, &a, &b) != 0;
	bad += pp_store_io_op_totals(st, id, "read", &a, &b, &c) != 0;
	bad += pp_store_alloc_in_use(st, id, (pp_counter_row **)&p, &n) != 0;
	free(p);
	bad += pp_store_each_alloc_source(st, id, fz_alloc, &k) != 0;
	return bad;
}

/* 1: opened and read without error; 0: refused at open (err set);
 * -1: opened but some read reported an error (damaged pages). */
static int fz_read_db(const char *path, char *err, size_t errlen)
{
	err[0] = 0;
	/* record's check before an append: the header alone, any bytes */
	if (pp_store_header_current(path) > 1)
		abort();
	pp_store *st = pp_store_open(path, PP_STORE_READ, err, errlen);
	if (!st) {
		if (!err[0] || strchr(err, '\n') || !strstr(err, path))
			abort(); /* a refusal is one line naming the file */
		return 0;
	}
	int bad = 0;
	pp_run_info *runs = NULL;
	int n = 0;
	if (pp_store_runs(st, &runs, &n) == 0) {
		for (int i = 0; i < n && i < 4; i++)
			bad += fz_read_run(st, runs[i].id);
		free(runs);
	} else {
		bad++;
	}
	const char *const *names;
	int64_t *counts;
	if (pp_store_table_rows(st, &names, &counts) == 0)
		free(counts);
	else
		bad++;
	if (bad && !pp_store_error(st)[0])
		abort();
	pp_store_close(st, NULL, 0);
	return bad ? -1 : 1;
}

#endif
