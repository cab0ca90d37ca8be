/*
 * pp_rows.h — the one spec of the spool's row tables (C only).
 *
 * A row written with pp_row()/pp_rowv() carries its values in the order of
 * its table's columns. This header is that order, as code: every row table,
 * its columns (type letter and store column name) in order. From it come
 *   - typed emitters, pp_row_<id>(...), one per table: the compiler checks
 *     the number and types of the values (producers use these, not pp_row);
 *   - PP_ROW_FMT(id) / PP_ROW_NAMES(id): the format string and the column
 *     names, which ingest (store/store_ingest.c) takes from here;
 *   - the ctest profiler.test_rows, which checks every table and column
 *     against a fresh database made from store/schema.sql.
 *
 * Type letters are pp_row's: i = int64_t, d = double, s = const char *
 * interned (stored as a strings id), t = const char * stored as TEXT.
 * NULL: a NULL string is SQL NULL; an integer column takes PP_NULL.
 *
 * How ingest stores a table's rows (the third field of PP_ROW_TABLES):
 *   RUN        columns as named here, after a run_id ingest prepends;
 *   GRAPH      the graph parts: the first column is the spool-local graph
 *              id, which ingest maps to graphs.id (no run_id);
 *   OWN        ingest's own code reads the row (graphs: its local id is
 *              mapped; samples_raw: "ip,ip,..." symbolised into samples).
 * Changing a table here means changing store/schema.sql with it (and
 * PP_SCHEMA_VERSION); append columns, never reorder: old spools are
 * positional.
 */
#ifndef PP_ROWS_H
#define PP_ROWS_H

#include "phaseprof.h"

#include <stdint.h>

/* ---- the spec: PP_ROW_COLS_<id>(C) lists C(type, column) in order ---- */

#define PP_ROW_COLS_libraries(C)                                               \
	C(s, path_id) C(i, base) C(i, size) C(i, open_ns) C(i, mapped_ns)      \
	C(i, end_ns) C(i, reloc_ns) C(i, ctor_ns) C(i, depth) C(t, via)
#define PP_ROW_COLS_io(C)                                                      \
	C(i, tid) C(s, path_id) C(t, op) C(i, calls) C(i, bytes) C(i, time_ns) \
	C(i, small_calls)
#define PP_ROW_COLS_allocations(C)                                             \
	C(i, tid) C(i, ts_ns) C(s, source_id) C(t, kind) C(i, count)           \
	C(i, bytes) C(i, time_ns) C(i, in_use) C(i, peak) C(i, size_class)
#define PP_ROW_COLS_frames(C) C(i, id) C(i, ip) C(s, symbol_id) C(s, module_id)
#define PP_ROW_COLS_stacks(C) C(i, id) C(i, parent) C(i, frame)
#define PP_ROW_COLS_samples(C) C(i, tid) C(i, ts_ns) C(i, stack)
/* the agent's raw sample: stack is "ip,ip,..." (or "p<id>" Python frames) */
#define PP_ROW_COLS_samples_raw(C) C(i, tid) C(i, ts_ns) C(t, stack)
#define PP_ROW_COLS_gpu_activity(C)                                            \
	C(t, kind) C(i, start_ns) C(i, end_ns) C(i, device) C(i, context)      \
	C(i, stream) C(i, correlation_id) C(s, name_id) C(i, grid_x)           \
	C(i, grid_y) C(i, grid_z) C(i, block_x) C(i, block_y) C(i, block_z)    \
	C(i, bytes) C(t, copy_kind) C(t, src_kind) C(t, dst_kind)              \
	C(i, external_id) C(i, tid)
#define PP_ROW_COLS_gpu_status(C)                                              \
	C(i, available) C(t, reason) C(i, records_dropped) C(i, clock_offset_ns)
#define PP_ROW_COLS_losses(C) C(t, source) C(i, count) C(t, detail)
#define PP_ROW_COLS_run_meta(C) C(t, key) C(t, value)
#define PP_ROW_COLS_threads(C)                                                 \
	C(i, tid) C(t, name) C(i, first_ns) C(i, last_ns) C(i, events)
#define PP_ROW_COLS_counters(C) C(i, tid) C(s, name_id) C(i, ts_ns) C(d, value)
#define PP_ROW_COLS_marks(C) C(i, tid) C(s, name_id) C(i, ts_ns)
#define PP_ROW_COLS_comm(C)                                                    \
	C(i, tid) C(s, op_id) C(i, start_ns) C(i, end_ns) C(i, bytes)          \
	C(i, peer) C(i, comm_size)
#define PP_ROW_COLS_py_frames(C)                                               \
	C(i, id) C(s, symbol_id) C(s, module_id) C(s, qualname_id) C(i, line)
#define PP_ROW_COLS_step_kept(C)                                               \
	C(i, step) C(s, site_id) C(i, py_frame) C(i, bytes) C(i, blocks)       \
	C(i, new_bytes)
#define PP_ROW_COLS_graphs(C)                                                  \
	C(i, id) C(t, label) C(i, version) C(i, ts_ns) C(i, n_nodes) C(i, n_edges)
#define PP_ROW_COLS_graph_nodes(C)                                             \
	C(i, graph_id) C(i, idx) C(s, name_id) C(s, op_id) C(s, device_id)     \
	C(t, shape) C(d, cost_ns)
#define PP_ROW_COLS_graph_edges(C)                                             \
	C(i, graph_id) C(i, src) C(i, dst) C(i, src_output)

/* X(id, "table", how): every row table; the first entry of a table name
 * that is not samples_raw is the one ingest looks up. */
#define PP_ROW_TABLES(X)                                                       \
	X(libraries, "libraries", RUN)                                         \
	X(io, "io", RUN)                                                       \
	X(allocations, "allocations", RUN)                                     \
	X(frames, "frames", RUN)                                               \
	X(stacks, "stacks", RUN)                                               \
	X(samples, "samples", RUN)                                             \
	X(samples_raw, "samples", OWN)                                         \
	X(gpu_activity, "gpu_activity", RUN)                                   \
	X(gpu_status, "gpu_status", RUN)                                       \
	X(losses, "losses", RUN)                                               \
	X(run_meta, "run_meta", RUN)                                           \
	X(threads, "threads", RUN)                                             \
	X(counters, "counters", RUN)                                           \
	X(marks, "marks", RUN)                                                 \
	X(comm, "comm", RUN)                                                   \
	X(py_frames, "py_frames", RUN)                                         \
	X(step_kept, "step_kept", RUN)                                         \
	X(graphs, "graphs", OWN)                                               \
	X(graph_nodes, "graph_nodes", GRAPH)                                   \
	X(graph_edges, "graph_edges", GRAPH)

enum pp_row_how { PP_ROW_RUN, PP_ROW_GRAPH, PP_ROW_OWN };

/* ---- derived from the spec ---- */

#define PP__ROW_FMT(t, n) #t
#define PP__ROW_NAME(t, n) "," #n
/* "iist…": the table's format string; its length is the column count */
#define PP_ROW_FMT(id) PP_ROW_COLS_##id(PP__ROW_FMT)
/* ",tid,ts_ns,…": the column names, each after a comma */
#define PP_ROW_NAMES(id) PP_ROW_COLS_##id(PP__ROW_NAME)

/* An integer column's NULL (INT64_MIN is never a real value of one). */
#define PP_NULL INT64_MIN

static inline pp_cell pp__cell_i(int64_t v)
{
	pp_cell c = {.v.i = v, .null = v == PP_NULL};
	return c;
}
static inline pp_cell pp__cell_d(double v)
{
	pp_cell c = {.v.d = v};
	return c;
}
static inline pp_cell pp__cell_s(const char *v)
{
	pp_cell c = {.v.s = v, .null = !v};
	return c;
}
#define pp__cell_t pp__cell_s
#define pp__ctype_i int64_t
#define pp__ctype_d double
#define pp__ctype_s const char *
#define pp__ctype_t const char *

#define PP__ROW_PARAM(t, n) , pp__ctype_##t n
#define PP__ROW_CELL(t, n) pp__cell_##t(n),
/* drops the leading comma of ", a, b" (a table has at least one column) */
#define PP__TAIL(...) PP__TAIL_(__VA_ARGS__)
#define PP__TAIL_(x, ...) __VA_ARGS__

/* int pp_row_<id>(<the columns, typed>): one row into the table; 0 or -1. */
#define PP__ROW_EMITTER(id, table, how)                                        \
	static inline int pp_row_##id(PP__TAIL(PP_ROW_COLS_##id(PP__ROW_PARAM))) \
	{                                                                      \
		const pp_cell c[] = {PP_ROW_COLS_##id(PP__ROW_CELL)};          \
		return pp_rowv(table, PP_ROW_FMT(id), c);                      \
	}
PP_ROW_TABLES(PP__ROW_EMITTER)
#undef PP__ROW_EMITTER

#endif
