/* report_timeline.c — the zoomable timeline's data, at a level of detail:
 * above the budget the shortest items merge into "N items" blocks. */
#include "report_int.h"

#include <stdlib.h>

typedef struct tl_ent {
	int64_t start, dur;
	int32_t name;             /* < 0: -count of merged items */
	uint16_t depth;
	uint8_t c;                /* cat << 5 | kind; 255 merged */
} tl_ent;

static int cmp_tl(const void *a, const void *b)
{
	const tl_ent *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->depth - y->depth;
}


/* The (k+1)-th largest of v[0..n) (0 <= k < n), v reordered: a selection,
 * not a sort of 10^7 durations. */
static int64_t nth_longest(int64_t *v, int64_t n, int64_t k)
{
	int64_t lo = 0, hi = n - 1;
	while (lo < hi) {
		int64_t pivot = v[lo + (hi - lo) / 2], i = lo, j = hi;
		while (i <= j) {
			while (v[i] > pivot)
				i++;
			while (v[j] < pivot)
				j--;
			if (i <= j) {
				int64_t t = v[i];
				v[i++] = v[j];
				v[j--] = t;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

typedef struct mark_ctx {
	pp_out *o;
	int n;
} mark_ctx;

static int mark_row(const pp_mark_row *r, void *ud)
{
	mark_ctx *k = ud;
	if (k->n++)
		pp_out_putc(k->o, ',');
	pp_out_i64(k->o, r->ts_ns);
	pp_out_putc(k->o, ',');
	pp_out_json_str(k->o, r->name);
	return 0;
}

void report_timeline(pp_view_ctx *c, const pp_run_info *run, const pp_model *m)
{
	pp_out *o = c->out;
	pp_out_printf(o, "<h2 id=\"timeline-%lld\">Timeline</h2>\n", (long long)run->id);
	if (m->n_items == 0) {
		P("<p class=\"muted\">Nothing to draw: no spans, ops or GPU activity in this run.</p>\n");
		return;
	}
	int64_t budget = c->opts->timeline_budget > 0 ? c->opts->timeline_budget : PP_TIMELINE_DEFAULT_BUDGET;
	/* Threshold: the budget-th longest duration. Shorter items are merged. */
	int64_t thr = 0, gap = 0;
	if (m->n_items > budget) {
		int64_t *durs = calloc((size_t)m->n_items, sizeof *durs);
		if (durs) {
			int64_t k = 0;
			for (int t = 0; t < m->n_tracks; t++)
				for (int i = 0; i < m->tracks[t].n; i++)
					durs[k++] = m->tracks[t].items[i].end - m->tracks[t].items[i].start;
			thr = nth_longest(durs, k, budget - 1) + 1;
			free(durs);
		}
		/* Short items merge across gaps shorter than this: each row of a
		 * track then holds at most t_end / gap blocks, so all rows together
		 * at most budget / 2, however many tiny items a run has (10^7 spans
		 * of ~20 ns made 2.5 million blocks, a 36 MB page, with gaps of
		 * thr alone). */
		int64_t rows = 0;
		for (int t = 0; t < m->n_tracks; t++)
			rows += m->tracks[t].depth > 0 ? m->tracks[t].depth : 1;
		gap = (int64_t)((double)m->t_end * (double)rows / ((double)budget / 2));
		if (gap < thr)
			gap = thr;
	}
	int64_t merged_items = 0, merged_blocks = 0;
	pp_out_printf(o, "<p class=\"lead\">%s spans, ops%s per thread. Wheel to zoom, drag to pan, double-click to reset.",
		      m->has_gpu ? "Phases," : "Phases and", m->has_gpu ? ", CUDA calls and GPU streams" : "");
	if (m->open_spans)
		pp_out_printf(o, " %d span%s still open at the end of the run are drawn to its end.", m->open_spans,
			      m->open_spans == 1 ? " was" : "s were");
	P("</p>\n");
	pp_out_printf(o, "<div class=\"timeline\" data-src=\"tl-%lld\"><div class=\"tb\"><button data-z=\"in\">+</button>"
		      "<button data-z=\"out\">−</button><button data-z=\"reset\">reset</button><span class=\"range\"></span></div>"
		      "<svg class=\"tl\" height=\"60\"></svg></div>\n",
		      (long long)run->id);
	pp_out_printf(o, "<script type=\"application/json\" id=\"tl-%lld\">{\"t_end\":", (long long)run->id);
	pp_out_i64(o, m->t_end);
	P(",\"kinds\":[");
	for (int k = 0; k < PP_KIND_COUNT; k++) {
		if (k)
			P(",");
		pp_out_json_str(o, pp_kind_name((pp_kind)k));
	}
	P("],\"names\":[");
	for (int i = 0; i < m->names.n; i++) {
		if (i)
			pp_out_putc(o, ',');
		pp_out_json_str(o, m->names.s[i]);
	}
	P("],\"marks\":[");
	mark_ctx mk = {o, 0};
	pp_store_each_mark(c->st, run->id, 2000, mark_row, &mk);
	P("],\"tracks\":[");
	tl_ent *ents = NULL;
	int ecap = 0;
	for (int t = 0; t < m->n_tracks; t++) {
		const pp_track *tr = &m->tracks[t];
		int ne = 0;
		if (ecap < tr->n) {
			tl_ent *nv = realloc(ents, (size_t)tr->n * sizeof *nv);
			if (!nv)
				break;
			ents = nv;
			ecap = tr->n;
		}
		/* pending merged block per depth */
		int pd_cap = tr->depth > 0 ? tr->depth : 1;
		tl_ent *pend = calloc((size_t)pd_cap, sizeof *pend);
		char *has = calloc((size_t)pd_cap, 1);
		if (!pend || !has) {
			free(pend);
			free(has);
			break;
		}
		for (int i = 0; i < tr->n; i++) {
			const pp_item *it = &tr->items[i];
			int64_t dur = it->end - it->start;
			uint8_t cc = (uint8_t)((it->cat << 5) | (it->kind & 31));
			int d = it->depth < pd_cap ? it->depth : pd_cap - 1;
			tl_ent *p = &pend[d];
			if (dur >= thr) {
				/* a block of its row ends here: it must not reach over the item */
				if (has[d]) {
					ents[ne++] = *p;
					merged_blocks += p->name < 0;
					has[d] = 0;
				}
				ents[ne++] = (tl_ent){it->start, dur, it->name, it->depth, cc};
				continue;
			}
			if (has[d] && it->start - (p->start + p->dur) < gap) {
				int64_t end = it->end > p->start + p->dur ? it->end : p->start + p->dur;
				p->dur = end - p->start;
				p->name = p->name < 0 ? p->name - 1 : -2;
				p->c = 255;
				merged_items++;
				continue;
			}
			if (has[d]) {
				ents[ne++] = *p;
				merged_blocks += p->name < 0;
			}
			*p = (tl_ent){it->start, dur, it->name, (uint16_t)d, cc};
			has[d] = 1;
		}
		for (int d = 0; d < pd_cap; d++)
			if (has[d]) {
				ents[ne++] = pend[d];
				merged_blocks += pend[d].name < 0;
			}
		free(pend);
		free(has);
		pp_sort(ents, (size_t)ne, sizeof *ents, cmp_tl);
		if (t)
			pp_out_putc(o, ',');
		P("{\"n\":");
		pp_out_json_str(o, tr->name);
		pp_out_printf(o, ",\"g\":%d,\"rows\":%d,\"d\":[", tr->gpu, tr->depth > 0 ? tr->depth : 1);
		int64_t prev = 0;
		for (int i = 0; i < ne; i++) {
			const tl_ent *e = &ents[i];
			if (i)
				pp_out_putc(o, ',');
			pp_out_i64(o, e->start - prev);
			pp_out_putc(o, ',');
			pp_out_i64(o, e->dur);
			pp_out_putc(o, ',');
			pp_out_i64(o, e->name);
			pp_out_putc(o, ',');
			pp_out_i64(o, e->depth);
			pp_out_putc(o, ',');
			pp_out_i64(o, e->c);
			prev = e->start;
		}
		P("]}");
	}
	free(ents);
	P("]}</script>\n");
	if (thr > 0 || m->dropped || m->left_out) {
		P("<div class=\"note\">");
		if (thr > 0) {
			pp_out_printf(o, "Level of detail: %lld items recorded; items shorter than ", (long long)m->n_items);
			html_dur(o, thr);
			if (gap > thr) {
				P(" less than ");
				html_dur(o, gap);
				P(" apart");
			}
			pp_out_printf(o, " are merged into %lld grey blocks (%lld items). Every item is in "
				      "<code>phaseprof export --format chrome</code>.", (long long)merged_blocks,
				      (long long)(merged_items + merged_blocks));
		}
		if (m->dropped)
			pp_out_printf(o, " %lld items overlapped too many others on one thread to be placed and are not drawn.",
				      (long long)m->dropped);
		if (m->left_out)
			pp_out_printf(o, " %lld leaf spans past the first %d of their name on a thread are not drawn, "
				      "as a default recording groups them; every one is in <code>phaseprof export "
				      "--format chrome</code> or <code>--format perfetto</code>.",
				      (long long)m->left_out, PP_SPANS_KEPT_PER_NAME);
		P("</div>\n");
	}
}
