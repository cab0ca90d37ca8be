/* report_flame.c — the CPU flame graph of a run's samples, as SVG. */
#include "report_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct fnode {
	int name;                 /* strtab index of the frame */
	int64_t count;
	int first_child, next;    /* -1 terminated */
} fnode;

typedef struct ftree {
	fnode *v;
	int n, cap;
	pp_strtab names;
} ftree;

static int fchild(ftree *t, int parent, int name)
{
	for (int k = t->v[parent].first_child; k >= 0; k = t->v[k].next)
		if (t->v[k].name == name)
			return k;
	if (PP_GROW(t->v, t->n + 1, t->cap) != 0)
		return -1;
	int k = t->n++;
	t->v[k] = (fnode){name, 0, -1, t->v[parent].first_child};
	t->v[parent].first_child = k;
	return k;
}

static int flame_depth(const ftree *t, int k)
{
	int d = 0;
	for (int c = t->v[k].first_child; c >= 0; c = t->v[c].next) {
		int cd = flame_depth(t, c);
		if (cd > d)
			d = cd;
	}
	return d + 1;
}

typedef struct fkid { const char *name; int node; } fkid;

static int cmp_fkid(const void *a, const void *b)
{
	return strcmp(((const fkid *)a)->name, ((const fkid *)b)->name);
}

static void flame_draw(pp_out *o, const ftree *t, int k, double x, double w, int depth, int maxd, double total)
{
	if (w < 0.4 || depth >= maxd)   /* too thin, or below the drawn depth */
		return;
	const double RH = 17;
	double y = (maxd - depth - 1) * RH;
	const char *name = k == 0 ? "all" : t->names.s[t->v[k].name];
	uint32_t h = pp_hash_str(name);
	int r = 205 + (int)(h % 50), g = 90 + (int)((h >> 8) % 120), b = 40 + (int)((h >> 16) % 40);
	P("<g><title>");
	E(name);
	pp_out_printf(o, ": %lld samples (%.1f%%)</title>", (long long)t->v[k].count, 100.0 * (double)t->v[k].count / total);
	pp_out_printf(o, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" rx=\"2\" fill=\"#%02x%02x%02x\"/>", x, y,
		      w > 0.8 ? w - 0.4 : w, RH - 1, r, g, b);
	if (w > 36) {
		int chars = (int)((w - 6) / 6.5);
		char lab[200];
		if ((int)strlen(name) > chars)
			snprintf(lab, sizeof lab, "%.*s…", chars > 1 ? chars - 1 : 0, name);
		else
			snprintf(lab, sizeof lab, "%s", name);
		pp_out_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#2b1d0e\">", x + 3, y + 12);
		E(lab);
		P("</text>");
	}
	P("</g>");
	/* children in name order (flamegraph.pl's alphabetical x axis) */
	int nk = 0;
	for (int c = t->v[k].first_child; c >= 0; c = t->v[c].next)
		nk++;
	if (!nk)
		return;
	fkid *kids = malloc((size_t)nk * sizeof *kids);   /* heap: deep stacks recurse */
	if (!kids)
		return;
	nk = 0;
	for (int c = t->v[k].first_child; c >= 0; c = t->v[c].next)
		kids[nk++] = (fkid){t->names.s[t->v[c].name], c};
	pp_sort(kids, (size_t)nk, sizeof *kids, cmp_fkid);
	double cx = x;
	for (int i = 0; i < nk; i++) {
		double cw = w * (double)t->v[kids[i].node].count / (double)t->v[k].count;
		flame_draw(o, t, kids[i].node, cx, cw, depth + 1, maxd, total);
		cx += cw;
	}
	free(kids);
}

void report_flame(pp_view_ctx *c, const pp_run_info *run)
{
	pp_out *o = c->out;
	pp_strtab paths = {0};
	int64_t *counts = NULL;
	if (pp_folded_samples(c->st, run->id, NULL, &paths, &counts) != 0 || paths.n == 0) {
		pp_strtab_free(&paths);
		free(counts);
		return;
	}
	ftree t = {0};
	t.cap = 256;
	t.v = malloc((size_t)t.cap * sizeof *t.v);
	if (!t.v) {
		pp_strtab_free(&paths);
		free(counts);
		return;
	}
	t.v[0] = (fnode){-1, 0, -1, -1};
	t.n = 1;
	int64_t total = 0;
	for (int i = 0; i < paths.n; i++) {
		int node = 0;
		t.v[0].count += counts[i];
		total += counts[i];
		char *p = paths.s[i];
		while (p && node >= 0) {
			char *semi = strchr(p, ';');
			if (semi)
				*semi = 0;
			node = fchild(&t, node, pp_strtab_add(&t.names, p));
			if (node >= 0)
				t.v[node].count += counts[i];
			if (semi)
				*semi = ';';
			p = semi ? semi + 1 : NULL;
		}
	}
	int maxd = flame_depth(&t, 0);
	if (maxd > 60)
		maxd = 60;
	pp_out_printf(o, "<h2 id=\"flame-%lld\">CPU flame graph</h2>\n<p class=\"lead\">%lld CPU samples; width = share of "
		      "samples, frames ordered by name (x is not time). Hover for counts.</p>\n",
		      (long long)run->id, (long long)total);
	pp_out_printf(o, "<div class=\"chart\"><svg class=\"flame\" viewBox=\"0 0 1000 %d\">", maxd * 17 + 2);
	flame_draw(o, &t, 0, 0, 1000, 0, maxd, (double)(total ? total : 1));
	P("</svg></div>\n");
	free(t.v);
	pp_strtab_free(&t.names);
	pp_strtab_free(&paths);
	free(counts);
}
