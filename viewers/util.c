/* util.c — helpers shared by the backends: string interning, duration
 * formatting, and the queries the report and stats both need. */
#include "view_int.h"

#include <stdlib.h>
#include <string.h>

const char *pp_fmt_dur(int64_t ns, char *buf, size_t n)
{
	double v = (double)ns;
	double a = v < 0 ? -v : v;
	if (a >= 100e9)
		snprintf(buf, n, "%.0f s", v / 1e9);
	else if (a >= 10e9)
		snprintf(buf, n, "%.1f s", v / 1e9);
	else if (a >= 1e9)
		snprintf(buf, n, "%.2f s", v / 1e9);
	else if (a >= 100e6)
		snprintf(buf, n, "%.0f ms", v / 1e6);
	else if (a >= 10e6)
		snprintf(buf, n, "%.1f ms", v / 1e6);
	else if (a >= 1e6)
		snprintf(buf, n, "%.2f ms", v / 1e6);
	else if (a >= 1e3)
		snprintf(buf, n, "%.1f us", v / 1e3);
	else
		snprintf(buf, n, "%lld ns", (long long)ns);
	return buf;
}

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;   /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

int pp_strtab_add(pp_strtab *t, const char *s)
{
	if (!s)
		s = "";
	if (t->n * 2 >= t->nslots) {
		int ns = t->nslots ? t->nslots * 2 : 256;
		int *slots = calloc((size_t)ns, sizeof *slots);
		if (!slots)
			return 0;
		for (int i = 0; i < t->n; i++) {
			uint32_t h = str_hash(t->s[i]) & (uint32_t)(ns - 1);
			while (slots[h])
				h = (h + 1) & (uint32_t)(ns - 1);
			slots[h] = i + 1;
		}
		free(t->slots);
		t->slots = slots;
		t->nslots = ns;
	}
	uint32_t h = str_hash(s) & (uint32_t)(t->nslots - 1);
	while (t->slots[h]) {
		int i = t->slots[h] - 1;
		if (strcmp(t->s[i], s) == 0)
			return i;
		h = (h + 1) & (uint32_t)(t->nslots - 1);
	}
	if (t->n == t->cap) {
		int nc = t->cap ? t->cap * 2 : 64;
		char **ns = realloc(t->s, (size_t)nc * sizeof *ns);
		if (!ns)
			return 0;
		t->s = ns;
		t->cap = nc;
	}
	t->s[t->n] = strdup(s);
	t->slots[h] = t->n + 1;
	return t->n++;
}

void pp_strtab_free(pp_strtab *t)
{
	for (int i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->slots);
	memset(t, 0, sizeof *t);
}

static void copy_col(char *dst, size_t n, sqlite3_stmt *row, int col)
{
	const unsigned char *s = sqlite3_column_text(row, col);
	snprintf(dst, n, "%s", s ? (const char *)s : "");
}

typedef struct ops_acc {
	pp_op_stat *v;
	int n, cap;
} ops_acc;

static int ops_row(sqlite3_stmt *row, void *ud)
{
	ops_acc *a = ud;
	if (a->n == a->cap) {
		int nc = a->cap ? a->cap * 2 : 32;
		pp_op_stat *nv = realloc(a->v, (size_t)nc * sizeof *nv);
		if (!nv)
			return 1;
		a->v = nv;
		a->cap = nc;
	}
	pp_op_stat *o = &a->v[a->n++];
	memset(o, 0, sizeof *o);
	copy_col(o->name, sizeof o->name, row, 0);
	copy_col(o->type, sizeof o->type, row, 1);
	o->calls = sqlite3_column_int64(row, 2);
	o->total_ns = sqlite3_column_int64(row, 3);
	o->max_ns = sqlite3_column_int64(row, 4);
	o->first_ns = sqlite3_column_int64(row, 5);
	o->steady_calls = sqlite3_column_int64(row, 6);
	o->steady_ns = sqlite3_column_int64(row, 7);
	o->steady_steps = sqlite3_column_int64(row, 8);
	o->first_step = sqlite3_column_type(row, 9) == SQLITE_NULL ? -1 : sqlite3_column_int64(row, 9);
	return 0;
}

int pp_query_ops(pp_store *st, int64_t run_id, int limit, pp_op_stat **out, int *n)
{
	/* s0 = the run's first step; "steady" = every later step. Per-step
	 * means divide by the number of steady steps of the run, so an op that
	 * runs only in the first step shows 0 steady time. */
	char sql[1400];
	snprintf(sql, sizeof sql,
		 "WITH o AS (SELECT name_id, type_id, end_ns - start_ns AS d, step FROM ops"
		 "           WHERE run_id = ?1 AND end_ns IS NOT NULL),"
		 " r AS (SELECT MIN(step) AS s0 FROM o WHERE step >= 0),"
		 " k AS (SELECT COUNT(DISTINCT step) AS ns FROM o, r WHERE o.step > r.s0)"
		 " SELECT n.value, t.value, COUNT(*), SUM(d), MAX(d),"
		 "  SUM(CASE WHEN o.step = r.s0 THEN d ELSE 0 END),"
		 "  SUM(CASE WHEN o.step > r.s0 THEN 1 ELSE 0 END),"
		 "  SUM(CASE WHEN o.step > r.s0 THEN d ELSE 0 END), k.ns, r.s0"
		 " FROM o, r, k LEFT JOIN strings n ON n.id = o.name_id"
		 " LEFT JOIN strings t ON t.id = o.type_id"
		 " GROUP BY o.name_id, o.type_id ORDER BY 4 DESC LIMIT %d",
		 limit > 0 ? limit : 1000000);
	ops_acc a = {0};
	int rc = pp_store_query(st, sql, run_id, ops_row, &a);
	if (rc != 0) {
		free(a.v);
		*out = NULL;
		*n = 0;
		return -1;
	}
	*out = a.v;
	*n = a.n;
	return 0;
}

typedef struct thr_acc {
	pp_thread_row *v;
	int n, cap;
} thr_acc;

static int thr_row(sqlite3_stmt *row, void *ud)
{
	thr_acc *a = ud;
	if (a->n == a->cap) {
		int nc = a->cap ? a->cap * 2 : 16;
		pp_thread_row *nv = realloc(a->v, (size_t)nc * sizeof *nv);
		if (!nv)
			return 1;
		a->v = nv;
		a->cap = nc;
	}
	pp_thread_row *t = &a->v[a->n++];
	t->tid = sqlite3_column_int64(row, 0);
	copy_col(t->name, sizeof t->name, row, 1);
	return 0;
}

int pp_query_threads(pp_store *st, int64_t run_id, pp_thread_row **out, int *n)
{
	thr_acc a = {0};
	int rc = pp_store_query(st, "SELECT tid, name FROM threads WHERE run_id = ?1 ORDER BY first_ns",
				run_id, thr_row, &a);
	*out = a.v;
	*n = a.n;
	return rc == 0 ? 0 : -1;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int64_t pp_median_i64(const int64_t *v, int n)
{
	if (n <= 0)
		return -1;
	int64_t *c = malloc((size_t)n * sizeof *c);
	if (!c)
		return -1;
	memcpy(c, v, (size_t)n * sizeof *c);
	qsort(c, (size_t)n, sizeof *c, cmp_i64);
	int64_t m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
	free(c);
	return m;
}

int pp_pick_baseline(const pp_run_info *runs, const int *idx, int n)
{
	static const char *const slow_names[] = {"slow", "baseline", "original", "before", NULL};
	for (int k = 0; slow_names[k]; k++)
		for (int i = 0; i < n; i++)
			if (strcmp(runs[idx[i]].variant, slow_names[k]) == 0)
				return i;
	int best = 0;
	for (int i = 1; i < n; i++)
		if (runs[idx[i]].duration_ns > runs[idx[best]].duration_ns)
			best = i;
	return best;
}

int64_t pp_run_steady_step(pp_store *st, int64_t run_id, int64_t *first_step)
{
	pp_step_row *s = NULL;
	int n = 0;
	if (first_step)
		*first_step = -1;
	if (pp_store_steps(st, run_id, &s, &n) != 0 || n == 0) {
		free(s);
		return -1;
	}
	if (first_step)
		*first_step = s[0].dur_ns;
	int64_t med = -1;
	if (n > 1) {
		int64_t *d = malloc((size_t)(n - 1) * sizeof *d);
		if (d) {
			for (int i = 1; i < n; i++)
				d[i - 1] = s[i].dur_ns;
			med = pp_median_i64(d, n - 1);
			free(d);
		}
	}
	free(s);
	return med;
}
