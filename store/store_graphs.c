/* store_graphs.c — reads of graph snapshots: the list, one snapshot's
 * nodes and edges, the op types they use. */
#include "store.h"
#include "store_internal.h"
#include "pp_grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRAPH_COLS "id, run_id, version, n_nodes, n_edges, ts_ns, label"

static void graph_read(sqlite3_stmt *s, void *e)
{
	pp_graph_info *g = e;
	g->id = sqlite3_column_int64(s, 0);
	g->run_id = sqlite3_column_int64(s, 1);
	g->version = sqlite3_column_int64(s, 2);
	g->n_nodes = sqlite3_column_int64(s, 3);
	g->n_edges = sqlite3_column_int64(s, 4);
	g->ts_ns = sqlite3_column_int64(s, 5);
	const char *l = store_text(s, 6);
	snprintf(g->label, sizeof g->label, "%s", l ? l : "");
}

int pp_store_graphs(pp_store *st, int64_t run_id, int order, pp_graph_info **out, int *n)
{
	return store_rows(st,
			  order ? "SELECT " GRAPH_COLS " FROM graphs WHERE run_id = ?1 "
				  "ORDER BY COALESCE(label, ''), ts_ns, version"
				: "SELECT " GRAPH_COLS " FROM graphs WHERE run_id = ?1 ORDER BY version, id",
			  run_id, 0, NULL, sizeof **out, graph_read, out, n);
}

int pp_store_graph(pp_store *st, int64_t graph_id, pp_graph_info *out)
{
	pp_graph_info *v;
	int n;
	if (store_rows(st, "SELECT " GRAPH_COLS " FROM graphs WHERE id = ?1", graph_id, 0, NULL, sizeof *v,
		       graph_read, &v, &n) != 0)
		return -1;
	if (n)
		*out = v[0];
	free(v);
	return n ? 0 : 1;
}

static int id_row(sqlite3_stmt *s, void *ud)
{
	*(int64_t *)ud = sqlite3_column_int64(s, 0);
	return 1;
}

int pp_store_last_graph(pp_store *st, int64_t run_id, int64_t *graph_id)
{
	*graph_id = 0;
	if (run_id)
		return store_each(st, "SELECT id FROM graphs WHERE run_id = ?1 ORDER BY version DESC, id DESC LIMIT 1",
				  run_id, 0, NULL, id_row, graph_id);
	return store_each(st, "SELECT id FROM graphs ORDER BY id DESC LIMIT 1", 0, 0, NULL, id_row, graph_id);
}

typedef struct cb_ctx { void *cb, *ud; } cb_ctx;

static int node_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	pp_graph_node_row r = {sqlite3_column_int64(s, 0), store_text(s, 1), store_text(s, 2),
			       store_text(s, 3), store_text(s, 4), sqlite3_column_int64(s, 5)};
	return ((int (*)(const pp_graph_node_row *, void *))c->cb)(&r, c->ud);
}

int pp_store_each_graph_node(pp_store *st, int64_t graph_id, int (*cb)(const pp_graph_node_row *, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud};
	return store_each(st, "SELECT gn.name_id, n.value, o.value, d.value, gn.shape, gn.cost_ns"
			      " FROM graph_nodes gn LEFT JOIN strings n ON n.id = gn.name_id"
			      " LEFT JOIN strings o ON o.id = gn.op_id LEFT JOIN strings d ON d.id = gn.device_id"
			      " WHERE gn.graph_id = ?1 ORDER BY gn.idx",
			  graph_id, 0, NULL, node_row, &c);
}

static int edge_row(sqlite3_stmt *s, void *ud)
{
	cb_ctx *c = ud;
	return ((int (*)(int64_t, int64_t, void *))c->cb)(sqlite3_column_int64(s, 0),
							   sqlite3_column_int64(s, 1), c->ud);
}

int pp_store_each_graph_edge(pp_store *st, int64_t graph_id, int (*cb)(int64_t src, int64_t dst, void *), void *ud)
{
	cb_ctx c = {(void *)cb, ud};
	return store_each(st, "SELECT src, dst FROM graph_edges WHERE graph_id = ?1", graph_id, 0, NULL,
			  edge_row, &c);
}

int pp_store_graph_op_types(pp_store *st, int64_t run_id, int64_t *n)
{
	*n = 0;
	return store_each(st, "SELECT COUNT(DISTINCT n.op_id) FROM graph_nodes n JOIN graphs g "
			      "ON g.id = n.graph_id WHERE g.run_id = ?1",
			  run_id, 0, NULL, id_row, n);
}
