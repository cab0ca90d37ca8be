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
	else if (a >= 100e3)
		snprintf(buf, n, "%.0f us", v / 1e3);
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
