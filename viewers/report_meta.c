/* report_meta.c — run metadata: the run's record, GPU tracing status,
 * run_meta pairs, losses. */
#include "report_int.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct tab_ctx {
	pp_out *o;
	int rows;
} tab_ctx;

static int kv_row(const pp_kv_row *r, void *ud)
{
	pp_out *o = ud;
	static const char *const shown[] = {"command", "host", "label", "scenario", "variant", NULL};
	for (int i = 0; r->key && shown[i]; i++)
		if (strcmp(r->key, shown[i]) == 0)
			return 0; /* already in the run's header */
	P("<dt>");
	E(r->key);
	P("</dt><dd>");
	E(r->value);
	P("</dd>");
	return 0;
}

static int loss_row(const pp_loss_row *r, void *ud)
{
	tab_ctx *a = ud;
	pp_out *o = a->o;
	if (a->rows++ == 0)
		P("<table class=\"t\"><tr><th>lost from</th><th class=\"r\">count</th><th>detail</th></tr>\n");
	P("<tr><td>");
	E(r->source);
	pp_out_printf(o, "</td><td class=\"r\">%lld</td><td>", (long long)r->count);
	E(r->detail);
	P("</td></tr>\n");
	return 0;
}

static int gpu_status_row(const pp_gpu_status *r, void *ud)
{
	tab_ctx *a = ud;
	pp_out *o = a->o;
	a->rows++;
	int avail = r->available;
	pp_out_printf(o, "<dt>GPU tracing</dt><dd>%s", avail ? "available" : "unavailable");
	const char *why = r->reason;
	if (why && *why) {
		P(avail ? " — " : ": ");
		E(why);
	}
	if (r->records_dropped)
		pp_out_printf(o, " (%lld records dropped)", (long long)r->records_dropped);
	P("</dd>");
	return 0;
}

void report_meta(pp_view_ctx *c, const pp_run_info *run)
{
	pp_out *o = c->out;
	char b[64];
	pp_out_printf(o, "<h2 id=\"meta-%lld\">Run metadata</h2>\n<dl class=\"kv\">", (long long)run->id);
	snprintf(b, sizeof b, "%lld", (long long)run->id);
	html_kv(o, "run", b);
	html_kv(o, "label", run->label);
	html_kv(o, "scenario", run->scenario);
	html_kv(o, "variant", run->variant);
	html_kv(o, "command", run->command);
	html_kv(o, "host", run->host);
	snprintf(b, sizeof b, "%lld (parent %lld)", (long long)run->pid, (long long)run->ppid);
	html_kv(o, "pid", b);
	if (run->start_unix_ns > 0) {
		time_t sec = (time_t)(run->start_unix_ns / 1000000000);
		struct tm tmv;
		strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&sec, &tmv));
		html_kv(o, "started", b);
	}
	html_kv(o, "duration", pp_fmt_dur(b, sizeof b, (double)run->duration_ns));
	html_kv(o, "status", run->status);
	if (run->exit_code >= 0 || run->term_signal) {
		snprintf(b, sizeof b, "exit code %d%s", run->exit_code, run->term_signal ? ", killed by a signal" : "");
		if (run->term_signal)
			snprintf(b, sizeof b, "signal %d", run->term_signal);
		html_kv(o, "exit", b);
	}
	html_kv(o, "clock", run->clock);
	snprintf(b, sizeof b, "%lld", (long long)run->events);
	html_kv(o, "events", b);
	snprintf(b, sizeof b, "%lld events, %lld rows", (long long)run->events_lost, (long long)run->rows_lost);
	html_kv(o, "lost", b);
	if (run->parent_run) {
		snprintf(b, sizeof b, "%lld", (long long)run->parent_run);
		html_kv(o, "parent run", b);
	}
	html_kv(o, "ingest note", run->note);
	tab_ctx g = {o, 0};
	pp_store_each_gpu_status(c->st, run->id, gpu_status_row, &g);
	if (!g.rows)
		P("<dt>GPU tracing</dt><dd>not attempted (no GPU status recorded)</dd>");
	pp_store_each_run_meta(c->st, run->id, kv_row, o);
	P("</dl>\n");
	tab_ctx l = {o, 0};
	pp_store_each_loss(c->st, run->id, loss_row, &l);
	if (l.rows)
		P("</table>\n");
}
