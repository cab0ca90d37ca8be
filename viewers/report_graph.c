/* report_graph.c — graph snapshots through Graphviz, inlined as SVG. */
#include "report_int.h"

#include <stdlib.h>
#include <string.h>

typedef pp_graph_info gsnap;

typedef struct gsnaps {
	gsnap *v;
	int n;
} gsnaps;

/* Inline SVG in HTML: drop the XML prolog/doctype and the namespace URLs
 * (the HTML parser puts <svg> in the SVG namespace by itself), so the page
 * carries no http:// reference at all. */
static void inline_svg(pp_out *o, const char *svg)
{
	const char *p = strstr(svg, "<svg");
	if (!p)
		return;
	static const char *const drop[] = {" xmlns=\"http://www.w3.org/2000/svg\"",
					   " xmlns:xlink=\"http://www.w3.org/1999/xlink\"", NULL};
	while (*p) {
		const char *next = NULL;
		int which = -1;
		for (int k = 0; drop[k]; k++) {
			const char *q = strstr(p, drop[k]);
			if (q && (!next || q < next)) {
				next = q;
				which = k;
			}
		}
		if (!next) {
			P(p);
			break;
		}
		pp_out_write(o, p, (size_t)(next - p));
		p = next + strlen(drop[which]);
	}
}

static void render_snapshot(pp_view_ctx *c, const gsnap *g, const char *heading, const pp_op_stat *ops, int n_ops)
{
	pp_out *o = c->out;
	pp_out *mem = pp_out_memory();
	pp_graph_render_info info;
	char err[256];
	P("<div class=\"graphbox\"><div class=\"gt\">");
	E(heading);
	pp_out_printf(o, " <span class=\"muted\">v%lld", (long long)g->version);
	if (g->label[0]) {
		P(" · ");
		E(g->label);
	}
	pp_out_printf(o, " · %lld nodes, %lld edges</span></div>", (long long)g->n_nodes, (long long)g->n_edges);
	if (mem && pp_graph_render_ops(c->st, g->id, "svg", c->opts->max_graph_nodes, mem, &info, err, sizeof err,
					    ops, n_ops) == 0) {
		if (info.note[0]) {
			P("<div class=\"note\">");
			E(info.note);
			P(".</div>");
		}
		inline_svg(o, pp_out_data(mem, NULL));
	} else {
		P("<div class=\"note\">");
		E(mem ? err : "out of memory");
		P("</div>");
	}
	pp_out_close(mem, NULL, 0);
	P("</div>\n");
}

void report_graph(pp_view_ctx *c, const pp_run_info *run, const pp_op_stat *ops, int n_ops)
{
	pp_out *o = c->out;
	gsnaps g = {0};
	if (pp_store_graphs(c->st, run->id, 0, &g.v, &g.n) != 0)
		g.n = 0;
	if (g.n == 0) {
		free(g.v);
		return;
	}
	pp_out_printf(o, "<h2 id=\"graph-%lld\">Graph</h2>\n", (long long)run->id);
	const gsnap *first = &g.v[0], *last = &g.v[g.n - 1];
	if (g.n > 1 && last->n_nodes != first->n_nodes) {
		pp_out_printf(o, "<p class=\"lead\">The graph %s between snapshots: %lld nodes in v%lld → %lld nodes in v%lld "
			      "(%+lld over %d snapshots). Node colour: measured time (pale = cheap, red = expensive).</p>\n",
			      last->n_nodes > first->n_nodes ? "grew" : "shrank", (long long)first->n_nodes,
			      (long long)first->version, (long long)last->n_nodes, (long long)last->version,
			      (long long)(last->n_nodes - first->n_nodes), g.n);
		if (g.n > 2) {
			/* node count per snapshot */
			int64_t mx = 1;
			for (int i = 0; i < g.n; i++)
				if (g.v[i].n_nodes > mx)
					mx = g.v[i].n_nodes;
			P("<div class=\"chart\" style=\"max-width:700px\"><div class=\"cap\">nodes per snapshot</div>"
			  "<svg class=\"gcount\" viewBox=\"0 0 700 110\"><polyline fill=\"none\" stroke=\"#8e6fd8\" stroke-width=\"2\" points=\"");
			for (int i = 0; i < g.n; i++)
				pp_out_printf(o, "%.1f,%.1f ", 40 + 650.0 * i / (g.n - 1), 96 - 84.0 * (double)g.v[i].n_nodes / (double)mx);
			pp_out_printf(o, "\"/><text x=\"36\" y=\"16\" font-size=\"10\" text-anchor=\"end\" fill=\"#5f6b7d\">%lld</text>"
				      "<text x=\"36\" y=\"98\" font-size=\"10\" text-anchor=\"end\" fill=\"#5f6b7d\">0</text></svg></div>\n",
				      (long long)mx);
		}
		P("<div class=\"graphs\">");
		render_snapshot(c, first, "first snapshot", ops, n_ops);
		render_snapshot(c, last, "last snapshot", ops, n_ops);
		P("</div>\n");
	} else {
		P("<p class=\"lead\">Node colour: measured time (pale = cheap, red = expensive).</p>\n<div class=\"graphs\">");
		render_snapshot(c, last, g.n > 1 ? "last snapshot (unchanged size)" : "snapshot", ops, n_ops);
		P("</div>\n");
	}
	free(g.v);
}
