/*
 * elf_file.h — bounds-checked reading of 64-bit ELF files: whether a program is
 * statically linked, the address range an object maps, and its function
 * symbols. Every offset and count in the file is checked against the file's
 * size before use, so a damaged or hostile file is refused, never read past.
 */
#ifndef PP_ELF_FILE_H
#define PP_ELF_FILE_H

#include <stddef.h>
#include <stdint.h>

typedef struct pp_elf {
	const unsigned char *p;
	size_t n;
} pp_elf;

/* 0; -1 if the file cannot be read; -2 if it is not a 64-bit ELF file
 * whose headers lie inside it. */
int pp_elf_open(const char *path, pp_elf *e);
/* The same over bytes in memory (not copied; for tests and fuzzing). */
int pp_elf_open_mem(const void *p, size_t n, pp_elf *e);
void pp_elf_close(pp_elf *e);

/* 1 statically linked (no PT_INTERP), 0 dynamic, -1 unreadable / not ELF. */
int pp_elf_is_static(const char *path);
/* The mapped range [lo, hi) of the PT_LOAD segments (link-time addresses);
 * -1 if there is none. */
int pp_elf_load_range(const pp_elf *e, uint64_t *lo, uint64_t *hi);

/* 1 if the dynamic string table (found through PT_DYNAMIC: the names of
 * needed libraries and of dynamic symbols) contains the bytes s (with its
 * NUL when whole is set); 0 if not, or there is no such table. Reads only
 * that table, not the whole file. */
int pp_elf_dynstr_has(const pp_elf *e, const char *s, int whole);

typedef struct pp_elf_sym {
	uint64_t lo, hi;             /* link-time address range */
	const char *name;            /* NUL-terminated inside the file */
} pp_elf_sym;
/* Function symbols, from .symtab when present, else .dynsym, sorted by
 * address (malloc'd; free()). 0, or -1 without memory. */
int pp_elf_functions(const pp_elf *e, pp_elf_sym **out, size_t *n);

#endif
