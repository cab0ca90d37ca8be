/*
 * cmd_record.c — `phaseprof record [-o run.db] [options] -- CMD ARGS…`
 *
 * Runs an unmodified program with libphaseprof-agent.so preloaded (and
 * loaded as its rtld-audit module), waits for it, ingests every spool the
 * session left (one per process image: the program, its forks, its execs,
 * its posix_spawn children; parents first, each child linked to its parent
 * run), symbolises CPU samples, prints a start-up summary on stderr and
 * exits with the program's status (128 + signal when it was killed).
 */
#include "cli.h"
#include "diagnostics.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spool.h"

const char cmd_record_summary[] = "run a program under the LD_PRELOAD agent and record it";

extern char **environ;

static void usage(FILE *out)
{
	fprintf(out,
		"usage: phaseprof record [-o run.db] [--sample HZ] [--mode default|detailed]\n"
		"                        [--no-follow-fork] [--keep-spools] -- CMD [ARGS...]\n"
		"\n"
		"Runs CMD with the phaseprof agent preloaded and records start-up (time to\n"
		"main, every shared object loaded: mapping vs relocation+constructors),\n"
		"allocations, file I/O, mmap, threads, forks/execs and optional CPU samples\n"
		"into run.db (default phaseprof.db; runs are appended). CMD's input, output\n"
		"and exit status are left as they are.\n"
		"\n"
		"  -o FILE            database to write (appended to if it exists)\n"
		"  --sample HZ        CPU sampling at HZ per thread (libunwind), 1..10000\n"
		"  --mode detailed    also record one allocation event in PHASEPROF_ALLOC_SAMPLE (1000)\n"
		"  --no-follow-fork   record only the first process (and what it execs)\n"
		"  --keep-spools      keep the raw spool files and print their folder\n");
}

/* ---------------------------------------------------------------- ELF */

typedef struct elf_map {
	const unsigned char *p;
	size_t n;
} elf_map;

static int elf_open(const char *path, elf_map *m)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -1;
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	m->p = p;
	m->n = (size_t)st.st_size;
	const Elf64_Ehdr *e = p;
	if (memcmp(e->e_ident, ELFMAG, SELFMAG) != 0 || e->e_ident[EI_CLASS] != ELFCLASS64 ||
	    e->e_phoff + (size_t)e->e_phnum * sizeof(Elf64_Phdr) > m->n ||
	    e->e_shoff + (size_t)e->e_shnum * sizeof(Elf64_Shdr) > m->n) {
		munmap(p, m->n);
		return -2; /* not a 64-bit ELF file we can read */
	}
	return 0;
}

static void elf_close(elf_map *m)
{
	if (m->p)
		munmap((void *)m->p, m->n);
	m->p = NULL;
}

/* 1 static, 0 dynamic, -1 unreadable / not ELF */
static int elf_is_static(const char *path)
{
	elf_map m = {0};
	if (elf_open(path, &m) != 0)
		return -1;
	const Elf64_Ehdr *e = (const void *)m.p;
	const Elf64_Phdr *ph = (const void *)(m.p + e->e_phoff);
	int interp = 0;
	for (int i = 0; i < e->e_phnum; i++)
		if (ph[i].p_type == PT_INTERP)
			interp = 1;
	elf_close(&m);
	return !interp;
}

/* ---------------------------------------------------------------- checks */

static int find_in_path(const char *cmd, char *out, size_t outlen)
{
	if (strchr(cmd, '/')) {
		snprintf(out, outlen, "%s", cmd);
		return access(out, F_OK) == 0 ? 0 : -1;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int found_noexec = 0;
	for (const char *p = path; *p;) {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		snprintf(out, outlen, "%.*s/%s", (int)n, n ? p : ".", cmd);
		struct stat st;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			found_noexec = 1;
		}
		p = e ? e + 1 : p + n;
	}
	return found_noexec ? -2 : -1;
}

/* Refuses what LD_PRELOAD cannot wrap. Returns 0 or prints why and returns 1. */
static int check_command(const char *cmd, char *resolved, size_t len)
{
	int r = find_in_path(cmd, resolved, len);
	if (r == -1) {
		cli_error("record: %s: command not found", cmd);
		return 1;
	}
	if (r == -2) {
		cli_error("record: %s: found in PATH but not executable", cmd);
		return 1;
	}
	struct stat st;
	if (stat(resolved, &st) != 0) {
		cli_error("record: %s: %s", resolved, strerror(errno));
		return 1;
	}
	if (!S_ISREG(st.st_mode)) {
		cli_error("record: %s: not a regular file", resolved);
		return 1;
	}
	if (access(resolved, X_OK) != 0) {
		cli_error("record: %s: not executable (permission denied)", resolved);
		return 1;
	}
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		cli_error("record: %s: set-user/group-ID program; the loader ignores LD_PRELOAD for it, "
			  "so it cannot be recorded", resolved);
		return 1;
	}
	const char *target = resolved;
	char interp[PATH_MAX];
	int fd = open(resolved, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char head[PATH_MAX + 3];
		ssize_t n = read(fd, head, sizeof head - 1);
		close(fd);
		if (n > 2 && head[0] == '#' && head[1] == '!') {
			/* a script: what matters is its interpreter */
			head[n] = 0;
			char *s = head + 2;
			while (*s == ' ' || *s == '\t')
				s++;
			size_t k = strcspn(s, " \t\n");
			snprintf(interp, sizeof interp, "%.*s", (int)k, s);
			target = interp;
			if (stat(interp, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID))) {
				cli_error("record: %s: its interpreter %s is set-user/group-ID and cannot be recorded",
					  resolved, interp);
				return 1;
			}
		}
	}
	int s = elf_is_static(target);
	if (s == 1) {
		cli_error("record: %s: statically linked; LD_PRELOAD cannot wrap it (no dynamic loader runs)",
			  target);
		return 1;
	}
	return 0;
}

/* ---------------------------------------------------------------- spools */

typedef struct spool_info {
	char path[PATH_MAX];
	uint32_t pid, ppid;
	uint64_t start_mono;
	int64_t run_id;
	int exit_code, exit_signal; /* from the agent's metadata, -1 / 0 if none */
	int agent_closed;           /* the agent wrote its final rows */
	char end[16];
} spool_info;

/* Reads the header and the agent's META chunks (exit status, how it ended). */
static int spool_scan(const char *path, spool_info *si)
{
	elf_map m = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(pp_spool_header)) {
		close(fd);
		return -1;
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	m.p = p;
	m.n = (size_t)st.st_size;
	const pp_spool_header *h = p;
	if (memcmp(h->magic, PP_SPOOL_MAGIC, 8) != 0) {
		elf_close(&m);
		return -1;
	}
	si->pid = h->pid;
	si->ppid = h->ppid;
	si->start_mono = h->start_mono_ns;
	si->exit_code = -1;
	si->exit_signal = 0;
	size_t off = h->header_size ? h->header_size : sizeof *h;
	while (off + sizeof(pp_chunk_header) <= m.n) {
		const pp_chunk_header *c = (const void *)(m.p + off);
		if (c->magic != PP_CHUNK_MAGIC || off + sizeof *c + c->size > m.n)
			break;
		const char *pl = (const char *)(c + 1);
		if (c->type == PP_CHUNK_META && c->size > 2) {
			const char *k = pl, *v = memchr(pl, 0, c->size);
			if (v && (size_t)(v + 1 - pl) < c->size) {
				v++;
				size_t vl = strnlen(v, c->size - (size_t)(v - pl));
				char val[16];
				snprintf(val, sizeof val, "%.*s", (int)(vl < 15 ? vl : 15), v);
				if (strcmp(k, "agent.exit_code") == 0)
					si->exit_code = atoi(val);
				else if (strcmp(k, "agent.exit_signal") == 0)
					si->exit_signal = atoi(val);
				else if (strcmp(k, "agent.end") == 0) {
					si->agent_closed = 1;
					snprintf(si->end, sizeof si->end, "%s", val);
				}
			}
		}
		off += sizeof *c + ((c->size + 7u) & ~7u);
	}
	elf_close(&m);
	return 0;
}

static int cmp_spool(const void *a, const void *b)
{
	const spool_info *x = a, *y = b;
	if (x->start_mono != y->start_mono)
		return x->start_mono < y->start_mono ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* ---------------------------------------------------------------- symbols */

typedef struct sym { uint64_t lo, hi; const char *name; } sym;
typedef struct module {
	char *path;
	uint64_t base, lo, hi;    /* mapped range: base + [min vaddr, max vaddr+memsz) */
	elf_map m;
	sym *syms;
	size_t nsyms;
	int loaded;
} module;

static int cmp_sym(const void *a, const void *b)
{
	const sym *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void module_load(module *mo)
{
	mo->loaded = 1;
	if (elf_open(mo->path, &mo->m) != 0)
		return;
	const Elf64_Ehdr *e = (const void *)mo->m.p;
	const Elf64_Phdr *ph = (const void *)(mo->m.p + e->e_phoff);
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < e->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			if (ph[i].p_vaddr < lo)
				lo = ph[i].p_vaddr;
			if (ph[i].p_vaddr + ph[i].p_memsz > hi)
				hi = ph[i].p_vaddr + ph[i].p_memsz;
		}
	if (hi > lo) {
		mo->lo = mo->base + lo;
		mo->hi = mo->base + hi;
	}
	const Elf64_Shdr *sh = (const void *)(mo->m.p + e->e_shoff);
	/* .symtab when not stripped, else .dynsym */
	static const Elf64_Word kinds[2] = {SHT_SYMTAB, SHT_DYNSYM};
	for (int w = 0; w < 2 && !mo->nsyms; w++) {
		for (int i = 0; i < e->e_shnum; i++) {
			if (sh[i].sh_type != kinds[w] || sh[i].sh_link >= e->e_shnum)
				continue;
			const Elf64_Shdr *strs = &sh[sh[i].sh_link];
			if (sh[i].sh_offset + sh[i].sh_size > mo->m.n || strs->sh_offset + strs->sh_size > mo->m.n)
				continue;
			const Elf64_Sym *s = (const void *)(mo->m.p + sh[i].sh_offset);
			size_t n = sh[i].sh_size / sizeof *s;
			free(mo->syms);
			mo->nsyms = 0;
			mo->syms = malloc((n ? n : 1) * sizeof *mo->syms);
			if (!mo->syms)
				return;
			for (size_t j = 0; j < n; j++) {
				if (ELF64_ST_TYPE(s[j].st_info) != STT_FUNC || !s[j].st_value || s[j].st_shndx == SHN_UNDEF ||
				    s[j].st_name >= strs->sh_size)
					continue;
				sym *y = &mo->syms[mo->nsyms++];
				y->lo = s[j].st_value;
				y->hi = s[j].st_value + (s[j].st_size ? s[j].st_size : 1);
				y->name = (const char *)(mo->m.p + strs->sh_offset + s[j].st_name);
			}
			break;
		}
	}
	qsort(mo->syms, mo->nsyms, sizeof *mo->syms, cmp_sym);
}

static const char *module_symbol(module *mo, uint64_t ip, char *buf, size_t len)
{
	uint64_t off = ip - mo->base;
	size_t lo = 0, hi = mo->nsyms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (mo->syms[mid].lo <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && off < mo->syms[lo - 1].hi)
		return mo->syms[lo - 1].name;
	snprintf(buf, len, "%s+0x%llx", strrchr(mo->path, '/') ? strrchr(mo->path, '/') + 1 : mo->path,
		 (unsigned long long)off);
	return buf;
}

typedef struct sym_ctx {
	module *mods;
	int nmods, capmods;
} sym_ctx;

static int lib_row(sqlite3_stmt *row, void *ud)
{
	sym_ctx *c = ud;
	if (c->nmods == c->capmods) {
		int cap = c->capmods ? c->capmods * 2 : 64;
		module *m = realloc(c->mods, (size_t)cap * sizeof *m);
		if (!m)
			return 1;
		c->mods = m;
		c->capmods = cap;
	}
	module *mo = &c->mods[c->nmods++];
	memset(mo, 0, sizeof *mo);
	const char *p = (const char *)sqlite3_column_text(row, 0);
	mo->path = strdup(p ? p : "?");
	mo->base = (uint64_t)sqlite3_column_int64(row, 1);
	return 0;
}

static module *find_module(sym_ctx *c, uint64_t ip)
{
	for (int i = 0; i < c->nmods; i++) {
		module *mo = &c->mods[i];
		if (!mo->loaded)
			module_load(mo);
		if (ip >= mo->lo && ip < mo->hi)
			return mo;
	}
	return NULL;
}

/* stack tree node and frame keys, in small open-addressing tables */
typedef struct kv { uint64_t a, b; int64_t v; } kv;
typedef struct table { kv *e; size_t cap, n; } table;

static int64_t table_get(table *t, uint64_t a, uint64_t b)
{
	if (!t->cap)
		return 0;
	size_t i = (size_t)((a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full)) & (t->cap - 1);
	while (t->e[i].v) {
		if (t->e[i].a == a && t->e[i].b == b)
			return t->e[i].v;
		i = (i + 1) & (t->cap - 1);
	}
	return 0;
}

static int table_put(table *t, uint64_t a, uint64_t b, int64_t v)
{
	if ((t->n + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		kv *e = calloc(cap, sizeof *e);
		if (!e)
			return -1;
		for (size_t j = 0; j < t->cap; j++)
			if (t->e[j].v) {
				size_t i = (size_t)((t->e[j].a * 0x9E3779B97F4A7C15ull) ^ (t->e[j].b * 0xC2B2AE3D27D4EB4Full)) & (cap - 1);
				while (e[i].v)
					i = (i + 1) & (cap - 1);
				e[i] = t->e[j];
			}
		free(t->e);
		t->e = e;
		t->cap = cap;
	}
	size_t i = (size_t)((a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full)) & (t->cap - 1);
	while (t->e[i].v)
		i = (i + 1) & (t->cap - 1);
	t->e[i] = (kv){a, b, v};
	t->n++;
	return 0;
}

/* a Python frame (p<id>) among the native addresses: no user address has bit 63 */
#define PY_TAG (1ull << 63)

typedef struct raw_sample { int64_t rowid; char *ips; } raw_sample;
typedef struct raw_list { raw_sample *v; int n, cap; } raw_list;

static int raw_row(sqlite3_stmt *row, void *ud)
{
	raw_list *l = ud;
	if (l->n == l->cap) {
		int cap = l->cap ? l->cap * 2 : 256;
		raw_sample *v = realloc(l->v, (size_t)cap * sizeof *v);
		if (!v)
			return 1;
		l->v = v;
		l->cap = cap;
	}
	const char *t = (const char *)sqlite3_column_text(row, 1);
	l->v[l->n].rowid = sqlite3_column_int64(row, 0);
	l->v[l->n].ips = strdup(t ? t : "");
	l->n++;
	return 0;
}

/* The agent stores raw addresses (text) in samples.stack; turn them into
 * frames (one per distinct function), a stack tree and node ids. */
static int symbolise_run(pp_store *st, int64_t run_id, int64_t *n_samples)
{
	sqlite3 *db = pp_store_db(st);
	raw_list raw = {0};
	pp_store_query(st, "SELECT rowid, stack FROM samples WHERE run_id = ?1 AND typeof(stack) = 'text'",
		       run_id, raw_row, &raw);
	*n_samples = raw.n;
	if (!raw.n)
		return 0;
	sym_ctx c = {0};
	pp_store_query(st, "SELECT p.value, l.base FROM libraries l JOIN strings p ON p.id = l.path_id"
			   " WHERE l.run_id = ?1 ORDER BY l.base DESC", run_id, lib_row, &c);
	pp_py_frames pyf = {0};
	if (pp_store_py_frames(st, run_id, &pyf) != 0)
		return -1;
	table frames = {0}, nodes = {0}, sym_frames = {0};
	int64_t next_frame = 1, next_node = 1;
	sqlite3_stmt *ins_frame = NULL, *ins_stack = NULL, *upd = NULL;
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	sqlite3_prepare_v2(db, "INSERT INTO frames(id, run_id, ip, symbol_id, module_id) VALUES(?,?,?,?,?)", -1, &ins_frame, NULL);
	sqlite3_prepare_v2(db, "INSERT INTO stacks(id, run_id, parent, frame) VALUES(?,?,?,?)", -1, &ins_stack, NULL);
	sqlite3_prepare_v2(db, "UPDATE samples SET stack = ? WHERE rowid = ?", -1, &upd, NULL);
	int rc = 0;
	for (int s = 0; s < raw.n && ins_frame && ins_stack && upd; s++) {
		/* leaf first: native addresses in hex, Python frames as p<id> */
		uint64_t ips[192];
		int n = 0;
		for (char *p = raw.v[s].ips; *p && n < 192;) {
			char *end;
			uint64_t v = *p == 'p' ? PY_TAG | strtoull(p + 1, &end, 10) : strtoull(p, &end, 16);
			if (end == p || (*end && *end != ','))
				break;
			ips[n++] = v;
			p = *end ? end + 1 : end;
		}
		int64_t parent = 0;
		for (int k = n - 1; k >= 0; k--) { /* root first */
			uint64_t ip = ips[k];
			int64_t f = table_get(&frames, ip, 0);
			if (!f && (ip & PY_TAG)) {
				const pp_py_frame *pf = pp_py_frames_find(&pyf, (int64_t)(ip & ~PY_TAG));
				int64_t sid = pf ? pf->symbol_id : pp_store_intern(st, "[python frame unreadable]");
				int64_t mid = pf ? pf->module_id : pp_store_intern(st, "python");
				f = table_get(&sym_frames, (uint64_t)sid, (uint64_t)mid);
				if (!f) {
					f = next_frame++;
					sqlite3_reset(ins_frame);
					sqlite3_bind_int64(ins_frame, 1, f);
					sqlite3_bind_int64(ins_frame, 2, run_id);
					sqlite3_bind_null(ins_frame, 3);
					sqlite3_bind_int64(ins_frame, 4, sid);
					sqlite3_bind_int64(ins_frame, 5, mid);
					if (sqlite3_step(ins_frame) != SQLITE_DONE)
						rc = -1;
					table_put(&sym_frames, (uint64_t)sid, (uint64_t)mid, f);
				}
				table_put(&frames, ip, 0, f);
			}
			if (!f) {
				/* return addresses point after the call: look up ip-1 */
				uint64_t look = k == 0 ? ip : ip - 1;
				module *mo = find_module(&c, look);
				char buf[512];
				const char *name = mo ? module_symbol(mo, look, buf, sizeof buf) : NULL;
				if (!mo) {
					snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)ip);
					name = buf;
				}
				int64_t sid = pp_store_intern(st, name);
				int64_t mid = pp_store_intern(st, mo ? mo->path : "?");
				f = table_get(&sym_frames, (uint64_t)sid, (uint64_t)mid);
				if (!f) {
					f = next_frame++;
					sqlite3_reset(ins_frame);
					sqlite3_bind_int64(ins_frame, 1, f);
					sqlite3_bind_int64(ins_frame, 2, run_id);
					sqlite3_bind_int64(ins_frame, 3, (int64_t)ip);
					sqlite3_bind_int64(ins_frame, 4, sid);
					sqlite3_bind_int64(ins_frame, 5, mid);
					if (sqlite3_step(ins_frame) != SQLITE_DONE)
						rc = -1;
					table_put(&sym_frames, (uint64_t)sid, (uint64_t)mid, f);
				}
				table_put(&frames, ip, 0, f);
			}
			int64_t node = table_get(&nodes, (uint64_t)parent, (uint64_t)f);
			if (!node) {
				node = next_node++;
				sqlite3_reset(ins_stack);
				sqlite3_bind_int64(ins_stack, 1, node);
				sqlite3_bind_int64(ins_stack, 2, run_id);
				if (parent)
					sqlite3_bind_int64(ins_stack, 3, parent);
				else
					sqlite3_bind_null(ins_stack, 3);
				sqlite3_bind_int64(ins_stack, 4, f);
				if (sqlite3_step(ins_stack) != SQLITE_DONE)
					rc = -1;
				table_put(&nodes, (uint64_t)parent, (uint64_t)f, node);
			}
			parent = node;
		}
		sqlite3_reset(upd);
		if (parent)
			sqlite3_bind_int64(upd, 1, parent);
		else
			sqlite3_bind_null(upd, 1);
		sqlite3_bind_int64(upd, 2, raw.v[s].rowid);
		if (sqlite3_step(upd) != SQLITE_DONE)
			rc = -1;
	}
	sqlite3_finalize(ins_frame);
	sqlite3_finalize(ins_stack);
	sqlite3_finalize(upd);
	sqlite3_exec(db, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
	for (int i = 0; i < raw.n; i++)
		free(raw.v[i].ips);
	free(raw.v);
	for (int i = 0; i < c.nmods; i++) {
		free(c.mods[i].path);
		free(c.mods[i].syms);
		elf_close(&c.mods[i].m);
	}
	free(c.mods);
	free(frames.e);
	free(nodes.e);
	free(sym_frames.e);
	pp_py_frames_free(&pyf);
	return rc;
}

/* Splits each load batch's "relocation + constructors" time with the CPU
 * samples taken inside it: a sample whose innermost frame is in the dynamic
 * loader is relocation / symbol lookup; one with the loader further up the
 * stack (call_init into the object) is a constructor. Needs --sample; rows
 * keep NULL where fewer than 3 samples fell into the window. */
static const char split_sql[] =
	"WITH RECURSIVE up(sample, ts, node, leaf) AS ("
	"  SELECT s.rowid, s.ts_ns, s.stack, 1 FROM samples s WHERE s.run_id = ?1 AND s.ts_ns BETWEEN ?2 AND ?3"
	"  UNION ALL SELECT up.sample, up.ts, k.parent, 0 FROM up JOIN stacks k ON k.run_id = ?1 AND k.id = up.node"
	"  WHERE k.parent IS NOT NULL),"
	" cls AS (SELECT up.sample,"
	"  MAX(up.leaf = 1 AND m.value LIKE '%/ld-linux%') AS leaf_ld, MAX(m.value LIKE '%/ld-linux%') AS any_ld"
	"  FROM up JOIN stacks k ON k.run_id = ?1 AND k.id = up.node"
	"  JOIN frames f ON f.run_id = ?1 AND f.id = k.frame JOIN strings m ON m.id = f.module_id GROUP BY up.sample)"
	" SELECT COALESCE(SUM(leaf_ld), 0), COALESCE(SUM(any_ld AND NOT leaf_ld), 0) FROM cls";

static void split_load_time(pp_store *st, int64_t run_id)
{
	sqlite3 *db = pp_store_db(st);
	sqlite3_stmt *rows = NULL, *cnt = NULL, *upd = NULL;
	if (sqlite3_prepare_v2(db, "SELECT rowid, mapped_ns, end_ns FROM libraries WHERE run_id = ?1 AND depth <= 1"
				   " AND end_ns > mapped_ns", -1, &rows, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, split_sql, -1, &cnt, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "UPDATE libraries SET reloc_ns = ?1, ctor_ns = ?2 WHERE rowid = ?3", -1, &upd,
			       NULL) != SQLITE_OK) {
		cli_error("record: run %lld: cannot split load times: %s", (long long)run_id, sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_int64(rows, 1, run_id);
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	while (sqlite3_step(rows) == SQLITE_ROW) {
		int64_t rowid = sqlite3_column_int64(rows, 0);
		int64_t mapped = sqlite3_column_int64(rows, 1), end = sqlite3_column_int64(rows, 2);
		sqlite3_reset(cnt);
		sqlite3_bind_int64(cnt, 1, run_id);
		sqlite3_bind_int64(cnt, 2, mapped);
		sqlite3_bind_int64(cnt, 3, end);
		if (sqlite3_step(cnt) != SQLITE_ROW)
			continue;
		int64_t reloc = sqlite3_column_int64(cnt, 0), ctor = sqlite3_column_int64(cnt, 1);
		if (reloc + ctor < 3)
			continue;
		int64_t span = end - mapped, r = span * reloc / (reloc + ctor);
		sqlite3_reset(upd);
		sqlite3_bind_int64(upd, 1, r);
		sqlite3_bind_int64(upd, 2, span - r);
		sqlite3_bind_int64(upd, 3, rowid);
		sqlite3_step(upd);
	}
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
out:
	sqlite3_finalize(rows);
	sqlite3_finalize(cnt);
	sqlite3_finalize(upd);
}

/* ---------------------------------------------------------------- summary */

static int one_i64(sqlite3_stmt *row, void *ud)
{
	int64_t *v = ud;
	for (int i = 0; i < sqlite3_column_count(row); i++)
		v[i] = sqlite3_column_type(row, i) == SQLITE_NULL ? 0 : sqlite3_column_int64(row, i);
	return 0;
}

static int64_t meta_i64(pp_store *st, int64_t run, const char *key, int64_t def)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT CAST(value AS INTEGER), 1 FROM run_meta WHERE run_id = ?1 AND key = '%s'", key);
	int64_t v[2] = {def, 0};
	pp_store_query(st, sql, run, one_i64, v);
	return v[1] ? v[0] : def;
}

static double ms(int64_t ns) { return (double)ns / 1e6; }

static void human_bytes(int64_t b, char *out, size_t len)
{
	const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int i = 0;
	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(out, len, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

/* The start-up question for one run, on stderr. */
static void summarise_run(pp_store *st, int64_t run, int64_t wall_ns)
{
	int64_t loader = meta_i64(st, run, "agent.loader_start_ns", INT64_MIN);
	/* main's first instruction when the agent saw it, else la_preinit */
	int64_t preinit = meta_i64(st, run, "agent.main_ns", INT64_MIN);
	if (preinit == INT64_MIN)
		preinit = meta_i64(st, run, "agent.preinit_ns", INT64_MIN);
	int64_t end = meta_i64(st, run, "agent.end_ns", INT64_MIN);
	int64_t t0 = loader != INT64_MIN ? loader : 0;
	if (wall_ns <= 0 && end != INT64_MIN)
		wall_ns = end - t0;

	int64_t lib[4] = {0};
	pp_store_query(st, "SELECT COUNT(*), SUM(via IN ('dlopen','dependency','dlmopen')), SUM(depth <= 1 AND via <> 'exec'), 0"
			   " FROM libraries WHERE run_id = ?1", run, one_i64, lib);
	/* start-up batch: exec row; dlopen batches: depth 1 rows */
	int64_t su[3] = {0}, dl[3] = {0};
	pp_store_query(st, "SELECT COALESCE(SUM(mapped_ns - open_ns),0), COALESCE(SUM(end_ns - mapped_ns),0), COUNT(*)"
			   " FROM libraries WHERE run_id = ?1 AND via = 'exec' AND end_ns IS NOT NULL", run, one_i64, su);
	pp_store_query(st, "SELECT COALESCE(SUM(mapped_ns - open_ns),0), COALESCE(SUM(end_ns - mapped_ns),0), COUNT(*)"
			   " FROM libraries WHERE run_id = ?1 AND depth = 1 AND end_ns IS NOT NULL", run, one_i64, dl);
	int64_t al[5] = {0};
	pp_store_query(st, "SELECT a.count, a.bytes, a.time_ns, a.peak, a.in_use FROM allocations a JOIN strings s ON s.id = a.source_id"
			   " WHERE a.run_id = ?1 AND a.kind = 'total' AND s.value = 'malloc'", run, one_i64, al);
	int64_t fr[1] = {0};
	pp_store_query(st, "SELECT COALESCE(SUM(a.count),0) FROM allocations a JOIN strings s ON s.id = a.source_id"
			   " WHERE a.run_id = ?1 AND a.kind = 'free' AND s.value = 'malloc'", run, one_i64, fr);
	int64_t io[6] = {0};
	pp_store_query(st, "SELECT COUNT(DISTINCT CASE WHEN i.op = 'open' THEN i.path_id END),"
			   " COALESCE(SUM(CASE WHEN i.op IN ('read','fread') THEN i.calls END),0),"
			   " COALESCE(SUM(CASE WHEN i.op IN ('read','fread') THEN i.bytes END),0),"
			   " COALESCE(SUM(CASE WHEN i.op IN ('read','fread') THEN i.small_calls END),0),"
			   " COALESCE(SUM(i.time_ns),0),"
			   " COALESCE(SUM(CASE WHEN i.op = 'open_failed' THEN i.calls END),0)"
			   " FROM io i JOIN strings p ON p.id = i.path_id WHERE i.run_id = ?1"
			   " AND p.value NOT LIKE 'pipe:%' AND p.value NOT LIKE 'socket:%' AND p.value NOT LIKE '/dev/%'",
		       run, one_i64, io);

	char b1[32], b2[32];
	if (loader != INT64_MIN && preinit != INT64_MIN)
		fprintf(stderr, "  before main   %8.1f ms  (from the loader's start to main)\n", ms(preinit - loader));
	if (lib[0])
		fprintf(stderr, "  libraries     %8lld loaded, %lld through dlopen (%lld dlopen calls)\n",
			(long long)lib[0], (long long)lib[1], (long long)dl[2]);
	if (su[2])
		fprintf(stderr, "    at start-up %8.1f ms mapping, %.1f ms relocation + constructors\n", ms(su[0]), ms(su[1]));
	if (dl[2])
		fprintf(stderr, "    dlopen      %8.1f ms mapping, %.1f ms relocation + constructors\n", ms(dl[0]), ms(dl[1]));
	int64_t sp[3] = {0};
	pp_store_query(st, "SELECT COALESCE(SUM(reloc_ns),0), COALESCE(SUM(ctor_ns),0), COUNT(reloc_ns)"
			   " FROM libraries WHERE run_id = ?1 AND depth <= 1", run, one_i64, sp);
	if (sp[2])
		fprintf(stderr, "    split by CPU samples: %.1f ms relocation / symbol lookup, %.1f ms constructors"
			" (%lld loads)\n", ms(sp[0]), ms(sp[1]), (long long)sp[2]);
	if (al[0]) {
		human_bytes(al[1], b1, sizeof b1);
		human_bytes(al[3], b2, sizeof b2);
		fprintf(stderr, "  allocation   ~%8.1f ms  %lld allocations (%s), %lld frees, peak %s in use\n", ms(al[2]),
			(long long)al[0], b1, (long long)fr[0], b2);
	}
	if (io[0] || io[1] || io[5]) {
		human_bytes(io[2], b1, sizeof b1);
		fprintf(stderr, "  file I/O      %8.1f ms  %lld files opened (%lld failed opens), %lld reads of %s, %lld of them <= 4 KiB\n",
			ms(io[4]), (long long)io[0], (long long)io[5], (long long)io[1], b1, (long long)io[3]);
	}
	if (wall_ns > 0) {
		int64_t before = (loader != INT64_MIN && preinit != INT64_MIN) ? preinit - loader : 0;
		int64_t rest = wall_ns - before - dl[0] - dl[1] - al[2] - io[4];
		fprintf(stderr, "  the program   %8.1f ms  (the rest of %.1f ms wall time)\n", ms(rest > 0 ? rest : 0), ms(wall_ns));
	}
}

/* ---------------------------------------------------------------- main */

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static int agent_has_symbol(const char *agent, const char *name)
{
	elf_map m = {0};
	if (elf_open(agent, &m) != 0)
		return 0;
	int found = memmem(m.p, m.n, name, strlen(name) + 1) != NULL;
	elf_close(&m);
	return found;
}

static int rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	char p[PATH_MAX];
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	return rmdir(dir);
}

static char *env_join(const char *name, const char *first, const char *rest)
{
	size_t n = strlen(name) + strlen(first) + (rest ? strlen(rest) : 0) + 3;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s=%s%s%s", name, first, rest && *rest ? ":" : "", rest ? rest : "");
	return s;
}

int cmd_record(int argc, char **argv)
{
	const char *out = "phaseprof.db";
	int hz = 0, detailed = 0, follow = 1, keep = 0, i;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (cli_is_help(a)) {
			usage(stdout);
			return 0;
		}
		if (strcmp(a, "-o") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (strcmp(a, "--sample") == 0 && i + 1 < argc) {
			long long v;
			if (cli_parse_int64("--sample", argv[++i], &v) != 0)
				return 2;
			if (v < 1 || v > 10000) {
				cli_error("record: --sample %lld: the rate must be 1..10000 Hz", v);
				return 2;
			}
			hz = (int)v;
		} else if (strcmp(a, "--mode") == 0 && i + 1 < argc) {
			const char *m = argv[++i];
			if (strcmp(m, "detailed") == 0)
				detailed = 1;
			else if (strcmp(m, "default") != 0) {
				cli_error("record: --mode %s: expected default or detailed", m);
				return 2;
			}
		} else if (strcmp(a, "--no-follow-fork") == 0)
			follow = 0;
		else if (strcmp(a, "--keep-spools") == 0)
			keep = 1;
		else if (a[0] != '-')
			break; /* the command, without a "--" */
		else {
			cli_error("record: unknown option '%s' (see 'phaseprof record --help')", a);
			return 2;
		}
	}
	if (i >= argc) {
		cli_error("record: no command given (phaseprof record [-o run.db] -- CMD ARGS...)");
		return 2;
	}
	char **cmd = argv + i;
	char resolved[PATH_MAX];
	if (check_command(cmd[0], resolved, sizeof resolved) != 0)
		return 127;

	char agent[PATH_MAX];
	snprintf(agent, sizeof agent, "%s/libphaseprof-agent.so", cli_self_dir());
	if (access(agent, R_OK) != 0) {
		cli_error("record: agent library %s is missing (build the phaseprof_agent target)", agent);
		return 2;
	}
	/* the database must be usable before we spend the program's time: an
	 * existing file must be a phaseprof database we can write, a new one
	 * needs a writable folder (opening for writing here would cost the
	 * schema set-up twice) */
	if (access(out, F_OK) == 0) {
		pp_store *probe = cli_open_store(out, PP_STORE_READ);
		if (!probe)
			return 2;
		pp_store_close(probe, NULL, 0);
		if (access(out, W_OK) != 0) {
			cli_error("record: %s: not writable (%s)", out, strerror(errno));
			return 2;
		}
	} else {
		char folder[PATH_MAX];
		snprintf(folder, sizeof folder, "%s", out);
		char *slash = strrchr(folder, '/');
		if (slash)
			*(slash == folder ? slash + 1 : slash) = 0;
		else
			snprintf(folder, sizeof folder, ".");
		if (access(folder, W_OK) != 0) {
			cli_error("record: cannot create %s: folder %s is not writable (%s)", out, folder, strerror(errno));
			return 2;
		}
	}

	char dir[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/phaseprof-record-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		cli_error("record: cannot create a spool folder %s: %s", dir, strerror(errno));
		return 2;
	}

	/* the child's environment */
	size_t ne = 0;
	while (environ[ne])
		ne++;
	char **env = calloc(ne + 16, sizeof *env);
	char hzs[32], *tun;
	size_t k = 0;
	const char *old_pre = NULL, *old_aud = NULL, *old_tun = NULL;
	for (size_t j = 0; j < ne; j++) {
		const char *e = environ[j];
		if (!strncmp(e, "LD_PRELOAD=", 11))
			old_pre = e + 11;
		else if (!strncmp(e, "LD_AUDIT=", 9))
			old_aud = e + 9;
		else if (!strncmp(e, "GLIBC_TUNABLES=", 15))
			old_tun = e + 15;
		else if (strncmp(e, "PHASEPROF_", 10) != 0 || !strncmp(e, "PHASEPROF_CLOCK=", 16) ||
			 !strncmp(e, "PHASEPROF_ALLOC_SAMPLE=", 23) || !strncmp(e, "PHASEPROF_AGENT_PERIOD_MS=", 26) ||
			 !strncmp(e, "PHASEPROF_PYSTACK_FAKE_VERSION=", 31)) /* tests: an unchecked CPython */
			env[k++] = environ[j];
	}
	size_t k_own = k;
	env[k++] = env_join("LD_PRELOAD", agent, old_pre);
	env[k++] = env_join("LD_AUDIT", agent, old_aud);
	/* the audit copy (own namespace) needs static TLS beyond glibc's small
	 * default surplus for the recorder's thread-local state */
	tun = env_join("GLIBC_TUNABLES", old_tun && *old_tun ? old_tun : "glibc.rtld.optional_static_tls=65536",
		       old_tun && *old_tun ? "glibc.rtld.optional_static_tls=65536" : NULL);
	env[k++] = tun;
	env[k++] = env_join("PHASEPROF_SPOOL_DIR", dir, NULL);
	env[k++] = env_join("PHASEPROF_AGENT", agent, NULL);
	env[k++] = env_join("PHASEPROF_FOLLOW_FORK", follow ? "1" : "0", NULL);
	env[k++] = env_join("PHASEPROF_MODE", detailed ? "detailed" : "default", NULL);
	if (hz) {
		snprintf(hzs, sizeof hzs, "%d", hz);
		env[k++] = env_join("PHASEPROF_SAMPLE_HZ", hzs, NULL);
	}
	if (agent_has_symbol(agent, "InitializeInjectionNvtx2")) {
		env[k++] = env_join("CUDA_INJECTION64_PATH", agent, NULL);
		env[k++] = env_join("NVTX_INJECTION64_PATH", agent, NULL);
	}
	env[k] = NULL;

	fprintf(stderr, "phaseprof: recording %s%s into %s\n", resolved, hz ? " (sampling)" : "", out);
	fflush(stderr);

	struct timespec ts0, ts1;
	clock_gettime(CLOCK_MONOTONIC, &ts0);
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) != 0) {
		cli_error("record: pipe: %s", strerror(errno));
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		cli_error("record: fork: %s", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		close(errpipe[0]);
		execve(resolved, cmd, env);
		int e = errno;
		(void)!write(errpipe[1], &e, sizeof e);
		_exit(127);
	}
	close(errpipe[1]);
	child_pid = pid;
	/* like a shell waiting for a job: ^C goes to the program, we stay to ingest */
	struct sigaction ign = {0}, fwd = {0}, old_int, old_quit, old_term, old_hup;
	ign.sa_handler = SIG_IGN;
	fwd.sa_handler = forward;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGTERM, &fwd, &old_term);
	sigaction(SIGHUP, &fwd, &old_hup);
	int exec_errno = 0;
	if (read(errpipe[0], &exec_errno, sizeof exec_errno) != (ssize_t)sizeof exec_errno)
		exec_errno = 0;
	close(errpipe[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &ts1);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	int64_t wall = (int64_t)(ts1.tv_sec - ts0.tv_sec) * 1000000000 + (ts1.tv_nsec - ts0.tv_nsec);
	for (size_t j = k_own; j < k; j++)
		free(env[j]);
	free(env);
	if (exec_errno) {
		cli_error("record: cannot run %s: %s", resolved, strerror(exec_errno));
		rm_dir(dir);
		return 127;
	}
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;

	/* every spool of the session, in start order */
	spool_info *sp = NULL;
	int nsp = 0, capsp = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 7 || strcmp(de->d_name + l - 6, ".spool") != 0)
			continue;
		if (nsp == capsp) {
			capsp = capsp ? capsp * 2 : 16;
			spool_info *n = realloc(sp, (size_t)capsp * sizeof *sp);
			if (!n)
				break;
			sp = n;
		}
		memset(&sp[nsp], 0, sizeof sp[nsp]);
		int pl = snprintf(sp[nsp].path, sizeof sp[nsp].path, "%s/%s", dir, de->d_name);
		if (pl > 0 && (size_t)pl < sizeof sp[nsp].path && spool_scan(sp[nsp].path, &sp[nsp]) == 0)
			nsp++;
		else
			cli_error("record: %s: not a phaseprof spool (skipped)", sp[nsp].path);
	}
	if (d)
		closedir(d);
	if (nsp > 1)
		qsort(sp, (size_t)nsp, sizeof *sp, cmp_spool);

	pp_store *st = cli_open_store(out, PP_STORE_WRITE);
	int ingested = 0, failed = 0;
	int64_t top_run = 0, last_top = 0;
	int64_t samples = 0;
	for (int s = 0; st && s < nsp; s++) {
		pp_ingest_opts o = {0};
		o.exit_code = -1;
		/* parent: the previous image of the same pid (exec), else the
		 * latest image of the parent pid that started before us (fork) */
		for (int p = s - 1; p >= 0 && !o.parent_run; p--)
			if (sp[p].pid == sp[s].pid && sp[p].run_id)
				o.parent_run = sp[p].run_id;
		for (int p = s - 1; p >= 0 && !o.parent_run; p--)
			if (sp[p].pid == sp[s].ppid && sp[p].run_id)
				o.parent_run = sp[p].run_id;
		int is_last_top = sp[s].pid == (uint32_t)pid;
		for (int p = s + 1; p < nsp; p++)
			if (sp[p].pid == (uint32_t)pid)
				is_last_top = 0;
		if (is_last_top) {
			o.exit_code = code;
			o.term_signal = sig;
		} else if (sp[s].exit_signal) {
			o.term_signal = sp[s].exit_signal;
		} else if (sp[s].exit_code >= 0) {
			o.exit_code = sp[s].exit_code;
		}
		pp_ingest_result r;
		char err[512];
		if (pp_store_ingest(st, sp[s].path, &o, &r, err, sizeof err) != 0) {
			cli_error("record: %s", err);
			failed++;
			continue;
		}
		sp[s].run_id = r.run_id;
		ingested++;
		if (!top_run && sp[s].pid == (uint32_t)pid)
			top_run = r.run_id;
		if (is_last_top)
			last_top = r.run_id;
		if (r.truncated)
			cli_error("record: run %lld: %s", (long long)r.run_id, r.note);
		int64_t ns = 0;
		if (symbolise_run(st, r.run_id, &ns) != 0)
			cli_error("record: run %lld: storing symbolised samples failed", (long long)r.run_id);
		samples += ns;
		if (ns)
			split_load_time(st, r.run_id);
	}

	if (st) {
		fprintf(stderr, "phaseprof: %d run%s recorded into %s", ingested, ingested == 1 ? "" : "s", out);
		if (top_run)
			fprintf(stderr, " (runs %lld..%lld)", (long long)top_run, (long long)(top_run + ingested - 1));
		if (samples)
			fprintf(stderr, ", %lld CPU samples", (long long)samples);
		fprintf(stderr, "; %s %s\n", resolved,
			sig ? strsignal(sig) : code == 0 ? "exited normally" : "exited with an error status");
		if (last_top) {
			pp_run_info ri;
			if (pp_store_run(st, last_top, &ri) == 0 && last_top != top_run)
				fprintf(stderr, "  (after exec: run %lld, %.60s)\n", (long long)last_top, ri.command);
			summarise_run(st, last_top, last_top == top_run ? wall : 0);
		}
		/* diagnostics for every recorded run, stored; the top ones printed */
		for (int s = 0; s < nsp; s++) {
			if (!sp[s].run_id)
				continue;
			pp_diag_result d;
			if (pp_diag_run(st, sp[s].run_id, &d) != 0) {
				cli_error("record: diagnostics of run %lld: %s", (long long)sp[s].run_id, d.error);
				continue;
			}
			if (d.n && sp[s].run_id == last_top) {
				fprintf(stderr, "  findings:\n");
				pp_diag_print(stderr, d.findings, d.n < 3 ? d.n : 3, 0);
			}
			pp_diag_result_free(&d);
		}
		for (int s = 0; s < nsp && nsp > 1; s++) {
			if (!sp[s].run_id || sp[s].run_id == last_top)
				continue;
			pp_run_info ri;
			if (pp_store_run(st, sp[s].run_id, &ri) == 0) {
				for (char *c = ri.command; *c; c++)
					if (*c == '\n' || *c == '\t')
						*c = ' ';
				fprintf(stderr, "  run %lld  pid %lld  %-9s %8.1f ms  %.60s\n", (long long)ri.id, (long long)ri.pid,
					ri.status, ms(ri.duration_ns), ri.command);
			}
		}
		if (cli_close_store(st) != 0)
			failed++;
	} else {
		failed++;
	}
	if (nsp == 0)
		cli_error("record: the program left no spool (did the agent load? see messages above)");
	if (keep || failed)
		fprintf(stderr, "phaseprof: spool files kept in %s\n", dir);
	else
		rm_dir(dir);
	free(sp);
	if (sig)
		return 128 + sig;
	return code;
}
