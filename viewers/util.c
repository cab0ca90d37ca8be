/* util.c — helpers shared by the backends: string interning, text
 * cleaning, the scenario baseline. Step statistics are diag's
 * (diag_steps.h). */
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
