/* report_imports.c — the Python import tree of a run. */
#include "report_int.h"

#include <stdlib.h>

/* ---- Python import tree ----
 * The imports of a recorded Python program as a tree (nested as they
 * nested, library loads an import caused shown inside it), the costliest
 * first-come rows kept so that parents always come with their children. */
typedef struct imp_row {
	const pp_item *it;
	int depth;                /* imports around it */
	int64_t self;             /* less its direct child imports */
} imp_row;

static int cmp_i64_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x < y) - (x > y);
}

void report_imports(pp_view_ctx *c, const pp_model *m)
{
	pp_out *o = c->out;
	int cap = 0, n = 0;
	imp_row *rows = NULL;
	int64_t total = 0;
	for (int t = 0; t < m->n_tracks; t++) {
		const pp_track *tr = &m->tracks[t];
		if (tr->gpu)
			continue;
		int stack[256], sd = 0; /* open items: index into rows (-1: not a row) */
		int64_t stack_end[256];
		for (int i = 0; i < tr->n; i++) {
			const pp_item *it = &tr->items[i];
			if (it->cat != PP_CAT_SPAN)
				continue;
			while (sd && stack_end[sd - 1] <= it->start)
				sd--;
			int imp_depth = 0, parent = -1;
			for (int k = sd - 1; k >= 0; k--)
				if (stack[k] >= 0 && rows[stack[k]].it->kind == PP_IMPORT) {
					if (parent < 0)
						parent = stack[k];
					imp_depth++;
				}
			int row = -1;
			int lib_in_import = it->kind == PP_LIBRARY_LOAD && parent >= 0;
			if (it->kind == PP_IMPORT || lib_in_import) {
				if (PP_GROW(rows, n + 1, cap) != 0)
					break;
				int64_t d = it->end - it->start;
				rows[n] = (imp_row){it, imp_depth, d};
				if (it->kind == PP_IMPORT && parent >= 0)
					rows[parent].self -= d;
				if (it->kind == PP_IMPORT && imp_depth == 0)
					total += d;
				row = n++;
			}
			if (sd < 256) {
				stack[sd] = row;
				stack_end[sd++] = it->end;
			}
		}
	}
	if (n == 0) {
		free(rows);
		return;
	}
	/* keep the 60 costliest; containment keeps every kept row's parents */
	const int keep = 60;
	int64_t floor_ns = 0;
	if (n > keep) {
		int64_t *d = malloc((size_t)n * sizeof *d);
		if (d) {
			for (int i = 0; i < n; i++)
				d[i] = rows[i].it->end - rows[i].it->start;
			pp_sort(d, (size_t)n, sizeof *d, cmp_i64_desc);
			floor_ns = d[keep - 1];
			free(d);
		}
	}
	P("<h3>Python imports</h3>\n<p class=\"lead\">Every module the program imported, nested as the "
	  "imports nested, with the shared libraries an import loaded inside it. Self time leaves out "
	  "nested imports (as <code>python -X importtime</code>); top-level imports took ");
	html_dur(o, total);
	P(" in all.</p>\n<table class=\"t\"><tr><th>module</th><th class=\"r\">self</th>"
	  "<th class=\"r\">cumulative</th><th class=\"r\">starts at</th></tr>\n");
	int shown = 0;
	for (int i = 0; i < n; i++) {
		const pp_item *it = rows[i].it;
		int64_t d = it->end - it->start;
		if (d < floor_ns || shown >= keep)
			continue;
		shown++;
		pp_out_printf(o, "<tr><td style=\"padding-left:%dpx\">", 6 + 14 * (rows[i].depth < 30 ? rows[i].depth : 30));
		if (it->kind == PP_LIBRARY_LOAD)
			P("<span class=\"muted\">library </span>");
		E(m->names.s[it->name]);
		P("</td><td class=\"r\">");
		if (it->kind == PP_IMPORT)
			html_dur(o, rows[i].self);
		P("</td><td class=\"r\">");
		html_dur(o, d);
		P("</td><td class=\"r\">");
		html_dur(o, it->start);
		P("</td></tr>\n");
	}
	P("</table>\n");
	if (shown < n)
		pp_out_printf(o, "<p class=\"muted\">%d shorter imports and loads not shown "
				 "(<code>phaseprof stats</code> lists them by self time).</p>\n", n - shown);
	free(rows);
}
