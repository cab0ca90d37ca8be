/* store_gpu.c — reads of GPU activity and of the GPU tracing status. */
#include "store.h"
#include "store_internal.h"

typedef struct cb_ctx { void *cb, *ud; } cb_ctx;

static int gpu_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	pp_gpu_row r = {.kind = store_text(s, 0), .name = store_text(s, 6), .copy_kind = store_text(s, 9),
			.src_kind = store_text(s, 10), .dst_kind = store_text(s, 11),
			.start_ns = sqlite3_column_int64(s, 1), .end_ns = sqlite3_column_int64(s, 2),
			.device = sqlite3_column_int64(s, 3), .stream = sqlite3_column_int64(s, 4),
			.correlation_id = store_i64_or(s, 5, -1), .bytes = sqlite3_column_int64(s, 7),
			.tid = sqlite3_column_int64(s, 8)};
	return ((int (*)(const pp_gpu_row *, void *))c->cb)(&r, c->ud);
}

int pp_store_each_gpu(pp_store *st, int64_t run_id, int device_only, int (*cb)(const pp_gpu_row *, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud};
	return store_each(st,
			  device_only
				  ? "SELECT g.kind, g.start_ns, g.end_ns, COALESCE(g.device,0), COALESCE(g.stream,0),"
				    " COALESCE(g.correlation_id,0), n.value, COALESCE(g.bytes,0), COALESCE(g.tid,0),"
				    " g.copy_kind, g.src_kind, g.dst_kind FROM gpu_activity g"
				    " LEFT JOIN strings n ON n.id = g.name_id WHERE g.run_id = ?1 AND g.end_ns >= g.start_ns"
				    " AND g.kind IN ('kernel','memcpy','memset','runtime','driver') ORDER BY g.start_ns"
				  : "SELECT g.kind, g.start_ns, g.end_ns, g.device, g.stream, g.correlation_id,"
				    " n.value, g.bytes, g.tid, g.copy_kind, g.src_kind, g.dst_kind FROM gpu_activity g"
				    " LEFT JOIN strings n ON n.id = g.name_id WHERE g.run_id = ?1",
			  run_id, 0, NULL, gpu_row, &c);
}

static int status_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	pp_gpu_status r = {sqlite3_column_int(s, 0), store_text(s, 1), sqlite3_column_int64(s, 2)};
	return ((int (*)(const pp_gpu_status *, void *))c->cb)(&r, c->ud);
}

int pp_store_each_gpu_status(pp_store *st, int64_t run_id, int (*cb)(const pp_gpu_status *, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud};
	return store_each(st, "SELECT available, reason, records_dropped FROM gpu_status WHERE run_id = ?1",
			  run_id, 0, NULL, status_row, &c);
}
