/*
 * symbols.h — instruction addresses to function names, for CPU samples.
 * Modules are the shared objects a run loaded (path, load base); their ELF
 * symbol tables are read on first use (ingest/include/elf_file.h).
 */
#ifndef PP_SYMBOLS_H
#define PP_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct pp_symbols pp_symbols;

pp_symbols *pp_symbols_new(void);
void pp_symbols_free(pp_symbols *s);
/* A module mapped at base; 0 or -1 without memory. */
int pp_symbols_add_module(pp_symbols *s, const char *path, uint64_t base);
/* The function containing ip and its module's path. Without a symbol the
 * name is "module+0xoffset" (or "0x…" outside every module, module "?"),
 * written into buf. */
void pp_symbols_lookup(pp_symbols *s, uint64_t ip, const char **symbol, const char **module,
		       char *buf, size_t len);

#endif
