/* stats.c — `phaseprof stats`: aligned terminal tables that fit the width
 * (80 columns by default), or one JSON document for scripts. */
#include "view_int.h"
#include "diagnostics.h"
#include "diag_steps.h"

#include <stdlib.h>
#include <string.h>

/* ---- a tiny table printer: one flexible column absorbs the width ---- */
#define TBL_MAXC 8
typedef struct tbl {
	int nc;
	const char *head[TBL_MAXC];
	int right[TBL_MAXC];
	int flex;                 /* column that shrinks to fit */
	char **cells;             /* rows * nc */
	int nr, cap;              /* cap: cells */
} tbl;

static void tbl_add(tbl *t, ...)
{
	if (PP_GROW(t->cells, (t->nr + 1) * t->nc, t->cap) != 0)
		return;
	va_list ap;
	va_start(ap, t);
	for (int c = 0; c < t->nc; c++) {
		const char *s = va_arg(ap, const char *);
		t->cells[t->nr * t->nc + c] = strdup(s ? s : "");
	}
	va_end(ap);
	t->nr++;
}

/* Display width of UTF-8 text (counts code points, enough for our tables). */
static int u8len(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void put_cell(FILE *fp, const char *s, int w, int right)
{
	int len = u8len(s);
	if (len > w) {
		/* cut on a code point boundary, mark with '~' */
		int keep = w > 1 ? w - 1 : 0, n = 0;
		const char *p = s;
		while (*p && n < keep) {
			p++;
			while (((unsigned char)*p & 0xc0) == 0x80)
				p++;
			n++;
		}
		fwrite(s, 1, (size_t)(p - s), fp);
		if (w > 0)
			fputc('~', fp);
		return;
	}
	if (right)
		fprintf(fp, "%*s%s", w - len, "", s);
	else
		fprintf(fp, "%s%*s", s, w - len, "");
}

static void tbl_print(tbl *t, FILE *fp, int width, int indent)
{
	int w[TBL_MAXC];
	for (int c = 0; c < t->nc; c++) {
		w[c] = u8len(t->head[c]);
		for (int r = 0; r < t->nr; r++) {
			int l = u8len(t->cells[r * t->nc + c]);
			if (l > w[c])
				w[c] = l;
		}
	}
	int total = indent;
	for (int c = 0; c < t->nc; c++)
		total += w[c] + (c ? 2 : 0);
	if (total > width) {
		int cut = total - width;
		int minw = u8len(t->head[t->flex]) > 6 ? u8len(t->head[t->flex]) : 6;
		w[t->flex] = w[t->flex] - cut > minw ? w[t->flex] - cut : minw;
	}
	for (int row = -1; row < t->nr; row++) {
		fprintf(fp, "%*s", indent, "");
		for (int c = 0; c < t->nc; c++) {
			if (c)
				fputs("  ", fp);
			const char *s = row < 0 ? t->head[c] : t->cells[row * t->nc + c];
			/* the last left-aligned column needs no padding */
			if (c == t->nc - 1 && !t->right[c] && row >= 0 && u8len(s) <= w[c])
				fputs(s, fp);
			else
				put_cell(fp, s, w[c], t->right[c]);
		}
		fputc('\n', fp);
		if (row < 0) {
			fprintf(fp, "%*s", indent, "");
			int lw = 0;
			for (int c = 0; c < t->nc; c++)
				lw += w[c] + (c ? 2 : 0);
			for (int i = 0; i < lw; i++)
				fputc('-', fp);
			fputc('\n', fp);
		}
	}
	for (int i = 0; i < t->nr * t->nc; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nr = t->cap = 0;
}

/* Wraps text at `width`: the first line indented by `first`, the rest by
 * `indent` (a hanging indent under a "[high] " tag). */
static void wrap_hang(FILE *fp, const char *s, int first, int indent, int width)
{
	int line = 0;
	while (*s) {
		int ind = line++ ? indent : first;
		int avail = width - ind > 20 ? width - ind : 20;
		int n = (int)strlen(s);
		int take = n;
		if (u8len(s) > avail) {
			take = 0;
			int cols = 0, last_space = -1;
			while (s[take] && cols < avail) {
				if (s[take] == ' ')
					last_space = take;
				take++;
				while (((unsigned char)s[take] & 0xc0) == 0x80)
					take++;
				cols++;
			}
			if (last_space > 0)
				take = last_space;
		}
		const char *nl = memchr(s, '\n', (size_t)take);
		if (nl)
			take = (int)(nl - s);
		fprintf(fp, "%*s%.*s\n", ind, "", take, s);
		s += take;
		while (*s == ' ' || *s == '\n')
			s++;
	}
}

static void wrap(FILE *fp, const char *s, int indent, int width)
{
	wrap_hang(fp, s, indent, indent, width);
}

typedef struct gl {
	char buf[160];
	int n;
} gl;

static int graph_list_row(const pp_graph_info *gi, void *ud)
{
	gl *g = ud;
	size_t l = strlen(g->buf);
	if (g->n++ < 6)
		snprintf(g->buf + l, sizeof g->buf - l, "%s#%lld v%lld %lld nodes", l ? ", " : "",
			 (long long)gi->id, (long long)gi->version, (long long)gi->n_nodes);
	return 0;
}

/* The run's graph snapshots by version, one callback each. */
static void each_graph(pp_store *st, int64_t run_id, int (*cb)(const pp_graph_info *, void *), void *ud)
{
	pp_graph_info *g = NULL;
	int n = 0;
	if (pp_store_graphs(st, run_id, 0, &g, &n) == 0)
		for (int i = 0; i < n && cb(&g[i], ud) == 0; i++)
			;
	free(g);
}

typedef struct json_graphs {
	pp_out *o;
	int n;
} json_graphs;

static int json_graph_row(const pp_graph_info *g, void *ud)
{
	json_graphs *j = ud;
	pp_out_printf(j->o, "%s{\"id\":%lld,\"version\":%lld,\"nodes\":%lld,\"edges\":%lld}", j->n++ ? "," : "",
		      (long long)g->id, (long long)g->version, (long long)g->n_nodes, (long long)g->n_edges);
	return 0;
}

static void jkey_str(pp_out *o, const char *k, const char *v, int comma)
{
	pp_out_printf(o, "%s\"%s\":", comma ? "," : "", k);
	pp_out_json_str(o, v);
}

static void jkey_i64(pp_out *o, const char *k, int64_t v)
{
	pp_out_printf(o, ",\"%s\":%lld", k, (long long)v);
}

static int stats_json(pp_store *st, const pp_run_info *runs, int n, FILE *fp)
{
	pp_out *o = pp_out_memory();
	if (!o)
		return -1;
	pp_out_puts(o, "{");
	jkey_str(o, "database", pp_store_path(st), 0);
	pp_out_puts(o, ",\"runs\":[");
	for (int i = 0; i < n; i++) {
		const pp_run_info *r = &runs[i];
		pp_out_printf(o, "%s{\"id\":%lld", i ? ",\n" : "\n", (long long)r->id);
		jkey_str(o, "label", r->label, 1);
		jkey_str(o, "scenario", r->scenario, 1);
		jkey_str(o, "variant", r->variant, 1);
		jkey_str(o, "status", r->status, 1);
		jkey_str(o, "command", r->command, 1);
		jkey_i64(o, "duration_ns", r->duration_ns);
		jkey_i64(o, "events", r->events);
		jkey_i64(o, "events_lost", r->events_lost);
		jkey_i64(o, "rows_lost", r->rows_lost);
		pp_step_summary ss;
		diag_step_summary(st, r->id, 0, &ss);
		jkey_i64(o, "steps", ss.n);
		jkey_i64(o, "first_step_ns", ss.first_ns);
		jkey_i64(o, "steady_step_ns", (int64_t)ss.steady_median_ns);
		pp_phase_total *pt = NULL;
		int np = 0;
		pp_store_phase_totals(st, r->id, &pt, &np);
		pp_out_puts(o, ",\"phases\":[");
		for (int k = 0; k < np; k++) {
			pp_out_printf(o, "%s{", k ? "," : "");
			jkey_str(o, "kind", pt[k].kind_name, 0);
			jkey_i64(o, "count", pt[k].count);
			jkey_i64(o, "total_ns", pt[k].total_ns);
			jkey_i64(o, "max_ns", pt[k].max_ns);
			pp_out_puts(o, "}");
		}
		free(pt);
		pp_out_puts(o, "],\"ops\":[");
		pp_op_stat *ops = NULL;
		int no = 0;
		pp_store_ops(st, r->id, 20, &ops, &no);
		for (int k = 0; k < no; k++) {
			pp_out_printf(o, "%s{", k ? "," : "");
			jkey_str(o, "name", ops[k].name, 0);
			jkey_str(o, "type", ops[k].type, 1);
			jkey_i64(o, "calls", ops[k].calls);
			jkey_i64(o, "total_ns", ops[k].total_ns);
			jkey_i64(o, "max_ns", ops[k].max_ns);
			jkey_i64(o, "first_step_ns", ops[k].first_ns);
			jkey_i64(o, "steady_ns_per_step",
				 ops[k].steady_steps ? ops[k].steady_ns / ops[k].steady_steps : -1);
			pp_out_puts(o, "}");
		}
		free(ops);
		pp_out_puts(o, "],\"imports\":[");
		pp_import_time *im = NULL;
		int ni = 0;
		pp_store_import_times(st, r->id, 0, 0, &im, &ni);
		for (int k = 0; k < ni; k++) {
			pp_out_printf(o, "%s{", k ? "," : "");
			jkey_str(o, "module", im[k].module, 0);
			jkey_i64(o, "count", im[k].count);
			jkey_i64(o, "self_ns", im[k].self_ns);
			jkey_i64(o, "cumulative_ns", im[k].cumulative_ns);
			pp_out_puts(o, "}");
		}
		free(im);
		char py[512];
		if (pp_store_python_status(st, r->id, py, sizeof py) == 1) {
			pp_out_puts(o, "]");
			jkey_str(o, "python", py, 1);
			pp_out_puts(o, ",\"graphs\":[");
		} else
			pp_out_puts(o, "],\"graphs\":[");
		json_graphs jg = {o, 0};
		each_graph(st, r->id, json_graph_row, &jg);
		pp_finding *f = NULL;
		int nf = 0, computed = 0;
		pp_diag_findings(st, r->id, &f, &nf, &computed);
		const char *src = computed ? "computed" : "stored";
		pp_out_printf(o, "],\"findings_source\":\"%s\",\"findings\":[", src);
		for (int k = 0; k < nf; k++) {
			pp_out_printf(o, "%s{", k ? "," : "");
			jkey_str(o, "rule", f[k].rule, 0);
			jkey_str(o, "severity", f[k].severity, 1);
			pp_out_printf(o, ",\"score\":%.6g", f[k].score);
			jkey_str(o, "title", f[k].title, 1);
			jkey_str(o, "evidence", f[k].evidence, 1);
			jkey_str(o, "fix", f[k].fix, 1);
			pp_out_puts(o, "}");
		}
		free(f);
		pp_out_puts(o, "]}");
	}
	pp_out_puts(o, "\n]}\n");
	size_t len;
	const char *d = pp_out_data(o, &len);
	int rc = fwrite(d, 1, len, fp) == len ? 0 : -1;
	pp_out_close(o, NULL, 0);
	return rc;
}

/* The slowest imports of a Python run, by self and by cumulative time. */
static void print_imports(pp_store *st, int64_t run_id, FILE *fp, int width)
{
	for (int by_self = 1; by_self >= 0; by_self--) {
		pp_import_time *v = NULL;
		int n = 0;
		if (pp_store_import_times(st, run_id, by_self, 10, &v, &n) != 0 || !n) {
			free(v);
			return;
		}
		fprintf(fp, "\n  slowest imports by %s time\n", by_self ? "self" : "cumulative");
		tbl t = {.nc = 3, .head = {"module", "self", "cumulative"}, .right = {0, 1, 1}, .flex = 0};
		char b[2][64];
		for (int k = 0; k < n; k++) {
			pp_fmt_dur(b[0], 64, (double)v[k].self_ns);
			pp_fmt_dur(b[1], 64, (double)v[k].cumulative_ns);
			tbl_add(&t, v[k].module, b[0], b[1]);
		}
		tbl_print(&t, fp, width, 2);
		free(v);
	}
}

/* One table per distributed job: each rank's communicator set-up,
 * communication, steps and clock alignment, side by side. */
static void print_ranks(pp_store *st, const pp_run_info *runs, const pp_step_summary *sum, int n, FILE *fp,
			int width)
{
	pp_rank_run *rr = NULL;
	int nr = 0;
	if (pp_store_rank_runs(st, &rr, &nr) != 0 || nr == 0) {
		free(rr);
		return;
	}
	char b[8][64];
	for (int i = 0; i < nr;) {
		int j = i;
		while (j < nr && strcmp(rr[j].job, rr[i].job) == 0)
			j++;
		int shown = 0;
		tbl t = {.nc = 8, .head = {"rank", "run", "host", "status", "comm_init", "comm", "steps", "step median"},
			 .right = {1, 1, 0, 0, 1, 1, 1, 1}, .flex = 2};
		for (int k = i; k < j; k++) {
			int sel = -1;
			for (int q = 0; q < n; q++)
				if (runs[q].id == rr[k].run_id)
					sel = q;
			if (sel < 0)
				continue;
			shown++;
			pp_phase_total *pt = NULL;
			int np = 0;
			int64_t init = 0, comm = 0;
			pp_store_phase_totals(st, rr[k].run_id, &pt, &np);
			for (int q = 0; q < np; q++) {
				if (pt[q].kind == PP_COMM_INIT)
					init = pt[q].total_ns;
				if (pt[q].kind == PP_COMM)
					comm = pt[q].total_ns;
			}
			free(pt);
			/* the steady median, as everywhere else (diff's rank table too) */
			int ns = sum[sel].n;
			int64_t med = (int64_t)sum[sel].steady_median_ns;
			snprintf(b[0], 64, "%d", rr[k].rank);
			snprintf(b[1], 64, "%lld", (long long)rr[k].run_id);
			pp_fmt_dur(b[2], 64, (double)init);
			pp_fmt_dur(b[3], 64, (double)comm);
			snprintf(b[4], 64, "%d", ns);
			if (med >= 0)
				pp_fmt_dur(b[5], 64, (double)med);
			else
				snprintf(b[5], 64, "-");
			tbl_add(&t, b[0], b[1], rr[k].host, rr[k].status, b[2], b[3], b[4], b[5]);
		}
		if (shown) {
			fprintf(fp, "\njob %s: %d of %d rank%s", rr[i].job, shown, rr[i].world_size > 0 ? rr[i].world_size : j - i,
				(rr[i].world_size > 0 ? rr[i].world_size : j - i) == 1 ? "" : "s");
			int aligned = 0;
			int64_t worst = 0;
			for (int k = i; k < j; k++)
				if (rr[k].clock_uncertainty_ns >= 0 && k > i) {
					aligned = 1;
					if (rr[k].clock_uncertainty_ns > worst)
						worst = rr[k].clock_uncertainty_ns;
				}
			if (aligned)
				fprintf(fp, " (clocks aligned by merge, worst uncertainty +-%s)", pp_fmt_dur(b[6], 64, (double)worst));
			fputc('\n', fp);
			tbl_print(&t, fp, width, 2);
		}
		for (int r = 0; r < t.nr * t.nc; r++)
			free(t.cells[r]);
		free(t.cells);
		i = j;
	}
	free(rr);
}

int pp_stats_print(pp_store *st, int64_t run_id, int json, int width, FILE *fp, char *err, size_t errlen)
{
	if (width <= 0)
		width = 80;
	pp_run_info *runs = NULL;
	int n = 0;
	if (pp_store_runs(st, &runs, &n) != 0) {
		snprintf(err, errlen, "%s: cannot read the runs table", pp_store_path(st));
		return -1;
	}
	if (run_id) {
		int k = -1;
		for (int i = 0; i < n; i++)
			if (runs[i].id == run_id)
				k = i;
		if (k < 0) {
			if (n)
				snprintf(err, errlen, "%s: no run %lld (runs here: %lld..%lld)", pp_store_path(st),
					 (long long)run_id, (long long)runs[0].id, (long long)runs[n - 1].id);
			else
				snprintf(err, errlen, "%s: no run %lld (the database has no runs)", pp_store_path(st),
					 (long long)run_id);
			free(runs);
			return -1;
		}
		runs[0] = runs[k];
		n = 1;
	}
	if (json) {
		int rc = stats_json(st, runs, n, fp);
		free(runs);
		if (rc != 0)
			snprintf(err, errlen, "writing JSON failed");
		return rc;
	}
	/* diag's step summary of each run, read once for every table below */
	pp_step_summary *sum = calloc((size_t)(n ? n : 1), sizeof *sum);
	if (!sum) {
		free(runs);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < n; i++)
		diag_step_summary(st, runs[i].id, 0, &sum[i]);
	char b[8][64];
	fprintf(fp, "%s: %d run%s\n\n", pp_store_path(st), n, n == 1 ? "" : "s");
	tbl t = {.nc = 7, .head = {"run", "what", "status", "duration", "steps", "events", "lost"},
		 .right = {1, 0, 0, 1, 1, 1, 1}, .flex = 1};
	for (int i = 0; i < n; i++) {
		const pp_run_info *r = &runs[i];
		char what[160];
		if (r->scenario[0])
			snprintf(what, sizeof what, "%.70s/%.70s", r->scenario, r->variant);
		else
			snprintf(what, sizeof what, "%.150s", r->label[0] ? r->label : r->command);
		snprintf(b[0], 64, "%lld", (long long)r->id);
		pp_fmt_dur(b[1], 64, (double)r->duration_ns);
		snprintf(b[2], 64, "%d", sum[i].n);
		snprintf(b[3], 64, "%lld", (long long)r->events);
		snprintf(b[4], 64, "%lld", (long long)(r->events_lost + r->rows_lost));
		tbl_add(&t, b[0], what, r->status, b[1], b[2], b[3], b[4]);
	}
	tbl_print(&t, fp, width, 0);
	print_ranks(st, runs, sum, n, fp, width);

	for (int i = 0; i < n; i++) {
		const pp_run_info *r = &runs[i];
		fprintf(fp, "\nrun %lld", (long long)r->id);
		if (r->scenario[0])
			fprintf(fp, ": %s / %s", r->scenario, r->variant);
		else if (r->label[0])
			fprintf(fp, ": %s", r->label);
		int64_t first = sum[i].first_ns, steady = (int64_t)sum[i].steady_median_ns;
		if (first >= 0) {
			fprintf(fp, "  (first step %s", pp_fmt_dur(b[0], 64, (double)first));
			if (steady >= 0)
				fprintf(fp, ", steady %s", pp_fmt_dur(b[1], 64, (double)steady));
			fputc(')', fp);
		}
		fputc('\n', fp);
		char py[512];
		if (pp_store_python_status(st, r->id, py, sizeof py) == 1) {
			char line[540];
			snprintf(line, sizeof line, "python: %s", py);
			wrap(fp, line, 2, width);
		}
		pp_phase_total *pt = NULL;
		int np = 0;
		pp_store_phase_totals(st, r->id, &pt, &np);
		if (np) {
			tbl p = {.nc = 5, .head = {"phase", "count", "total", "share", "longest"},
				 .right = {0, 1, 1, 1, 1}, .flex = 0};
			double span = r->duration_ns > 0 ? (double)r->duration_ns : 1;
			for (int k = 0; k < np; k++) {
				snprintf(b[0], 64, "%lld", (long long)pt[k].count);
				pp_fmt_dur(b[1], 64, (double)pt[k].total_ns);
				snprintf(b[2], 64, "%.1f%%", 100.0 * (double)pt[k].total_ns / span);
				pp_fmt_dur(b[3], 64, (double)pt[k].max_ns);
				tbl_add(&p, pt[k].kind_name, b[0], b[1], b[2], b[3]);
			}
			tbl_print(&p, fp, width, 2);
		} else {
			fprintf(fp, "  no phases recorded\n");
		}
		free(pt);
		pp_op_stat *ops = NULL;
		int no = 0;
		pp_store_ops(st, r->id, 10, &ops, &no);
		if (no) {
			fputc('\n', fp);
			tbl q = {.nc = 6, .head = {"op", "type", "calls", "total", "first step", "steady/step"},
				 .right = {0, 0, 1, 1, 1, 1}, .flex = 0};
			for (int k = 0; k < no; k++) {
				snprintf(b[0], 64, "%lld", (long long)ops[k].calls);
				pp_fmt_dur(b[1], 64, (double)ops[k].total_ns);
				if (ops[k].first_step >= 0)
					pp_fmt_dur(b[2], 64, (double)ops[k].first_ns);
				else
					snprintf(b[2], 64, "-");
				if (ops[k].steady_steps > 0)
					pp_fmt_dur(b[3], 64, (double)(ops[k].steady_ns / ops[k].steady_steps));
				else
					snprintf(b[3], 64, "-");
				char type[24];
				snprintf(type, sizeof type, "%.23s", ops[k].type);
				tbl_add(&q, ops[k].name, type, b[0], b[1], b[2], b[3]);
			}
			tbl_print(&q, fp, width, 2);
		}
		free(ops);
		print_imports(st, r->id, fp, width);
		gl g = {"", 0};
		each_graph(st, r->id, graph_list_row, &g);
		if (g.n) {
			char line[256];
			snprintf(line, sizeof line, "graphs: %s%s", g.buf, g.n > 6 ? ", ..." : "");
			fputc('\n', fp);
			wrap(fp, line, 2, width);
		}
		pp_finding *f = NULL;
		int nf = 0, computed = 0;
		/* not diagnosed yet: the rules run now, without writing */
		pp_diag_findings(st, r->id, &f, &nf, &computed);
		const char *how = computed ? " (computed now, not stored)" : "";
		if (nf) {
			fprintf(fp, "\n  findings%s:\n", how);
			for (int k = 0; k < nf; k++) {
				char head[320];
				snprintf(head, sizeof head, "[%s] %s", f[k].severity, f[k].title);
				wrap_hang(fp, head, 2, 5 + (int)strlen(f[k].severity), width);
				if (f[k].evidence[0])
					wrap(fp, f[k].evidence, 6, width);
				if (f[k].fix[0]) {
					char fix[540];
					snprintf(fix, sizeof fix, "fix: %s", f[k].fix);
					wrap(fp, fix, 6, width);
				}
			}
		}
		free(f);
	}
	free(sum);
	free(runs);
	return 0;
}
