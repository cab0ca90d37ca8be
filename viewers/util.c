/* util.c — helpers shared by the backends: string interning, duration
 * formatting, and the queries the report and stats both need. */
#include "view_int.h"

#include "pp_assert.h"
#include "pp_json.h"

#include <stdlib.h>
#include <string.h>

int pp_strtab_add(pp_strtab *t, const char *s)
{
	if (!s)
		s = "";
	uint32_t h = pp_hash_str(s), id;
	for (uint32_t it = 0; pp_hash_next(&t->index, h, &it, &id);) {
		PP_ASSERT(id < (uint32_t)t->n); /* the index names only strings already kept */
		if (strcmp(t->s[id], s) == 0)
			return (int)id;
	}
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

void pp_text_clean(char *s)
{
	if (!s)
		return;
	while (*s) {
		unsigned char c = (unsigned char)*s;
		int n = pp_utf8_len((const unsigned char *)s);
		if (c < 0x20 || c == 0x7f)
			*s++ = ' ';
		else if (n == 0)
			*s++ = '?';
		else
			s += n;
	}
}
