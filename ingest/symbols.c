/* symbols.c — address to function name over a run's modules (symbols.h). */
#include "symbols.h"
#include "elf_file.h"
#include "pp_grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct module {
	char *path;
	uint64_t base, lo, hi;       /* mapped range: base + [min vaddr, max vaddr+memsz) */
	pp_elf elf;
	pp_elf_sym *syms;
	size_t nsyms;
	int loaded;
} module;

struct pp_symbols {
	module *mods;
	size_t n, cap;
};

pp_symbols *pp_symbols_new(void) { return calloc(1, sizeof(pp_symbols)); }

void pp_symbols_free(pp_symbols *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->mods[i].path);
		free(s->mods[i].syms);
		pp_elf_close(&s->mods[i].elf);
	}
	free(s->mods);
	free(s);
}

int pp_symbols_add_module(pp_symbols *s, const char *path, uint64_t base)
{
	if (PP_GROW(s->mods, s->n + 1, s->cap) != 0)
		return -1;
	module *mo = &s->mods[s->n];
	memset(mo, 0, sizeof *mo);
	mo->path = strdup(path ? path : "?");
	if (!mo->path)
		return -1;
	mo->base = base;
	s->n++;
	return 0;
}

static void module_load(module *mo)
{
	mo->loaded = 1;
	if (pp_elf_open(mo->path, &mo->elf) != 0)
		return;
	uint64_t lo, hi;
	if (pp_elf_load_range(&mo->elf, &lo, &hi) == 0 && lo <= UINT64_MAX - mo->base &&
	    hi <= UINT64_MAX - mo->base) {
		mo->lo = mo->base + lo;
		mo->hi = mo->base + hi;
	}
	if (pp_elf_functions(&mo->elf, &mo->syms, &mo->nsyms) != 0)
		mo->nsyms = 0;
}

static module *find_module(pp_symbols *s, uint64_t ip)
{
	for (size_t i = 0; i < s->n; i++) {
		module *mo = &s->mods[i];
		if (!mo->loaded)
			module_load(mo);
		if (ip >= mo->lo && ip < mo->hi)
			return mo;
	}
	return NULL;
}

void pp_symbols_lookup(pp_symbols *s, uint64_t ip, const char **symbol, const char **module_path,
		       char *buf, size_t len)
{
	module *mo = find_module(s, ip);
	if (!mo) {
		snprintf(buf, len, "0x%llx", (unsigned long long)ip);
		*symbol = buf;
		*module_path = "?";
		return;
	}
	*module_path = mo->path;
	uint64_t off = ip - mo->base;
	size_t lo = 0, hi = mo->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (mo->syms[mid].lo <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && off < mo->syms[lo - 1].hi) {
		*symbol = mo->syms[lo - 1].name;
		return;
	}
	const char *slash = strrchr(mo->path, '/');
	snprintf(buf, len, "%s+0x%llx", slash ? slash + 1 : mo->path, (unsigned long long)off);
	*symbol = buf;
}
