/*
 * agent_audit.c — shared objects, seen through rtld-audit.
 *
 * `phaseprof record` loads this same file as LD_AUDIT too. The audit copy
 * runs in its own link-map namespace (own libc, own globals, own environ)
 * and sees every object the loader maps (la_objopen), DT_NEEDED
 * dependencies included, plus the brackets of each mapping batch
 * (la_activity ADD … CONSISTENT) and the end of start-up (la_preinit).
 *
 * The two copies share one anonymous mapping: when the audit copy sees its
 * twin (the preload copy) being mapped in the base namespace, it stores the
 * block's address into the twin's `shared_block` variable (same file, same
 * offset from the load base), before the twin's constructor runs. The audit
 * copy only appends; the preload copy turns entries into `libraries` rows.
 * Nothing is ever freed across copies (two mallocs).
 *
 * Relocation and constructors of a batch run after CONSISTENT with no audit
 * callback at their end. For start-up that end is la_preinit; for dlopen the
 * preload copy wraps dlopen and stamps the end when it returns. Wrapping
 * dlopen makes the agent the caller, which would break the caller's
 * RUNPATH / $ORIGIN lookup, so the wrapper resolves those itself from the
 * real caller's link map and opens by absolute path (the research note's
 * option (a)); anything it cannot resolve goes to the real dlopen as given.
 */
#include "agent_internal.h"
#include "phaseprof.h"
#include "pp_rows.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SHARED_MAGIC 0x31415050u /* "PPA1" */
#define MAX_BATCHES 4096
#define MAX_LIBS 16384
#define STR_BYTES (4u << 20)

enum { B_STARTUP = 0, B_RUNTIME = 1 };

typedef struct shlib {
	uint64_t t_open;          /* la_objopen: this object is mapped */
	uint64_t base;            /* l_addr */
	int64_t size;             /* file size, -1 unknown */
	uint32_t batch, name_off;
	int32_t lmid;
	uint32_t depth;           /* 0: the object a batch was opened for, 1: a dependency */
	uint32_t self;            /* the agent itself */
} shlib;

typedef struct shbatch {
	uint64_t t_add, t_consistent;
	_Atomic uint64_t t_end;   /* stamped by the preload copy's dlopen wrapper */
	uint32_t tid, kind, n;
} shbatch;

typedef struct shared {
	uint32_t magic;
	uint64_t t_loader;        /* audit copy's constructor: the first code of ours in this image */
	_Atomic uint64_t t_preinit;
	_Atomic uint32_t n_libs, n_batches;
	uint32_t str_used;
	int32_t open_batch;       /* audit side only: batch between ADD and CONSISTENT, -1 none */
	int deleting;
	shbatch batches[MAX_BATCHES];
	shlib libs[MAX_LIBS];
	char strings[STR_BYTES];
} shared;

/* In the preload copy: set by the audit copy before our constructor runs. */
__attribute__((used)) static shared *volatile shared_block;

/* ---------------- audit copy ---------------- */
static shared *A;                /* audit copy's view */
static uint64_t audit_ctor_time;
static uintptr_t own_l_addr;
static char own_path[PATH_MAX];
static dev_t own_dev;
static ino_t own_ino;

__attribute__((constructor)) static void audit_early(void)
{
	/* harmless in the preload copy; in the audit copy this is the
	 * earliest point we can see in the new image */
	audit_ctor_time = ppa_mono();
}

PPA_API unsigned int la_version(unsigned int version)
{
	if (version < 1)
		return 0;
	void *p = ppa_map(sizeof(shared));
	if (p) {
		A = p;
		A->magic = SHARED_MAGIC;
		A->t_loader = audit_ctor_time ? audit_ctor_time : ppa_mono();
		A->open_batch = -1;
	}
	Dl_info info;
	struct link_map *lm = NULL;
	if (dladdr1((void *)&shared_block, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
		own_l_addr = lm->l_addr;
		snprintf(own_path, sizeof own_path, "%s", lm->l_name);
		struct stat st;
		if (stat(own_path, &st) == 0) {
			own_dev = st.st_dev;
			own_ino = st.st_ino;
		}
	}
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

static uint32_t add_string(const char *s)
{
	size_t n = strlen(s) + 1;
	if (A->str_used + n > STR_BYTES)
		return 0;
	uint32_t off = A->str_used;
	memcpy(A->strings + off, s, n);
	A->str_used += (uint32_t)n;
	return off;
}

static int32_t new_batch(uint64_t t)
{
	uint32_t b = atomic_load(&A->n_batches);
	if (b >= MAX_BATCHES)
		return -1;
	shbatch *sb = &A->batches[b];
	sb->t_add = t;
	sb->tid = (uint32_t)syscall(SYS_gettid);
	sb->kind = atomic_load(&A->t_preinit) ? B_RUNTIME : B_STARTUP;
	atomic_store_explicit(&A->n_batches, b + 1, memory_order_release);
	return (int32_t)b;
}

PPA_API void la_activity(uintptr_t *cookie, unsigned int flag)
{
	(void)cookie;
	if (!A)
		return;
	uint64_t t = ppa_mono();
	if (flag == LA_ACT_ADD) {
		A->deleting = 0;
		if (A->open_batch < 0)
			A->open_batch = new_batch(t);
	} else if (flag == LA_ACT_DELETE) {
		A->deleting = 1;
	} else if (flag == LA_ACT_CONSISTENT) {
		if (A->open_batch >= 0 && !A->deleting)
			A->batches[A->open_batch].t_consistent = t;
		A->open_batch = -1;
		A->deleting = 0;
	}
}

static int is_twin(struct link_map *map)
{
	if (!own_path[0] || !map->l_name || !map->l_name[0])
		return 0;
	const char *a = strrchr(own_path, '/'), *b = strrchr(map->l_name, '/');
	a = a ? a + 1 : own_path;
	b = b ? b + 1 : map->l_name;
	if (strcmp(a, b) != 0)
		return 0;
	struct stat st;
	return stat(map->l_name, &st) == 0 && st.st_dev == own_dev && st.st_ino == own_ino;
}

PPA_API unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	(void)cookie;
	if (!A)
		return 0;
	uint64_t t = ppa_mono();
	int twin = lmid == LM_ID_BASE && is_twin(map);
	if (twin) {
		/* hand the block to the preload copy: same offset in the same file */
		uintptr_t off = (uintptr_t)&shared_block - own_l_addr;
		shared *volatile *slot = (shared *volatile *)(map->l_addr + off);
		*slot = A;
	}
	if (A->open_batch < 0)
		A->open_batch = new_batch(t);
	uint32_t i = atomic_load(&A->n_libs);
	if (i >= MAX_LIBS || A->open_batch < 0)
		return 0;
	shlib *l = &A->libs[i];
	shbatch *b = &A->batches[A->open_batch];
	const char *name = map->l_name;
	char exe[PATH_MAX];
	if (!name || !name[0]) {
		/* the main program has no name in its link map */
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		exe[n > 0 ? n : 0] = 0;
		name = n > 0 ? exe : "<main>";
	}
	struct stat st;
	l->size = (name[0] == '/' && stat(name, &st) == 0) ? (int64_t)st.st_size : -1;
	l->t_open = t;
	l->base = map->l_addr;
	l->batch = (uint32_t)A->open_batch;
	l->name_off = add_string(name);
	l->lmid = (int32_t)lmid;
	l->depth = b->n == 0 ? 0 : 1;
	l->self = (uint32_t)twin;
	b->n++;
	atomic_store_explicit(&A->n_libs, i + 1, memory_order_release);
	return 0;
}

PPA_API void la_preinit(uintptr_t *cookie)
{
	(void)cookie;
	if (A)
		atomic_store(&A->t_preinit, ppa_mono());
}

/* ---------------- preload copy ---------------- */
static uint32_t emitted;

uint64_t ppa_loader_start(void)
{
	shared *S = shared_block;
	return S && S->magic == SHARED_MAGIC ? S->t_loader : 0;
}

void ppa_libs_after_fork(void)
{
	shared *S = shared_block;
	if (S)
		emitted = atomic_load(&S->n_libs); /* the parent reported those */
}

void ppa_libs_drain(int final)
{
	shared *S = shared_block;
	if (!S || S->magic != SHARED_MAGIC || !atomic_load(&ppa_recording))
		return;
	uint32_t n = atomic_load_explicit(&S->n_libs, memory_order_acquire);
	uint64_t preinit = atomic_load(&S->t_preinit);
	static int preinit_sent;
	if (preinit && !preinit_sent) {
		char v[64];
		snprintf(v, sizeof v, "%lld", (long long)ppa_rel(preinit));
		pp_meta("agent.preinit_ns", v);
		preinit_sent = 1;
	}
	uint32_t i;
	for (i = emitted; i < n; i++) {
		shlib *l = &S->libs[i];
		shbatch *b = &S->batches[l->batch];
		uint64_t end = b->kind == B_STARTUP ? preinit : atomic_load(&b->t_end);
		if (!end && !final)
			break; /* its batch is still relocating / running constructors */
		/* Rows that head a batch (the exec'd program, a dlopen'd object)
		 * carry the batch: open → mapped (search + mmap of the whole
		 * tree) → end (relocation + constructors). Dependencies carry
		 * only their own mapping, so sums over depth <= 1 count each
		 * batch once. */
		int head = l->depth == 0;
		int64_t depth = head ? (b->kind == B_STARTUP ? 0 : 1) : 2;
		const char *via = head ? (b->kind == B_STARTUP ? "exec" : l->lmid != LM_ID_BASE ? "dlmopen" : "dlopen")
			     : l->self ? "preload"
			     : b->kind == B_STARTUP ? "startup" : "dependency";
		uint64_t prev = (i > 0 && S->libs[i - 1].batch == l->batch) ? S->libs[i - 1].t_open : b->t_add;
		const char *path = S->strings + l->name_off;
		if (head) {
			uint64_t mapped = b->t_consistent ? b->t_consistent : l->t_open;
			if (end)
				pp_row_libraries(path, (int64_t)l->base, l->size, ppa_rel(b->t_add),
						 ppa_rel(mapped), ppa_rel(end), PP_NULL, PP_NULL, depth, via);
			else
				pp_row_libraries(path, (int64_t)l->base, l->size, ppa_rel(b->t_add),
						 ppa_rel(mapped), PP_NULL, PP_NULL, PP_NULL, depth, via);
		} else {
			pp_row_libraries(path, (int64_t)l->base, l->size, ppa_rel(prev), ppa_rel(l->t_open),
					 ppa_rel(l->t_open), PP_NULL, PP_NULL, depth, via);
		}
	}
	emitted = i;
}

/* ---- dlopen without becoming the caller ---- */

/* The loaded object holding addr. _dl_find_object is a lookup in a sorted
 * table; dladdr scans the object's whole symbol table for the nearest
 * symbol (~17,000 instructions in python3.11, per dlopen). */
struct link_map *ppa_object_of(const void *addr)
{
#if defined(DLFO_STRUCT_HAS_EH_DBASE)
	struct dl_find_object dlfo;
	return _dl_find_object((void *)addr, &dlfo) == 0 ? dlfo.dlfo_link_map : NULL;
#else
	Dl_info info;
	struct link_map *lm = NULL;
	return dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) ? lm : NULL;
#endif
}
static void *(*r_dlopen)(const char *, int);

static int dir_of_object(struct link_map *lm, char *out, size_t len)
{
	const char *name = lm->l_name;
	char exe[PATH_MAX];
	if (!name || !name[0]) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (n <= 0)
			return -1;
		exe[n] = 0;
		name = exe;
	}
	const char *slash = strrchr(name, '/');
	if (!slash)
		return -1;
	snprintf(out, len, "%.*s", (int)(slash - name), name);
	return 0;
}

static int in_list(const Dl_serinfo *si, unsigned from, const char *dir)
{
	for (unsigned i = from; i < si->dls_cnt; i++)
		if (strcmp(si->dls_serpath[i].dls_name, dir) == 0)
			return 1;
	return 0;
}

static Dl_serinfo *serinfo(void *handle)
{
	Dl_serinfo sz;
	if (dlinfo(handle, RTLD_DI_SERINFOSIZE, &sz) != 0)
		return NULL;
	Dl_serinfo *si = ppa_real_malloc(sz.dls_size);
	if (!si)
		return NULL;
	si->dls_size = sz.dls_size;
	si->dls_cnt = sz.dls_cnt;
	if (dlinfo(handle, RTLD_DI_SERINFO, si) != 0) {
		ppa_real_free(si);
		return NULL;
	}
	return si;
}

/* The loader's own defaults (what our own search list has beyond
 * LD_LIBRARY_PATH): the real dlopen searches those, with the cache, in
 * the same order whoever calls it. */
static Dl_serinfo *agent_si;
static unsigned agent_defaults_from;

static void agent_search_list(void)
{
	if (agent_si)
		return;
	Dl_info info;
	struct link_map *lm = NULL;
	if (!dladdr1((void *)agent_search_list, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return;
	agent_si = serinfo(lm);
	if (!agent_si)
		return;
	unsigned nllp = 0;
	const char *llp = getenv("LD_LIBRARY_PATH");
	for (const char *p = llp; p && *p;) {
		const char *e = p + strcspn(p, ":;");
		if (e > p)
			nllp++;
		p = *e ? e + 1 : e;
	}
	agent_defaults_from = nllp < agent_si->dls_cnt ? nllp : agent_si->dls_cnt;
}

/* Returns the path to open on the caller's behalf in buf, or NULL to pass
 * `file` through unchanged. */
static const char *resolve_for_caller(const char *file, const void *caller, char *buf, size_t len)
{
	if (!file)
		return NULL;
	const char *o = NULL;
	size_t skip = 0;
	if (strchr(file, '/')) {
		o = strstr(file, "$ORIGIN");
		skip = 7;
		if (!o) {
			o = strstr(file, "${ORIGIN}");
			skip = 9;
		}
		if (!o)
			return NULL; /* absolute or cwd-relative: the caller does not matter */
	}
	struct link_map *lm = ppa_object_of(caller);
	if (!lm)
		return NULL;
	if (o) {
		char dir[PATH_MAX];
		if (dir_of_object(lm, dir, sizeof dir) != 0)
			return NULL;
		int n = snprintf(buf, len, "%.*s%s%s", (int)(o - file), file, dir, o + skip);
		if (n < 0 || (size_t)n >= len)
			return NULL;
		return strstr(buf, "$ORIGIN") ? NULL : buf;
	}
	/* a bare name: already loaded objects match by name first */
	void *h = r_dlopen(file, RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		dlclose(h);
		return NULL;
	}
	agent_search_list();
	Dl_serinfo *si = serinfo(lm);
	if (!si)
		return NULL;
	const char *found = NULL;
	for (unsigned i = 0; i < si->dls_cnt && !found; i++) {
		const char *dir = si->dls_serpath[i].dls_name;
		if (agent_si && in_list(agent_si, agent_defaults_from, dir))
			continue; /* a default directory: the real dlopen searches it after the cache */
		int n = snprintf(buf, len, "%s/%s", dir, file);
		if (n > 0 && (size_t)n < len && access(buf, F_OK) == 0)
			found = buf;
	}
	ppa_real_free(si);
	return found;
}

PPA_API void *dlopen(const char *file, int mode)
{
	const void *caller = __builtin_return_address(0);
	if (!r_dlopen)
		r_dlopen = dlsym(RTLD_NEXT, "dlopen");
	shared *S = shared_block;
	if (!S || ppa_guard)
		return r_dlopen(file, mode);
	int g = ppa_guard;
	ppa_guard_set(1);
	uint32_t b0 = atomic_load(&S->n_batches);
	char buf[PATH_MAX];
	const char *use = resolve_for_caller(file, caller, buf, sizeof buf);
	/* the library_load phase of this call, on the calling thread */
	int phase = file && atomic_load(&ppa_recording);
	if (phase) {
		const char *base = strrchr(file, '/');
		pp_phase_begin(PP_LIBRARY_LOAD, base ? base + 1 : file);
	}
	ppa_guard_set(g);
	void *h = r_dlopen(use ? use : file, mode);
	if (!h && use)
		h = r_dlopen(file, mode);
	uint64_t t1 = ppa_mono();
	if (phase) {
		ppa_guard_set(1);
		pp_phase_end();
		ppa_guard_set(g);
	}
	uint32_t b1 = atomic_load(&S->n_batches), tid = ppa_gettid();
	for (uint32_t b = b0; b < b1 && b < MAX_BATCHES; b++) {
		uint64_t zero = 0;
		if (S->batches[b].tid == tid && S->batches[b].kind == B_RUNTIME)
			atomic_compare_exchange_strong(&S->batches[b].t_end, &zero, t1);
	}
	return h;
}
