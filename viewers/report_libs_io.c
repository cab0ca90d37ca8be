/* report_libs_io.c — the libraries loaded and the file I/O tables. */
#include "report_int.h"

typedef struct tab_ctx {
	pp_out *o;
	int rows;
} tab_ctx;

static int lib_row(const pp_library_row *r, void *ud)
{
	tab_ctx *a = ud;
	pp_out *o = a->o;
	if (a->rows++ == 0)
		P("<table class=\"t\"><tr><th>library</th><th class=\"r\">opened at</th><th class=\"r\">load time</th>"
		  "<th class=\"r\">relocation</th><th class=\"r\">constructors</th><th class=\"r\">size</th><th class=\"r\">depth</th><th>via</th></tr>\n");
	P("<tr><td class=\"m\">");
	E(r->path);
	P("</td><td class=\"r\">");
	html_dur(o, r->open_ns);
	P("</td><td class=\"r\">");
	html_dur(o, r->end_ns - r->open_ns);
	P("</td><td class=\"r\">");
	html_dur(o, r->reloc_ns);
	P("</td><td class=\"r\">");
	html_dur(o, r->ctor_ns);
	P("</td><td class=\"r\">");
	html_bytes(o, (double)r->size);
	pp_out_printf(o, "</td><td class=\"r\">%lld</td><td>", (long long)r->depth);
	E(r->via);
	P("</td></tr>\n");
	return 0;
}

static int io_row(const pp_io_row *r, void *ud)
{
	tab_ctx *a = ud;
	pp_out *o = a->o;
	if (a->rows++ == 0)
		P("<table class=\"t\"><tr><th>path</th><th>op</th><th class=\"r\">calls</th><th class=\"r\">bytes</th>"
		  "<th class=\"r\">time</th><th class=\"r\">small calls</th><th class=\"r\">bytes / call</th></tr>\n");
	P("<tr><td class=\"m\">");
	E(r->path);
	P("</td><td>");
	E(r->op);
	int64_t calls = r->calls;
	double bytes = r->bytes;
	pp_out_printf(o, "</td><td class=\"r\">%lld</td><td class=\"r\">", (long long)calls);
	html_bytes(o, bytes);
	P("</td><td class=\"r\">");
	html_dur(o, r->time_ns);
	pp_out_printf(o, "</td><td class=\"r\">%lld</td><td class=\"r\">", (long long)r->small_calls);
	if (calls > 0)
		html_bytes(o, bytes / (double)calls);
	P("</td></tr>\n");
	return 0;
}

void report_libs_io(pp_view_ctx *c, const pp_run_info *run)
{
	pp_out *o = c->out;
	int64_t n_all = 0, n_top = 0, top_ns = 0;
	if (pp_store_library_totals(c->st, run->id, &n_all, &n_top, &top_ns) == 0 && n_all > 0) {
		pp_out_printf(o, "<h2 id=\"libs-%lld\">Libraries loaded</h2>\n<p class=\"lead\">%d shared objects; "
			      "top-level loads took ", (long long)run->id, (int)n_all);
		html_dur(o, top_ns);
		P(" in total. The 40 slowest:</p>\n");
		tab_ctx t = {o, 0};
		pp_store_each_library(c->st, run->id, 40, lib_row, &t);
		if (t.rows)
			P("</table>\n");
	}
	int64_t io_rows = 0, io_ns = 0;
	if (pp_store_io_totals(c->st, run->id, &io_rows, &io_ns) == 0 && io_rows > 0) {
		pp_out_printf(o, "<h2 id=\"io-%lld\">File I/O</h2>\n<p class=\"lead\">", (long long)run->id);
		html_dur(o, io_ns);
		P(" in file I/O. The 40 costliest paths:</p>\n");
		tab_ctx t = {o, 0};
		pp_store_each_io(c->st, run->id, 40, io_row, &t);
		if (t.rows)
			P("</table>\n");
	}
}
