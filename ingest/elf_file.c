/* elf_file.c — bounds-checked ELF64 reading (see elf_file.h). */
#include "elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* [off, off + len) lies inside a file of n bytes (no overflow) */
static int in_file(uint64_t off, uint64_t len, size_t n)
{
	return off <= n && len <= n - off;
}

/* count entries of size sz at off lie inside the file */
static int table_in_file(uint64_t off, uint64_t count, size_t sz, size_t n)
{
	return off <= n && count <= (n - off) / sz;
}

static int check(pp_elf *e)
{
	if (e->n < sizeof(Elf64_Ehdr))
		return -2;
	const Elf64_Ehdr *h = (const void *)e->p;
	if (memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 || h->e_ident[EI_CLASS] != ELFCLASS64)
		return -2;
	if (h->e_phnum && (h->e_phentsize != sizeof(Elf64_Phdr) ||
			   !table_in_file(h->e_phoff, h->e_phnum, sizeof(Elf64_Phdr), e->n)))
		return -2;
	if (h->e_shnum && (h->e_shentsize != sizeof(Elf64_Shdr) ||
			   !table_in_file(h->e_shoff, h->e_shnum, sizeof(Elf64_Shdr), e->n)))
		return -2;
	/* the tables are read through typed pointers: they must be aligned */
	if ((h->e_phnum && h->e_phoff % 8) || (h->e_shnum && h->e_shoff % 8))
		return -2;
	return 0;
}

int pp_elf_open_mem(const void *p, size_t n, pp_elf *e)
{
	e->p = p;
	e->n = n;
	int rc = check(e);
	if (rc)
		e->p = NULL;
	return rc;
}

int pp_elf_open(const char *path, pp_elf *e)
{
	e->p = NULL;
	e->n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -2;
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	e->p = p;
	e->n = (size_t)st.st_size;
	int rc = check(e);
	if (rc) {
		munmap(p, e->n);
		e->p = NULL;
	}
	return rc;
}

void pp_elf_close(pp_elf *e)
{
	if (e->p)
		munmap((void *)e->p, e->n);
	e->p = NULL;
}

int pp_elf_is_static(const char *path)
{
	pp_elf e;
	if (pp_elf_open(path, &e) != 0)
		return -1;
	const Elf64_Ehdr *h = (const void *)e.p;
	const Elf64_Phdr *ph = (const void *)(e.p + h->e_phoff);
	int interp = 0;
	for (int i = 0; i < h->e_phnum; i++)
		if (ph[i].p_type == PT_INTERP)
			interp = 1;
	pp_elf_close(&e);
	return !interp;
}

int pp_elf_load_range(const pp_elf *e, uint64_t *lo_out, uint64_t *hi_out)
{
	const Elf64_Ehdr *h = (const void *)e->p;
	const Elf64_Phdr *ph = (const void *)(e->p + h->e_phoff);
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < h->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || ph[i].p_memsz > UINT64_MAX - ph[i].p_vaddr)
			continue;
		if (ph[i].p_vaddr < lo)
			lo = ph[i].p_vaddr;
		if (ph[i].p_vaddr + ph[i].p_memsz > hi)
			hi = ph[i].p_vaddr + ph[i].p_memsz;
	}
	if (hi <= lo)
		return -1;
	*lo_out = lo;
	*hi_out = hi;
	return 0;
}

/* file offset of link-time address va through the PT_LOAD holding it */
static int va_to_off(const pp_elf *e, uint64_t va, uint64_t len, uint64_t *off)
{
	const Elf64_Ehdr *h = (const void *)e->p;
	const Elf64_Phdr *ph = (const void *)(e->p + h->e_phoff);
	for (int i = 0; i < h->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || va < ph[i].p_vaddr || va - ph[i].p_vaddr > ph[i].p_filesz ||
		    len > ph[i].p_filesz - (va - ph[i].p_vaddr))
			continue;
		*off = ph[i].p_offset + (va - ph[i].p_vaddr);
		return in_file(*off, len, e->n) ? 0 : -1;
	}
	return -1;
}

int pp_elf_dynstr_has(const pp_elf *e, const char *s, int whole)
{
	const Elf64_Ehdr *h = (const void *)e->p;
	const Elf64_Phdr *ph = (const void *)(e->p + h->e_phoff);
	for (int i = 0; i < h->e_phnum; i++) {
		if (ph[i].p_type != PT_DYNAMIC || !in_file(ph[i].p_offset, ph[i].p_filesz, e->n) ||
		    ph[i].p_offset % 8)
			continue;
		const Elf64_Dyn *d = (const void *)(e->p + ph[i].p_offset);
		size_t nd = ph[i].p_filesz / sizeof *d;
		uint64_t va = 0, size = 0, off;
		for (size_t j = 0; j < nd && d[j].d_tag != DT_NULL; j++) {
			if (d[j].d_tag == DT_STRTAB)
				va = d[j].d_un.d_ptr;
			else if (d[j].d_tag == DT_STRSZ)
				size = d[j].d_un.d_val;
		}
		if (!va || !size || va_to_off(e, va, size, &off) != 0)
			return 0;
		return memmem(e->p + off, size, s, strlen(s) + (whole ? 1 : 0)) != NULL;
	}
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const pp_elf_sym *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

int pp_elf_functions(const pp_elf *e, pp_elf_sym **out, size_t *nout)
{
	*out = NULL;
	*nout = 0;
	const Elf64_Ehdr *h = (const void *)e->p;
	const Elf64_Shdr *sh = (const void *)(e->p + h->e_shoff);
	static const Elf64_Word kinds[2] = {SHT_SYMTAB, SHT_DYNSYM};
	for (int w = 0; w < 2; w++) {
		for (int i = 0; i < h->e_shnum; i++) {
			if (sh[i].sh_type != kinds[w] || sh[i].sh_link >= h->e_shnum)
				continue;
			const Elf64_Shdr *strs = &sh[sh[i].sh_link];
			if (!in_file(sh[i].sh_offset, sh[i].sh_size, e->n) ||
			    !in_file(strs->sh_offset, strs->sh_size, e->n) || sh[i].sh_offset % 8)
				continue;
			const Elf64_Sym *s = (const void *)(e->p + sh[i].sh_offset);
			const char *str = (const char *)(e->p + strs->sh_offset);
			size_t n = sh[i].sh_size / sizeof *s;
			pp_elf_sym *v = malloc((n ? n : 1) * sizeof *v);
			if (!v)
				return -1;
			size_t k = 0;
			for (size_t j = 0; j < n; j++) {
				if (ELF64_ST_TYPE(s[j].st_info) != STT_FUNC || !s[j].st_value ||
				    s[j].st_shndx == SHN_UNDEF || s[j].st_name >= strs->sh_size ||
				    !memchr(str + s[j].st_name, 0, strs->sh_size - s[j].st_name))
					continue;
				uint64_t size = s[j].st_size ? s[j].st_size : 1;
				v[k].lo = s[j].st_value;
				v[k].hi = size > UINT64_MAX - v[k].lo ? UINT64_MAX : v[k].lo + size;
				v[k].name = str + s[j].st_name;
				k++;
			}
			if (!k) {
				free(v);
				continue;
			}
			qsort(v, k, sizeof *v, cmp_sym);
			*out = v;
			*nout = k;
			return 0;
		}
	}
	return 0;
}
