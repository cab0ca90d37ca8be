/* graph.c — graph snapshots rendered by Graphviz in-process (libcgraph to
 * build the graph, libgvc to lay it out and render), never by running dot.
 * Node fill encodes measured time. Graphs above the cap are grouped by name
 * scope ("dense_1/MatMul" → "dense_1/"), then by op type, so a 5,000-node
 * graph renders in well under a second and the note says what was grouped. */
#include "view_int.h"

#include <gvc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct gnode {
	int64_t name_id;
	char *name, *op, *device, *shape;
	double cost;              /* ns */
	int group;
} gnode;

typedef struct gedge { int src, dst; } gedge;

typedef struct gload {
	gnode *n;
	int nn, capn;
	gedge *e;
	int ne, cape;
	int failed;
} gload;

typedef struct gmeta {
	int64_t run_id, version, n_nodes, n_edges;
	char label[128];
	int found;
} gmeta;

static char *dup_col(const char *s)
{
	return strdup(s ? s : "");
}

/* Graphviz label escapes (\N, \G, \l…) start with a backslash. */
static void clean_label(char *s)
{
	for (; *s; s++)
		if (*s == '\\' || *s == '"')
			*s = '/';
}

static int node_row(const pp_graph_node_row *row, void *ud)
{
	gload *g = ud;
	if (PP_GROW(g->n, g->nn + 1, g->capn) != 0) {
		g->failed = 1;
		return 1;
	}
	gnode *n = &g->n[g->nn++];
	n->name_id = row->name_id;
	n->name = dup_col(row->name);
	n->op = dup_col(row->op);
	n->device = dup_col(row->device);
	n->shape = dup_col(row->shape);
	if (n->name)
		clean_label(n->name);
	if (n->op)
		clean_label(n->op);
	n->cost = (double)row->cost_ns;
	n->group = g->nn - 1;
	return 0;
}

static int edge_row(int64_t src, int64_t dst, void *ud)
{
	gload *g = ud;
	if (src < 0 || dst < 0 || src >= g->nn || dst >= g->nn)
		return 0;
	int s = (int)src, d = (int)dst;
	if (s < 0 || d < 0 || s >= g->nn || d >= g->nn)
		return 0;   /* dangling edge: drawn nowhere, counted in n_edges */
	if (PP_GROW(g->e, g->ne + 1, g->cape) != 0) {
		g->failed = 1;
		return 1;
	}
	g->e[g->ne++] = (gedge){s, d};
	return 0;
}

typedef pp_op_time optime;
typedef struct optimes { optime *v; int n; } optimes;

static int cmp_optime(const void *a, const void *b)
{
	const optime *x = a, *y = b;
	return (x->name_id > y->name_id) - (x->name_id < y->name_id);
}

static void gload_free(gload *g)
{
	for (int i = 0; i < g->nn; i++) {
		free(g->n[i].name);
		free(g->n[i].op);
		free(g->n[i].device);
		free(g->n[i].shape);
	}
	free(g->n);
	free(g->e);
}

/* Time → fill colour: pale for cheap nodes, through amber to red for the
 * most expensive (sqrt scale so the middle of the range stays visible). */
static void heat_colour(double t, double max, char *buf, size_t n)
{
	if (max <= 0 || t <= 0) {
		snprintf(buf, n, "#eef2f7");
		return;
	}
	double f = sqrt(t / max);
	static const double stops[3][3] = {{255, 244, 214}, {246, 162, 60}, {200, 48, 38}};
	int k = f < 0.5 ? 0 : 1;
	double u = f < 0.5 ? f * 2 : (f - 0.5) * 2;
	int r = (int)(stops[k][0] + (stops[k + 1][0] - stops[k][0]) * u);
	int g = (int)(stops[k][1] + (stops[k + 1][1] - stops[k][1]) * u);
	int b = (int)(stops[k][2] + (stops[k + 1][2] - stops[k][2]) * u);
	snprintf(buf, n, "#%02x%02x%02x", r, g, b);
}


typedef struct group {
	char key[128];
	int count;
	double cost;
	const gnode *first;
} group;

/* Assigns n->group by key; returns the number of groups or -1. */
static int group_by(gload *g, int by_scope, int keep_first, group **out)
{
	pp_strtab keys = {0};
	group *gr = NULL;
	int cap = 0;
	for (int i = 0; i < g->nn; i++) {
		char key[128];
		if (i < keep_first) {
			snprintf(key, sizeof key, "\x01%d", i);   /* a node of its own */
		} else if (by_scope) {
			const char *slash = strrchr(g->n[i].name, '/');
			if (slash)
				snprintf(key, sizeof key, "%.*s/", (int)(slash - g->n[i].name), g->n[i].name);
			else
				snprintf(key, sizeof key, "%s", g->n[i].name);
		} else {
			snprintf(key, sizeof key, "%s", g->n[i].op[0] ? g->n[i].op : "?");
		}
		int before = keys.n;
		int k = pp_strtab_add(&keys, key);
		if (PP_GROW(gr, k + 1, cap) != 0) {
			free(gr);
			pp_strtab_free(&keys);
			return -1;
		}
		if (keys.n > before) {   /* first node of a new group */
			memset(&gr[k], 0, sizeof gr[k]);
			snprintf(gr[k].key, sizeof gr[k].key, "%s", key);
			gr[k].first = &g->n[i];
		}
		gr[k].count++;
		gr[k].cost += g->n[i].cost;
		g->n[i].group = k;
	}
	int n = keys.n;
	pp_strtab_free(&keys);
	*out = gr;
	return n;
}

/* Graphviz is loaded on first use (dlopen), not linked: most phaseprof
 * commands (record above all) never draw a graph and would otherwise pay
 * for relocating libgvc, libcgraph and their dependencies at every start.
 * The calls go through one ops table whose entries take the headers' own
 * types, so a signature change shows up at compile time.
 *
 * One Graphviz context for the process. Graphviz 2.43 keeps a font cache in
 * a static dictionary that outlives gvFreeContext; a second context then
 * reads freed font names (heap-use-after-free under ASan). The viewers are
 * single-threaded, so one shared context is enough.
 *
 * Only the dot layout and the core renderers (svg, dot) are loaded, handed
 * to Graphviz as builtins: no pango/cairo/fontconfig, so no font scan on the
 * first layout, text widths from Graphviz's own Helvetica metrics (the same
 * on every machine), and none of fontconfig's process-lifetime caches. When
 * those two plugins are not where the build found them, gvContext() loads
 * what Graphviz's own configuration lists. */
#include <dlfcn.h>
#include <gvplugin.h>

#define PP_GV_LIB "libgvc.so.6"   /* depends on libcgraph.so.6: one handle finds both */
#define PP_GV_FUNCS(X)                                                          \
	X(agopen) X(agattr) X(agclose) X(agnode) X(agset) X(agsafeset) X(agedge) \
	X(agwrite) X(gvContext) X(gvContextPlugins) X(gvLayout) X(gvFreeLayout)  \
	X(gvRenderData) X(gvFreeRenderData)

typedef struct gv_ops {
#define X(f) __typeof__(f) *f;
	PP_GV_FUNCS(X)
#undef X
	Agdesc_t *directed;
	GVC_t *gvc;
} gv_ops;

/* The builtin plugin library `sym` of the plugin file `file`, or NULL. */
static void *gv_plugin(const char *file, const char *sym)
{
#ifdef PP_GV_PLUGIN_DIR
	char path[512];
	snprintf(path, sizeof path, "%s/%s", PP_GV_PLUGIN_DIR, file);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	return h ? dlsym(h, sym) : NULL;
#else
	(void)file;
	(void)sym;
	return NULL;
#endif
}

/* The loaded ops with their context, or NULL with a one-line err. */
static const gv_ops *gv_load(char *err, size_t errlen)
{
	static gv_ops ops;
	static int state;   /* 0 not tried, 1 loaded, -1 failed */
	static char why[256];
	if (state == 0) {
		state = -1;
		void *h = dlopen(PP_GV_LIB, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			snprintf(why, sizeof why, "Graphviz is not installed (%s); install it to draw graphs "
				 "(Debian: libgvc6)", dlerror());
			goto out;
		}
#define X(f)                                                                         \
	if (!(*(void **)&ops.f = dlsym(h, #f))) {                                    \
		snprintf(why, sizeof why, "Graphviz (%s) lacks %s", PP_GV_LIB, #f);  \
		goto out;                                                            \
	}
		PP_GV_FUNCS(X)
#undef X
		if (!(ops.directed = dlsym(h, "Agdirected"))) {
			snprintf(why, sizeof why, "Graphviz (%s) lacks Agdirected", PP_GV_LIB);
			goto out;
		}
		static lt_symlist_t builtins[] = {
			{"gvplugin_dot_layout_LTX_library", NULL},
			{"gvplugin_core_LTX_library", NULL},
			{0, 0},
		};
		builtins[0].address = gv_plugin("libgvplugin_dot_layout.so.6", builtins[0].name);
		builtins[1].address = gv_plugin("libgvplugin_core.so.6", builtins[1].name);
		ops.gvc = builtins[0].address && builtins[1].address ? ops.gvContextPlugins(builtins, 0)
								     : ops.gvContext();
		if (!ops.gvc) {
			snprintf(why, sizeof why, "Graphviz (%s): cannot create a context", PP_GV_LIB);
			goto out;
		}
		state = 1;
	}
out:
	if (state < 0) {
		snprintf(err, errlen, "%s", why);
		return NULL;
	}
	return &ops;
}

typedef struct gedge_agg { int src, dst, count; } gedge_agg;

static int cmp_gedge(const void *a, const void *b)
{
	const gedge_agg *x = a, *y = b;
	if (x->src != y->src)
		return x->src - y->src;
	return x->dst - y->dst;
}

static int cmp_gedge_count(const void *a, const void *b)
{
	const gedge_agg *x = a, *y = b;
	return y->count - x->count;
}

#define MAX_DRAWN_EDGES 4000

static int graph_render(pp_store *st, int64_t graph_id, const char *format, int cap, pp_out *out,
			pp_graph_render_info *info, char *err, size_t errlen, const pp_op_stat *ops, int n_ops,
			int have_ops);

int pp_graph_render(pp_store *st, int64_t graph_id, const char *format, int cap,
		    pp_out *out, pp_graph_render_info *info, char *err, size_t errlen)
{
	return graph_render(st, graph_id, format, cap, out, info, err, errlen, NULL, 0, 0);
}

int pp_graph_render_ops(pp_store *st, int64_t graph_id, const char *format, int cap, pp_out *out,
			pp_graph_render_info *info, char *err, size_t errlen, const pp_op_stat *ops, int n_ops)
{
	return graph_render(st, graph_id, format, cap, out, info, err, errlen, ops, n_ops, 1);
}

static int graph_render(pp_store *st, int64_t graph_id, const char *format, int cap, pp_out *out,
			pp_graph_render_info *info, char *err, size_t errlen, const pp_op_stat *ops, int n_ops,
			int have_ops)
{
	pp_graph_render_info dummy;
	if (!info)
		info = &dummy;
	memset(info, 0, sizeof *info);
	int want_svg = strcmp(format, "svg") == 0;
	if (!want_svg && strcmp(format, "dot") != 0) {
		snprintf(err, errlen, "graph format must be svg or dot, not '%s'", format);
		return -1;
	}
	gmeta meta = {0};
	gload g = {0};
	optimes ot = {0};
	group *groups = NULL;
	gedge_agg *ea = NULL;
	int rc = -1;
	pp_graph_info gi;
	if (pp_store_graph(st, graph_id, &gi) != 0) {
		snprintf(err, errlen, "%s: no graph snapshot with id %lld", pp_store_path(st), (long long)graph_id);
		return -1;
	}
	meta.run_id = gi.run_id;
	meta.version = gi.version;
	meta.n_nodes = gi.n_nodes;
	meta.n_edges = gi.n_edges;
	meta.found = 1;
	snprintf(meta.label, sizeof meta.label, "%s", gi.label);
	if (pp_store_each_graph_node(st, graph_id, node_row, &g) != 0 || g.failed ||
	    pp_store_each_graph_edge(st, graph_id, edge_row, &g) != 0 || g.failed) {
		snprintf(err, errlen, "%s: cannot read graph %lld: %s", pp_store_path(st), (long long)graph_id,
			 pp_store_error(st));
		goto done;
	}
	info->n_nodes = g.nn;
	info->n_edges = g.ne;
	/* Nodes without a recorded cost take the run's op time under that name. */
	int need_ops = 0;
	for (int i = 0; i < g.nn; i++)
		if (g.n[i].cost <= 0)
			need_ops = 1;
	if (need_ops && g.nn) {
		if (have_ops) {
			ot.v = malloc((size_t)(n_ops ? n_ops : 1) * sizeof *ot.v);
			for (int i = 0; ot.v && i < n_ops; i++)
				ot.v[ot.n++] = (optime){ops[i].name_id, (double)ops[i].total_ns};
		} else {
			pp_store_op_times(st, meta.run_id, &ot.v, &ot.n);
		}
		pp_sort(ot.v, (size_t)ot.n, sizeof *ot.v, cmp_optime);
		/* one node name may have run under several op types: sum them */
		int k = 0;
		for (int i = 0; i < ot.n; i++) {
			if (k && ot.v[k - 1].name_id == ot.v[i].name_id)
				ot.v[k - 1].ns += ot.v[i].ns;
			else
				ot.v[k++] = ot.v[i];
		}
		ot.n = k;
		for (int i = 0; i < g.nn; i++) {
			if (g.n[i].cost > 0)
				continue;
			optime key = {g.n[i].name_id, 0};
			optime *f = pp_bsearch(&key, ot.v, (size_t)ot.n, sizeof *ot.v, cmp_optime);
			if (f)
				g.n[i].cost = f->ns;
		}
	}
	if (cap <= 0)
		cap = want_svg ? PP_GRAPH_DEFAULT_CAP : INT32_MAX;
	int n_groups = g.nn;
	if (g.nn > cap) {
		char how[96] = "name scope";
		n_groups = group_by(&g, 1, 0, &groups);
		if (n_groups > cap) {
			/* Keep the first nodes (for a graph that grew: the original
			 * model) and group what came after by op type. */
			int keep = cap / 2 < 40 ? cap / 2 : 40;
			free(groups);
			groups = NULL;
			n_groups = group_by(&g, 0, keep, &groups);
			snprintf(how, sizeof how, "op type after the first %d nodes", keep);
		}
		if (n_groups > cap) {
			free(groups);
			groups = NULL;
			n_groups = group_by(&g, 0, 0, &groups);
			snprintf(how, sizeof how, "op type");
		}
		if (n_groups < 0)
			goto oom;
		if (n_groups > cap) {
			/* Still too many: keep the cap-1 costliest op types, fold the rest. */
			int *order = malloc((size_t)n_groups * sizeof *order);
			if (!order)
				goto oom;
			for (int i = 0; i < n_groups; i++)
				order[i] = i;
			for (int i = 1; i < n_groups; i++)   /* insertion sort by cost, small n */
				for (int j = i; j > 0 && groups[order[j]].cost > groups[order[j - 1]].cost; j--) {
					int t = order[j];
					order[j] = order[j - 1];
					order[j - 1] = t;
				}
			int *remap = malloc((size_t)n_groups * sizeof *remap);
			if (!remap) {
				free(order);
				goto oom;
			}
			for (int r = 0; r < n_groups; r++)
				remap[order[r]] = r < cap - 1 ? r : cap - 1;
			group *ng = calloc((size_t)cap, sizeof *ng);
			if (!ng) {
				free(order);
				free(remap);
				goto oom;
			}
			for (int i = 0; i < n_groups; i++) {
				group *d = &ng[remap[i]];
				if (!d->count) {
					*d = groups[i];
					d->count = 0;
					d->cost = 0;
				}
				d->count += groups[i].count;
				d->cost += groups[i].cost;
			}
			snprintf(ng[cap - 1].key, sizeof ng[cap - 1].key, "other op types");
			for (int i = 0; i < g.nn; i++)
				g.n[i].group = remap[g.n[i].group];
			free(order);
			free(remap);
			free(groups);
			groups = ng;
			n_groups = cap;
			snprintf(how, sizeof how, "op type (the cheapest folded into one node)");
		}
		info->clustered = 1;
		snprintf(info->note, sizeof info->note,
			 "%d nodes exceed the drawing cap of %d: grouped by %s into %d nodes", g.nn, cap, how, n_groups);
	}
	/* Edges between drawn nodes, merged with a multiplicity. */
	ea = malloc((size_t)(g.ne ? g.ne : 1) * sizeof *ea);
	if (!ea)
		goto oom;
	int ne = 0;
	for (int i = 0; i < g.ne; i++) {
		int s = g.n[g.e[i].src].group, d = g.n[g.e[i].dst].group;
		if (s == d && groups)
			continue;   /* inside a group */
		ea[ne++] = (gedge_agg){s, d, 1};
	}
	pp_sort(ea, (size_t)ne, sizeof *ea, cmp_gedge);
	int nu = 0;
	for (int i = 0; i < ne; i++) {
		if (nu && ea[nu - 1].src == ea[i].src && ea[nu - 1].dst == ea[i].dst)
			ea[nu - 1].count++;
		else
			ea[nu++] = ea[i];
	}
	if (want_svg && nu > MAX_DRAWN_EDGES) {
		pp_sort(ea, (size_t)nu, sizeof *ea, cmp_gedge_count);
		size_t l = strlen(info->note);
		snprintf(info->note + l, sizeof info->note - l, "%s%d of %d edges drawn (the heaviest)",
			 l ? "; " : "", MAX_DRAWN_EDGES, nu);
		nu = MAX_DRAWN_EDGES;
	}
	info->shown_nodes = n_groups;
	info->shown_edges = nu;

	double max_cost = 0;
	for (int i = 0; i < n_groups; i++) {
		double c = groups ? groups[i].cost : g.n[i].cost;
		if (c > max_cost)
			max_cost = c;
	}

	const gv_ops *gv = gv_load(err, errlen);
	if (!gv)
		goto done;
	GVC_t *gvc = gv->gvc;
	Agraph_t *ag = gv->agopen("phaseprof", *gv->directed, NULL);
	gv->agattr(ag, AGRAPH, "rankdir", "TB");
	gv->agattr(ag, AGRAPH, "nodesep", "0.25");
	gv->agattr(ag, AGRAPH, "ranksep", "0.35");
	gv->agattr(ag, AGRAPH, "bgcolor", "transparent");
	gv->agattr(ag, AGNODE, "shape", "box");
	gv->agattr(ag, AGNODE, "style", "rounded,filled");
	gv->agattr(ag, AGNODE, "fontname", "Helvetica");
	gv->agattr(ag, AGNODE, "fontsize", "10");
	gv->agattr(ag, AGNODE, "color", "#7a8699");
	gv->agattr(ag, AGNODE, "fillcolor", "#eef2f7");
	gv->agattr(ag, AGNODE, "label", "\\N");
	gv->agattr(ag, AGNODE, "tooltip", "");
	gv->agattr(ag, AGEDGE, "color", "#8a94a6");
	gv->agattr(ag, AGEDGE, "arrowsize", "0.6");
	gv->agattr(ag, AGEDGE, "label", "");
	gv->agattr(ag, AGEDGE, "fontsize", "9");
	gv->agattr(ag, AGEDGE, "fontname", "Helvetica");
	Agnode_t **an = calloc((size_t)(n_groups ? n_groups : 1), sizeof *an);
	if (!an) {
		gv->agclose(ag);
		goto oom;
	}
	if (n_groups == 0) {
		Agnode_t *e = gv->agnode(ag, "empty", 1);
		gv->agset(e, "label", "(empty graph: 0 nodes)");
		gv->agset(e, "shape", "plaintext");
		gv->agset(e, "style", "");
	}
	for (int i = 0; i < n_groups; i++) {
		char id[32], label[400], tip[600], col[16], dur[32];
		snprintf(id, sizeof id, "n%d", i);
		an[i] = gv->agnode(ag, id, 1);
		double cost = groups ? groups[i].cost : g.n[i].cost;
		pp_fmt_dur(dur, sizeof dur, (double)(int64_t)cost);
		if (groups && groups[i].count > 1) {
			snprintf(label, sizeof label, "%s\\n%d nodes%s%s", groups[i].key, groups[i].count,
				 cost > 0 ? " · " : "", cost > 0 ? dur : "");
			snprintf(tip, sizeof tip, "%s: %d nodes, %s", groups[i].key, groups[i].count,
				 cost > 0 ? dur : "no time recorded");
		} else {
			const gnode *n = groups ? groups[i].first : &g.n[i];
			snprintf(label, sizeof label, "%.120s\\n%.60s%s%s", n->name, n->op, cost > 0 ? " · " : "",
				 cost > 0 ? dur : "");
			snprintf(tip, sizeof tip, "%.200s (%.60s)%s%.60s%s%.60s: %s", n->name, n->op,
				 n->shape[0] ? " shape " : "", n->shape, n->device[0] ? " on " : "", n->device,
				 cost > 0 ? dur : "no time recorded");
		}
		heat_colour(cost, max_cost, col, sizeof col);
		pp_text_clean(label);
		pp_text_clean(tip);
		gv->agset(an[i], "label", label);
		gv->agset(an[i], "tooltip", tip);
		gv->agset(an[i], "fillcolor", col);
	}
	for (int i = 0; i < nu; i++) {
		Agedge_t *e = gv->agedge(ag, an[ea[i].src], an[ea[i].dst], NULL, 1);
		if (e && ea[i].count > 1) {
			char c[16];
			snprintf(c, sizeof c, "%d", ea[i].count);
			gv->agset(e, "label", c);
		}
	}
	if (want_svg) {
		char *data = NULL;
		unsigned int len = 0;
		int laid = gv->gvLayout(gvc, ag, "dot") == 0;
		if (laid && n_groups > 12) {
			/* Many nodes on few ranks (a fan-out) make a strip too wide to
			 * read once scaled to the page: lay it out left to right. */
			double w = GD_bb(ag).UR.x - GD_bb(ag).LL.x, h = GD_bb(ag).UR.y - GD_bb(ag).LL.y;
			if (w > 3 * h) {
				gv->gvFreeLayout(gvc, ag);
				gv->agsafeset(ag, "rankdir", "LR", "TB");
				laid = gv->gvLayout(gvc, ag, "dot") == 0;
			}
		}
		if (!laid || gv->gvRenderData(gvc, ag, "svg", &data, &len) != 0) {
			snprintf(err, errlen, "graph %lld: Graphviz layout/render failed", (long long)graph_id);
		} else {
			pp_out_write(out, data, len);
			rc = 0;
		}
		if (data)
			gv->gvFreeRenderData(data);
		gv->gvFreeLayout(gvc, ag);
	} else {
		/* DOT text: no layout needed, agwrite through a memory stream. */
		char *buf = NULL;
		size_t len = 0;
		FILE *ms = open_memstream(&buf, &len);
		if (ms && gv->agwrite(ag, ms) == 0) {
			fclose(ms);
			pp_out_write(out, buf, len);
			rc = 0;
		} else {
			if (ms)
				fclose(ms);
			snprintf(err, errlen, "graph %lld: writing DOT failed", (long long)graph_id);
		}
		free(buf);
	}
	free(an);
	gv->agclose(ag);
	goto done;
oom:
	snprintf(err, errlen, "graph %lld: out of memory", (long long)graph_id);
done:
	free(ea);
	free(groups);
	free(ot.v);
	gload_free(&g);
	return rc;
}

/* ---- export backends: one snapshot per file ---- */
static int graph_export(pp_view_ctx *c, const char *format)
{
	int64_t gid = c->opts->graph_id;
	if (gid == 0) {
		/* The latest snapshot of the selected run (or of the database). */
		if (pp_store_last_graph(c->st, c->opts->run_id, &gid) != 0)
			return pp_view_fail(c, "%s: cannot read graph snapshots: %s", pp_store_path(c->st),
					    pp_store_error(c->st));
		if (gid == 0) {
			if (c->opts->run_id)
				return pp_view_fail(c, "%s: run %lld has no graph snapshot", pp_store_path(c->st),
						    (long long)c->opts->run_id);
			return pp_view_fail(c, "%s: no graph snapshot in this database", pp_store_path(c->st));
		}
	} else if (c->opts->run_id) {
		int64_t owner = 0;
		pp_graph_info gi;
		if (pp_store_graph(c->st, gid, &gi) == 0)
			owner = gi.run_id;
		if (owner && owner != c->opts->run_id)
			return pp_view_fail(c, "%s: graph %lld belongs to run %lld, not run %lld", pp_store_path(c->st),
					    (long long)gid, (long long)owner, (long long)c->opts->run_id);
	}
	pp_graph_render_info info;
	return pp_graph_render(c->st, gid, format, c->opts->max_graph_nodes, c->out, &info, c->err, c->errlen);
}

static int dot_begin(pp_view_ctx *c) { return graph_export(c, "dot"); }
static int svg_begin(pp_view_ctx *c) { return graph_export(c, "svg"); }

const pp_view_ops pp_backend_dot = {
	.name = "dot",
	.description = "a graph snapshot as Graphviz DOT (--graph ID, default the latest)",
	.begin = dot_begin,
	.needs_graph = 1,
};

const pp_view_ops pp_backend_svg = {
	.name = "svg",
	.description = "a graph snapshot laid out by Graphviz as SVG, nodes coloured by time",
	.begin = svg_begin,
	.needs_graph = 1,
};
