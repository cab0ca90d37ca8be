/* util.c — helpers shared by the backends: string interning, duration
 * formatting, and the queries the report and stats both need. */
#include "view_int.h"

#include <stdlib.h>
#include <string.h>

int pp_strtab_add(pp_strtab *t, const char *s)
{
	if (!s)
		s = "";
	uint32_t h = pp_hash_str(s), id;
	for (uint32_t it = 0; pp_hash_next(&t->index, h, &it, &id);)
		if (strcmp(t->s[id], s) == 0)
			return (int)id;
	if (PP_GROW(t->s, t->n + 1, t->cap) != 0)
		return 0;
	char *copy = strdup(s);
	if (!copy || pp_hash_add(&t->index, h, (uint32_t)t->n) != 0) {
		free(copy);
		return 0;
	}
	t->s[t->n] = copy;
	return t->n++;
}

void pp_strtab_free(pp_strtab *t)
{
	for (int i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	pp_hash_free(&t->index);
	memset(t, 0, sizeof *t);
}

static void copy_col(char *dst, size_t n, sqlite3_stmt *row, int col)
{
	const unsigned char *s = sqlite3_column_text(row, col);
	snprintf(dst, n, "%s", s ? (const char *)s : "");
}

/* Ops of a run aggregated in C from one scan of the run's rows: a GROUP BY
 * with the first-step/steady split costs SQLite about a second at 5*10^5
 * ops (index lookups per row); the scan and a hash table take ~0.1 s. */
typedef struct op_raw { int64_t name_id, type_id, dur, step; } op_raw;
typedef struct op_scan {
	op_raw *v;
	int64_t n, cap;
	int failed;
} op_scan;

static int op_scan_row(sqlite3_stmt *row, void *ud)
{
	op_scan *a = ud;
	if (a->n == a->cap) {
		int64_t nc = a->cap ? a->cap * 2 : 4096;
		op_raw *nv = realloc(a->v, (size_t)nc * sizeof *nv);
		if (!nv) {
			a->failed = 1;
			return 1;
		}
		a->v = nv;
		a->cap = nc;
	}
	op_raw *r = &a->v[a->n++];
	r->name_id = sqlite3_column_int64(row, 0);
	r->type_id = sqlite3_column_int64(row, 1);
	r->dur = sqlite3_column_int64(row, 3) - sqlite3_column_int64(row, 2);
	r->step = sqlite3_column_type(row, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(row, 4);
	return 0;
}

static int cmp_i64(const void *a, const void *b);

static int cmp_op_total(const void *a, const void *b)
{
	const pp_op_stat *x = a, *y = b;
	return (y->total_ns > x->total_ns) - (y->total_ns < x->total_ns);
}

static int name_row(sqlite3_stmt *row, void *ud)
{
	const unsigned char *s = sqlite3_column_text(row, 0);
	snprintf(ud, 128, "%s", s ? (const char *)s : "");
	return 0;
}

int pp_query_ops(pp_store *st, int64_t run_id, int limit, pp_op_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	op_scan sc = {0};
	if (pp_store_query(st, "SELECT name_id, type_id, start_ns, end_ns, step FROM ops"
			   " WHERE run_id = ?1 AND end_ns IS NOT NULL", run_id, op_scan_row, &sc) != 0 || sc.failed) {
		free(sc.v);
		return -1;
	}
	if (sc.n == 0) {
		free(sc.v);
		return 0;
	}
	/* s0 = the run's first step; steady = every later step */
	int64_t *steps = malloc((size_t)sc.n * sizeof *steps), ns = 0;
	if (!steps) {
		free(sc.v);
		return -1;
	}
	for (int64_t i = 0; i < sc.n; i++)
		if (sc.v[i].step >= 0)
			steps[ns++] = sc.v[i].step;
	pp_sort(steps, (size_t)ns, sizeof *steps, cmp_i64);
	int64_t s0 = ns ? steps[0] : -1, distinct_later = 0;
	for (int64_t i = 0; i < ns; i++)
		if (steps[i] > s0 && (i == 0 || steps[i] != steps[i - 1]))
			distinct_later++;
	free(steps);
	/* (name, type) → aggregate, open addressing */
	int64_t nslots = 64;
	while (nslots < sc.n * 2 && nslots < (1 << 24))
		nslots *= 2;
	int *slot = calloc((size_t)nslots, sizeof *slot);
	pp_op_stat *agg = NULL;
	int nagg = 0, cap = 0;
	int64_t (*keys)[2] = NULL;
	int rc = -1;
	if (!slot)
		goto done;
	for (int64_t i = 0; i < sc.n; i++) {
		const op_raw *r = &sc.v[i];
		uint64_t h = ((uint64_t)r->name_id * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)r->type_id * 0xC2B2AE3D27D4EB4Full);
		int64_t sidx = (int64_t)(h >> 7) & (nslots - 1);
		int k;
		for (;;) {
			k = slot[sidx] - 1;
			if (k < 0 || (keys[k][0] == r->name_id && keys[k][1] == r->type_id))
				break;
			sidx = (sidx + 1) & (nslots - 1);
		}
		if (k < 0) {
			if (nagg == cap || nagg * 2 >= nslots) {
				if (nagg * 2 >= nslots)
					goto done;   /* cannot happen: nslots >= 2 * rows */
				cap = cap ? cap * 2 : 64;
				pp_op_stat *na = realloc(agg, (size_t)cap * sizeof *na);
				int64_t (*nk)[2] = realloc(keys, (size_t)cap * sizeof *nk);
				if (na)
					agg = na;
				if (nk)
					keys = nk;
				if (!na || !nk)
					goto done;
			}
			k = nagg++;
			memset(&agg[k], 0, sizeof agg[k]);
			keys[k][0] = r->name_id;
			keys[k][1] = r->type_id;
			slot[sidx] = k + 1;
		}
		pp_op_stat *o = &agg[k];
		o->calls++;
		o->total_ns += r->dur;
		if (r->dur > o->max_ns)
			o->max_ns = r->dur;
		if (r->step >= 0 && r->step == s0)
			o->first_ns += r->dur;
		else if (r->step > s0) {
			o->steady_calls++;
			o->steady_ns += r->dur;
		}
	}
	for (int k = 0; k < nagg; k++) {
		agg[k].steady_steps = distinct_later;
		agg[k].first_step = s0;
		/* remember the ids in the name fields until the top-N is known */
		memcpy(agg[k].name, &keys[k][0], sizeof(int64_t));
		memcpy(agg[k].type, &keys[k][1], sizeof(int64_t));
	}
	pp_sort(agg, (size_t)nagg, sizeof *agg, cmp_op_total);
	if (limit > 0 && nagg > limit)
		nagg = limit;
	for (int k = 0; k < nagg; k++) {
		int64_t nid, tid;
		memcpy(&nid, agg[k].name, sizeof nid);
		memcpy(&tid, agg[k].type, sizeof tid);
		agg[k].name[0] = agg[k].type[0] = 0;
		agg[k].name_id = nid;
		pp_store_query(st, "SELECT value FROM strings WHERE id = ?1", nid, name_row, agg[k].name);
		char t[128] = "";
		pp_store_query(st, "SELECT value FROM strings WHERE id = ?1", tid, name_row, t);
		snprintf(agg[k].type, sizeof agg[k].type, "%.63s", t);
	}
	*out = agg;
	*n = nagg;
	agg = NULL;
	rc = 0;
done:
	free(agg);
	free(keys);
	free(slot);
	free(sc.v);
	return rc;
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
	pp_sort(c, (size_t)n, sizeof *c, cmp_i64);
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
