/*
 * agent_python.c — the CPython layer of the agent: interpreter start-up,
 * the import tree and the `phaseprof` Python module, in an unmodified
 * `python3 prog.py`.
 *
 * Nothing here links against libpython: the agent is preloaded into every
 * program, so the C API is looked up with dlsym(RTLD_DEFAULT) and used only
 * when the program is a CPython whose version was checked (3.11, 3.12,
 * 3.13). From the constructor we add an audit hook (it must precede
 * Py_Initialize, and survives it). The hook:
 *   - at the first `import` event, replaces importlib's `_find_and_load`
 *     (what the interpreter calls for every import that misses sys.modules,
 *     the same set `-X importtime` reports) by a C function that wraps the
 *     original in a PP_IMPORT phase. Being C, it adds no traceback frame
 *     and costs two clock reads per import. Library loads an import causes
 *     (the dlopen phases) nest inside it on the same thread;
 *   - at `sys.excepthook` (an uncaught exception), records its type and
 *     message (run_meta python.exception) and a mark;
 *   - at the program's first line (`cpython.run_file`, `run_command`,
 *     `run_module`, `run_stdin`), ends the "python start-up" phase opened
 *     in the constructor, puts the `_phaseprof_native` module in
 *     sys.modules and loads the `phaseprof` package from the python/
 *     folder beside the agent (PHASEPROF_PYTHON overrides it) by absolute
 *     path (sys.path, os.environ and __main__ are not touched), then runs
 *     its boot (adapters on import).
 * The hook ignores every other event after one character test, is guarded
 * against re-entry per thread, never raises and leaves any pending
 * exception as it found it. Once the importer is patched and the package
 * booted it leaves the runtime's hook list (an installed hook makes CPython
 * build every audit event's arguments); the boot's exit check then finds an
 * uncaught exception in sys.last_value at exit.
 */
#include "agent_internal.h"
#include "phaseprof.h"
#include "pp_env.h"
#include "pp_rows.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- the slice of the C API used here (stable ABI where it exists) ---- */
typedef struct py_object py_object;
typedef ssize_t py_ssize;
typedef py_object *(*py_fast)(py_object *self, py_object *const *args, py_ssize n);
typedef struct py_method_def {
	const char *name;
	void *meth;
	int flags;
	const char *doc;
} py_method_def;
#define PY_METH_FASTCALL 0x0080

static struct {
	const char *(*GetVersion)(void);
	int (*AddAuditHook)(int (*)(const char *, py_object *, void *), void *);
	const char *(*UnicodeAsUTF8)(py_object *);
	py_object *(*UnicodeFromString)(const char *);
	py_object *(*UnicodeDecodeFS)(const char *);
	long long (*LongAsLongLong)(py_object *);
	py_object *(*LongFromLongLong)(long long);
	double (*FloatAsDouble)(py_object *);
	py_object *(*TuplePack)(py_ssize, ...);
	py_object *(*TupleGetItem)(py_object *, py_ssize);
	py_object *(*ErrOccurred)(void);
	void (*ErrClear)(void);
	void (*ErrFetch)(py_object **, py_object **, py_object **);
	void (*ErrRestore)(py_object *, py_object *, py_object *);
	py_object *(*ModuleNew)(const char *);
	py_object *(*CFunctionNewEx)(py_method_def *, py_object *, py_object *);
	int (*SetAttrString)(py_object *, const char *, py_object *);
	py_object *(*GetAttrString)(py_object *, const char *);
	py_object *(*GetModuleDict)(void);
	py_object *(*DictGetItemString)(py_object *, const char *);
	py_object *(*DictGetItem)(py_object *, py_object *);
	int (*DictSetItemString)(py_object *, const char *, py_object *);
	int (*DictDelItemString)(py_object *, const char *);
	py_object *(*Call)(py_object *, py_object *, py_object *);
	py_object *(*CallObject)(py_object *, py_object *);
	py_object *(*Str)(py_object *);
	void (*IncRef)(py_object *);
	void (*DecRef)(py_object *);
	py_object *None;
} P;

#define SYM(field, name)                                                       \
	do {                                                                   \
		*(void **)&P.field = dlsym(RTLD_DEFAULT, name);                \
		if (!P.field)                                                  \
			missing = name;                                        \
	} while (0)

static const char *resolve_api(void)
{
	const char *missing = NULL;
	SYM(UnicodeAsUTF8, "PyUnicode_AsUTF8");
	SYM(UnicodeFromString, "PyUnicode_FromString");
	SYM(UnicodeDecodeFS, "PyUnicode_DecodeFSDefault");
	SYM(LongAsLongLong, "PyLong_AsLongLong");
	SYM(LongFromLongLong, "PyLong_FromLongLong");
	SYM(FloatAsDouble, "PyFloat_AsDouble");
	SYM(TuplePack, "PyTuple_Pack");
	SYM(TupleGetItem, "PyTuple_GetItem");
	SYM(ErrOccurred, "PyErr_Occurred");
	SYM(ErrClear, "PyErr_Clear");
	SYM(ErrFetch, "PyErr_Fetch");
	SYM(ErrRestore, "PyErr_Restore");
	SYM(ModuleNew, "PyModule_New");
	SYM(CFunctionNewEx, "PyCFunction_NewEx");
	SYM(SetAttrString, "PyObject_SetAttrString");
	SYM(GetAttrString, "PyObject_GetAttrString");
	SYM(GetModuleDict, "PyImport_GetModuleDict");
	SYM(DictGetItemString, "PyDict_GetItemString");
	SYM(DictGetItem, "PyDict_GetItem");
	SYM(DictSetItemString, "PyDict_SetItemString");
	SYM(DictDelItemString, "PyDict_DelItemString");
	SYM(Call, "PyObject_Call");
	SYM(CallObject, "PyObject_CallObject");
	SYM(Str, "PyObject_Str");
	SYM(IncRef, "Py_IncRef");
	SYM(DecRef, "Py_DecRef");
	SYM(None, "_Py_NoneStruct");
	return missing;
}

/* ---- state ---- */
static int py_on;                 /* hook installed */
static int startup_open;          /* the start-up phase is open on the main thread */
static int first_line_seen;
static int importer_patched;
static char py_dir[4096];         /* the folder holding the phaseprof package */
static char py_version[32];
static py_object *native_mod;     /* _phaseprof_native */
static py_object *orig_find_and_load;
static __thread int in_hook PPA_TLS;
/* The runtime's list of C audit hooks (_PyRuntime.audit_hook_head) and our
 * entry in it, found when the hook was added; NULL when not found. */
static void **hook_head;
static void **hook_entry;         /* {next, hook function, user data} */
static int hook_removed;

/* watched module names (adapters) and their callback */
#define MAX_WATCH 16
static char watch_names[MAX_WATCH][128];
static int watch_fired[MAX_WATCH];
static int n_watch;
static py_object *watch_cb;

static py_object *none_ref(void)
{
	P.IncRef(P.None);
	return P.None;
}

/* A failed conversion in the module's functions is the caller's mistake,
 * not the program's: drop the event, never raise. */
static const char *arg_str(py_object *o)
{
	const char *s = o ? P.UnicodeAsUTF8(o) : NULL;
	if (!s)
		P.ErrClear();
	return s;
}

/* ---- _phaseprof_native ---- */
static py_object *n_begin(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self;
	if (n == 2) {
		long long k = P.LongAsLongLong(a[0]);
		const char *s = arg_str(a[1]);
		if (k == -1 && P.ErrOccurred())
			P.ErrClear();
		else if (s && k >= 0 && k < PP_KIND_COUNT)
			pp_phase_begin((pp_kind)k, s);
	}
	return none_ref();
}

static py_object *n_end(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self, (void)a, (void)n;
	pp_phase_end();
	return none_ref();
}

/* The first step of the process is wrapped in a first_step phase around
 * step 0, the shape the flow runtime records and the rules read. */
static int first_done, first_open, step_open;

/* Per-step memory counters, written here at each step's end once an adapter
 * asks (step_counters(True)): step.allocs and step.alloc_bytes (malloc
 * calls and bytes in the step, from the agent's hooks) and step.rss_bytes.
 * In C they cost a sum over the threads' statistics and one read of
 * /proc/self/statm; from Python they were five calls into this module and
 * tuple building, ~40 us of a minimal step (bench/python_torch/step_cost.py). */
static int counters_on;
static uint64_t alloc0[2];
static void alloc_now(uint64_t s[2]);
static long long rss_bytes(void);

static void step_counters_begin(void)
{
	if (counters_on)
		alloc_now(alloc0);
}

static void step_counters_end(void)
{
	if (!counters_on)
		return;
	uint64_t s[2];
	alloc_now(s);
	pp_counter("step.allocs", (double)(s[0] - alloc0[0]));
	pp_counter("step.alloc_bytes", (double)(s[1] - alloc0[1]));
	pp_counter("step.rss_bytes", (double)rss_bytes());
}

/* Ends the open step, and the first_step phase around the first one. */
static void close_step(void)
{
	if (!step_open)
		return;
	step_counters_end();
	ppa_kept_step_end(); /* inside the step: what it leaves alive */
	pp_step_end();
	step_open = 0;
	if (first_open) {
		pp_phase_end();
		first_open = 0;
	}
}

static py_object *n_step_begin(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self;
	long long i = n >= 1 ? P.LongAsLongLong(a[0]) : 0;
	if (i == -1 && P.ErrOccurred()) {
		P.ErrClear();
		i = 0;
	}
	if (step_open) {
		/* one instant ends this step (and the first_step phase around
		 * the first) and begins the next: no gap between them */
		step_counters_end();
		ppa_kept_step_end();
		pp_step_next(i, first_open);
		first_open = 0;
		ppa_kept_step_begin(i);
		step_counters_begin();
		return none_ref();
	}
	if (!first_done) {
		first_done = first_open = 1;
		pp_phase_begin(PP_FIRST_STEP, "first_step");
	}
	ppa_kept_step_begin(i);
	pp_step_begin(i);
	step_open = 1;
	step_counters_begin();
	return none_ref();
}

static py_object *n_step_end(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self, (void)a, (void)n;
	close_step();
	return none_ref();
}

static py_object *n_mark(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self;
	const char *s = n >= 1 ? arg_str(a[0]) : NULL;
	if (s)
		pp_mark(s);
	return none_ref();
}

static py_object *n_counter(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self;
	if (n == 2) {
		const char *s = arg_str(a[0]);
		double v = P.FloatAsDouble(a[1]);
		if (v == -1.0 && P.ErrOccurred())
			P.ErrClear();
		else if (s)
			pp_counter(s, v);
	}
	return none_ref();
}

static py_object *n_meta(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self;
	if (n == 2) {
		const char *k = arg_str(a[0]), *v = arg_str(a[1]);
		if (k && v)
			pp_meta(k, v);
	}
	return none_ref();
}

static void sum_alloc(ppa_tstats *t, void *ud)
{
	uint64_t *s = ud;
	s[0] += ppa_alloc_calls(t);
	s[1] += ppa_get(&t->alloc_usable);
}

static void alloc_now(uint64_t s[2])
{
	s[0] = s[1] = 0;
	ppa_for_each_tstats(sum_alloc, s);
}

static py_object *n_step_counters(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self;
	counters_on = n >= 1 && P.LongAsLongLong(a[0]) != 0;
	if (P.ErrOccurred()) {
		P.ErrClear();
		counters_on = 0;
	}
	if (counters_on && step_open)
		alloc_now(alloc0);
	return none_ref();
}

static py_object *n_alloc_totals(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self, (void)a, (void)n;
	uint64_t s[2];
	alloc_now(s);
	py_object *c = P.LongFromLongLong((long long)s[0]);
	py_object *b = P.LongFromLongLong((long long)s[1]);
	py_object *t = c && b ? P.TuplePack(2, c, b) : NULL;
	if (c)
		P.DecRef(c);
	if (b)
		P.DecRef(b);
	return t; /* NULL only with MemoryError set: the interpreter's own */
}

/* Resident set size from /proc/self/statm, read at every step's end. The
 * file is opened once and kept (an open of it costs 9-18 us on the
 * development VM, 2026-11-28; a pread 3 us), through raw system calls (the
 * agent's hooks would count it as the program's I/O), high and
 * close-on-exec like the spool, out of the program's range of numbers.
 * Before each read fstat says it is still the file opened (the program may
 * close any descriptor and be given the number back for a file of its
 * own); a forked child, whose /proc/self is another process, drops it.
 * Where no high number is free it is opened and closed per read. */
static int statm_fd = -1;
static dev_t statm_dev;
static ino_t statm_ino;

static void statm_drop_in_child(void)
{
	if (statm_fd >= 0)
		syscall(SYS_close, statm_fd);
	statm_fd = -1;
}

static int statm_open(void)
{
	static int atfork_done;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct rlimit rl;
	/* the spool's floor (spool_writer.c): the agent's numbers in one range */
	int floor = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
				    rl.rlim_cur <= 4096
			    ? (int)(rl.rlim_cur * 3 / 4)
			    : 1000;
	int high = floor > 64 ? (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor) : -1;
	struct stat st;
	if (high >= 0 && fstat(high, &st) == 0) {
		syscall(SYS_close, fd);
		statm_dev = st.st_dev;
		statm_ino = st.st_ino;
		if (!atfork_done) {
			atfork_done = 1;
			pthread_atfork(NULL, NULL, statm_drop_in_child);
		}
		statm_fd = high;
		return high;
	}
	if (high >= 0)
		syscall(SYS_close, high);
	return fd; /* the caller closes it after reading */
}

static long long rss_bytes(void)
{
	struct stat st;
	if (statm_fd >= 0 &&
	    (fstat(statm_fd, &st) != 0 || st.st_dev != statm_dev || st.st_ino != statm_ino))
		statm_fd = -1; /* not ours any more: the program's now, left alone */
	int fd = statm_fd >= 0 ? statm_fd : statm_open();
	if (fd < 0)
		return 0;
	char buf[128];
	long r = syscall(SYS_pread64, fd, buf, sizeof buf - 1, 0);
	if (fd != statm_fd)
		syscall(SYS_close, fd);
	if (r <= 0)
		return 0;
	buf[r] = 0;
	char *p = strchr(buf, ' ');
	return p ? atoll(p + 1) * (long long)sysconf(_SC_PAGESIZE) : 0;
}

static py_object *n_rss(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self, (void)a, (void)n;
	return P.LongFromLongLong(rss_bytes());
}

static py_object *n_now(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self, (void)a, (void)n;
	return P.LongFromLongLong((long long)pp_now());
}

/* watch_imports(names: tuple[str], callback(name, module)) */
static py_object *n_watch_imports(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self;
	if (n != 2)
		return none_ref();
	n_watch = 0;
	for (int i = 0; i < MAX_WATCH; i++) {
		py_object *idx = P.LongFromLongLong(i);
		py_object *item = NULL;
		if (idx) {
			py_object *getitem = P.GetAttrString(a[0], "__getitem__");
			if (getitem) {
				py_object *args = P.TuplePack(1, idx);
				if (args) {
					item = P.CallObject(getitem, args);
					P.DecRef(args);
				}
				P.DecRef(getitem);
			}
			P.DecRef(idx);
		}
		if (!item) {
			P.ErrClear(); /* IndexError: the end of the names */
			break;
		}
		const char *s = arg_str(item);
		if (s && strlen(s) < sizeof watch_names[0]) {
			snprintf(watch_names[n_watch], sizeof watch_names[0], "%s", s);
			watch_fired[n_watch++] = 0;
		}
		P.DecRef(item);
	}
	if (watch_cb)
		P.DecRef(watch_cb);
	P.IncRef(a[1]);
	watch_cb = a[1];
	return none_ref();
}

/* comm_row(op, start_ns, end_ns, bytes, peer, comm_size): a `comm` row on
 * the calling thread (times from now()); the DDP adapter's bucket
 * all-reduces. Anything that does not convert is dropped. */
static py_object *n_comm_row(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self;
	if (n != 6)
		return none_ref();
	const char *op = arg_str(a[0]);
	long long v[5];
	for (int i = 0; i < 5; i++) {
		v[i] = P.LongAsLongLong(a[i + 1]);
		if (v[i] == -1 && P.ErrOccurred()) {
			P.ErrClear();
			return none_ref();
		}
	}
	if (op && v[0] >= 0 && v[1] >= v[0])
		pp_row_comm(ppa_gettid(), op, v[0], v[1], v[2], v[3], v[4]);
	return none_ref();
}

static int exit_check_on;   /* the boot registered the exit check */
static void record_uncaught(const char *msg);

/* The boot's exit check: with no argument, it is registered (the audit
 * hook may go); at exit, "Type: message" of an exception left in
 * sys.last_value (what CPython sets when it prints an uncaught one), which
 * the hook reports itself while it is installed. */
static py_object *n_exit_check(py_object *self, py_object *const *a, py_ssize n)
{
	(void)self;
	if (n == 0) {
		exit_check_on = 1;
	} else if (hook_removed) {
		const char *s = arg_str(a[0]);
		if (s)
			record_uncaught(s);
	}
	return none_ref();
}

static py_method_def native_defs[] = {
	{"begin", (void *)n_begin, PY_METH_FASTCALL, "begin(kind, name): open a phase"},
	{"end", (void *)n_end, PY_METH_FASTCALL, "end(): close the innermost phase"},
	{"step_begin", (void *)n_step_begin, PY_METH_FASTCALL, "step_begin(i)"},
	{"step_end", (void *)n_step_end, PY_METH_FASTCALL, "step_end()"},
	{"mark", (void *)n_mark, PY_METH_FASTCALL, "mark(name)"},
	{"counter", (void *)n_counter, PY_METH_FASTCALL, "counter(name, value)"},
	{"meta", (void *)n_meta, PY_METH_FASTCALL, "meta(key, value): a run_meta line"},
	{"step_counters", (void *)n_step_counters, PY_METH_FASTCALL,
	 "step_counters(on): write step.allocs, step.alloc_bytes, step.rss_bytes at each step's end"},
	{"alloc_totals", (void *)n_alloc_totals, PY_METH_FASTCALL, "(malloc calls, bytes) so far"},
	{"rss", (void *)n_rss, PY_METH_FASTCALL, "resident set size, bytes"},
	{"now", (void *)n_now, PY_METH_FASTCALL, "recorder clock, ns"},
	{"comm_row", (void *)n_comm_row, PY_METH_FASTCALL,
	 "comm_row(op, start_ns, end_ns, bytes, peer, comm_size): a comm row"},
	{"exit_check", (void *)n_exit_check, PY_METH_FASTCALL,
	 "exit_check(): registered; exit_check(msg): an uncaught exception at exit"},
	{"watch_imports", (void *)n_watch_imports, PY_METH_FASTCALL,
	 "watch_imports(names, callback): callback(name, module) once after each import"},
};

/* ---- the import wrapper ---- */
static void fire_watch(const char *name, py_object *mod)
{
	for (int i = 0; i < n_watch; i++) {
		if (watch_fired[i] || strcmp(watch_names[i], name) != 0)
			continue;
		watch_fired[i] = 1;
		py_object *nm = P.UnicodeFromString(name);
		py_object *args = nm ? P.TuplePack(2, nm, mod) : NULL;
		py_object *r = args ? P.CallObject(watch_cb, args) : NULL;
		if (!r) {
			P.ErrClear();
			pp_mark("phaseprof: adapter trigger failed");
		} else
			P.DecRef(r);
		if (args)
			P.DecRef(args);
		if (nm)
			P.DecRef(nm);
	}
}

static py_object *find_and_load(py_object *orig, py_object *const *a, py_ssize n)
{
	py_object *args = NULL, *r;
	const char *name = NULL;
	if (n >= 1) {
		/* importlib.import_module of a module already imported: no import */
		py_object *mods = P.GetModuleDict();
		if (!(mods && P.DictGetItem(mods, a[0])))
			name = arg_str(a[0]);
	}
	if (n == 2)
		args = P.TuplePack(2, a[0], a[1]);
	else if (n == 1)
		args = P.TuplePack(1, a[0]);
	else
		args = P.TuplePack(0);
	if (!args)
		return NULL;
	if (name)
		pp_phase_begin(PP_IMPORT, name);
	r = P.Call(orig, args, NULL);
	if (name)
		pp_phase_end();
	P.DecRef(args);
	/* the callback runs the adapter (which may import a watched module
	 * itself: each name fires once); a failure stays ours */
	if (r && name && n_watch && watch_cb)
		fire_watch(name, r);
	return r;
}

static py_method_def find_and_load_def = {"_find_and_load", (void *)find_and_load,
					  PY_METH_FASTCALL, NULL};

static void patch_importer(void)
{
	importer_patched = 1;
	py_object *mods = P.GetModuleDict();
	py_object *bs = mods ? P.DictGetItemString(mods, "_frozen_importlib") : NULL;
	py_object *f = bs ? P.GetAttrString(bs, "_find_and_load") : NULL;
	py_object *w = f ? P.CFunctionNewEx(&find_and_load_def, f, NULL) : NULL;
	if (w && P.SetAttrString(bs, "_find_and_load", w) == 0) {
		orig_find_and_load = f; /* kept: the wrapper's self */
		f = NULL;
	} else {
		P.ErrClear();
		pp_meta("python.imports", "not seen: importlib's _find_and_load was not found");
	}
	if (w)
		P.DecRef(w);
	if (f)
		P.DecRef(f);
}

/* ---- the program's first line: the boot ---- */
static void xdecref(py_object *o)
{
	if (o)
		P.DecRef(o);
}

/* o.name(a1[, a2]); NULL with the error set. */
static py_object *call_method(py_object *o, const char *name, py_object *a1, py_object *a2)
{
	py_object *f = P.GetAttrString(o, name);
	if (!f)
		return NULL;
	py_object *args = a2 ? P.TuplePack(2, a1, a2) : P.TuplePack(1, a1);
	py_object *r = args ? P.CallObject(f, args) : NULL;
	if (args)
		P.DecRef(args);
	P.DecRef(f);
	return r;
}

/* phaseprof/_boot.py loads the package (see there); this loads _boot.py
 * itself with importlib's file loader, as phaseprof._boot, and calls its
 * start(root). Through C calls, not a few lines of Python: those were
 * compiled at every start (~430,000 instructions). On a failure the
 * error is left set and no phaseprof._boot is left in sys.modules. */
static int load_boot(py_object *mods, py_object *root)
{
	py_object *ext = P.DictGetItemString(mods, "_frozen_importlib_external");
	py_object *bs = P.DictGetItemString(mods, "_frozen_importlib");
	if (!ext || !bs)
		return -2; /* borrowed references; no error set */
	char path[sizeof py_dir + 32];
	snprintf(path, sizeof path, "%s/phaseprof/_boot.py", py_dir);
	int rc = -1;
	py_object *name = P.UnicodeFromString("phaseprof._boot"), *file = P.UnicodeDecodeFS(path);
	py_object *spec = name && file ? call_method(ext, "spec_from_file_location", name, file) : NULL;
	py_object *m = spec ? call_method(bs, "module_from_spec", spec, NULL) : NULL;
	if (m && P.DictSetItemString(mods, "phaseprof._boot", m) == 0) {
		py_object *loader = P.GetAttrString(spec, "loader");
		py_object *r = loader ? call_method(loader, "exec_module", m, NULL) : NULL;
		if (r) {
			P.DecRef(r);
			r = call_method(m, "start", root, NULL);
		}
		if (r) {
			P.DecRef(r);
			rc = 0;
		} else {
			py_object *t, *v, *tb;
			P.ErrFetch(&t, &v, &tb);
			if (P.DictGetItemString(mods, "phaseprof._boot") && P.DictDelItemString(mods, "phaseprof._boot") != 0)
				P.ErrClear();
			P.ErrRestore(t, v, tb);
		}
		xdecref(loader);
	}
	xdecref(m);
	xdecref(spec);
	xdecref(file);
	xdecref(name);
	return rc;
}

static void record_py_error(const char *what)
{
	py_object *t = NULL, *v = NULL, *tb = NULL;
	P.ErrFetch(&t, &v, &tb);
	char msg[512];
	const char *s = NULL;
	py_object *str = v ? P.Str(v) : NULL;
	if (str)
		s = P.UnicodeAsUTF8(str);
	P.ErrClear();
	snprintf(msg, sizeof msg, "%s: %s", what, s ? s : "unknown error");
	pp_meta("python.boot", msg);
	xdecref(str);
	xdecref(t);
	xdecref(v);
	xdecref(tb);
}

static void boot(void)
{
	py_object *mods = P.GetModuleDict();
	if (!mods)
		return;
	native_mod = P.ModuleNew("_phaseprof_native");
	if (!native_mod) {
		record_py_error("phaseprof module not created");
		return;
	}
	for (size_t i = 0; i < sizeof native_defs / sizeof native_defs[0]; i++) {
		py_object *f = P.CFunctionNewEx(&native_defs[i], NULL, native_mod);
		if (!f || P.SetAttrString(native_mod, native_defs[i].name, f) != 0) {
			if (f)
				P.DecRef(f);
			record_py_error("phaseprof module not created");
			return;
		}
		P.DecRef(f);
	}
	if (P.DictSetItemString(mods, "_phaseprof_native", native_mod) != 0) {
		record_py_error("phaseprof module not registered");
		return;
	}
	py_object *root = P.UnicodeDecodeFS(py_dir);
	if (!root) {
		record_py_error("boot failed");
		return;
	}
	pp_phase_begin(PP_SPAN, "phaseprof boot");
	int rc = load_boot(mods, root);
	pp_phase_end();
	if (rc == 0)
		pp_meta("python.boot", "ok");
	else if (rc == -2)
		pp_meta("python.boot", "phaseprof package not loaded: importlib is not in sys.modules");
	else
		record_py_error("phaseprof package not loaded");
	P.DecRef(root);
}

static void first_line(void)
{
	first_line_seen = 1;
	if (startup_open) {
		startup_open = 0;
		pp_phase_end();
	}
	if (py_dir[0])
		boot();
}

/* An exception nobody caught reaches sys.excepthook: the run failed in
 * Python. Its type and message go to run_meta, with a mark at that time
 * (at exit once the hook is gone: see py_exit). */
static void record_uncaught(const char *msg)
{
	pp_meta("python.exception", msg);
	pp_mark("python: uncaught exception");
}

static void uncaught(py_object *args)
{
	py_object *type = P.TupleGetItem(args, 1), *val = P.TupleGetItem(args, 2);
	py_object *tn = type ? P.GetAttrString(type, "__name__") : NULL;
	py_object *vs = val ? P.Str(val) : NULL;
	const char *a = tn ? P.UnicodeAsUTF8(tn) : NULL, *b = vs ? P.UnicodeAsUTF8(vs) : NULL;
	char msg[512];
	snprintf(msg, sizeof msg, "%s%s%s", a ? a : "?", b && *b ? ": " : "", b ? b : "");
	record_uncaught(msg);
	if (tn)
		P.DecRef(tn);
	if (vs)
		P.DecRef(vs);
}

/* Once the importer is patched and the package booted, the hook has
 * nothing left to do but wait for an uncaught exception, which the boot's
 * exit check (py_exit) sees instead. While any C audit hook is installed
 * CPython builds the arguments of every audit event (~2,900 for `import
 * numpy`: attribute reads, code objects, opens, execs), some 6 million
 * instructions in all: the hook leaves the runtime's list. It is called
 * from the loop over that list, which reads our entry's next after we
 * return: the entry stays allocated. The GIL is held. */
static void maybe_remove_hook(void)
{
	if (hook_removed || !hook_head || !importer_patched || !first_line_seen || !native_mod ||
	    !exit_check_on || *hook_head != (void *)hook_entry)
		return;
	*hook_head = hook_entry[0];
	hook_removed = 1;
	pp_meta("python.audit_hook", "removed after start-up (imports patched, package booted)");
}

static int audit_hook(const char *ev, py_object *args, void *ud)
{
	(void)ud;
	/* cheap for what we ignore: "import", "cpython.run_*" and
	 * "sys.excepthook" only */
	if (ev[0] != 'i' && ev[0] != 'c' && ev[0] != 's')
		return 0;
	if (in_hook || !atomic_load_explicit(&ppa_recording, memory_order_relaxed))
		return 0;
	if (ev[0] == 'i') {
		if (importer_patched || strcmp(ev, "import") != 0)
			return 0;
	} else if (ev[0] == 's') {
		if (strcmp(ev, "sys.excepthook") != 0)
			return 0;
	} else if (first_line_seen || strncmp(ev, "cpython.run_", 12) != 0 ||
		   (strcmp(ev + 12, "file") && strcmp(ev + 12, "command") &&
		    strcmp(ev + 12, "module") && strcmp(ev + 12, "stdin"))) {
		return 0;
	}
	in_hook = 1;
	int g = ppa_guard;
	py_object *t, *v, *tb;
	P.ErrFetch(&t, &v, &tb);
	if (ev[0] == 'i')
		patch_importer();
	else if (ev[0] == 's')
		uncaught(args);
	else
		first_line();
	maybe_remove_hook();
	if (P.ErrOccurred())
		P.ErrClear();
	P.ErrRestore(t, v, tb);
	ppa_guard_set(g);
	in_hook = 0;
	return 0;
}

/* The executable looks like a Python when the C API is absent: say why the
 * layer is off instead of staying silent. */
static int exe_is_python(void)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return 0;
	exe[n] = 0;
	const char *b = strrchr(exe, '/');
	b = b ? b + 1 : exe;
	return strncmp(b, "python", 6) == 0;
}

/* The package sits in python/ beside the agent's own file: the build
 * folder's python/ (a link to the source's) or <prefix>/lib/phaseprof/python
 * once installed. Found from the file, not a path fixed at build time, so
 * an installed tree still works after it is moved. */
static void default_py_dir(void)
{
	Dl_info info;
	if (!dladdr((void *)default_py_dir, &info) || !info.dli_fname)
		return; /* py_dir stays empty: no boot */
	const char *slash = strrchr(info.dli_fname, '/');
	if (slash)
		snprintf(py_dir, sizeof py_dir, "%.*s/python", (int)(slash - info.dli_fname), info.dli_fname);
	else
		snprintf(py_dir, sizeof py_dir, "python");
}

void ppa_python_init(void)
{
	const char *setting = getenv(PP_ENV_PYTHON);
	const char *(*ver)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
	void *add = dlsym(RTLD_DEFAULT, "PySys_AddAuditHook");
	if (!ver || !add) {
		if (exe_is_python())
			pp_meta("python", "not recognised: the executable exports no CPython C API "
				"(static libpython?): imports, start-up and phaseprof.* not seen");
		return;
	}
	const char *v = ver();
	size_t vl = strcspn(v, " ");
	snprintf(py_version, sizeof py_version, "%.*s", (int)(vl < 31 ? vl : 31), v);
	char msg[256];
	if (setting && strcmp(setting, "0") == 0) {
		snprintf(msg, sizeof msg, "off (--no-python): CPython %s", py_version);
		pp_meta("python", msg);
		return;
	}
	if (strncmp(py_version, "3.11.", 5) != 0 && strncmp(py_version, "3.12.", 5) != 0 &&
	    strncmp(py_version, "3.13.", 5) != 0) {
		snprintf(msg, sizeof msg,
			 "not recognised: CPython %s (checked: 3.11, 3.12, 3.13): imports, start-up and phaseprof.* "
			 "not seen",
			 py_version);
		pp_meta("python", msg);
		return;
	}
	const char *missing = resolve_api();
	if (missing) {
		snprintf(msg, sizeof msg, "not recognised: CPython %s without %s", py_version, missing);
		pp_meta("python", msg);
		return;
	}
	if (setting && *setting)
		snprintf(py_dir, sizeof py_dir, "%s", setting);
	else
		default_py_dir();
	P.GetVersion = ver;
	*(void **)&P.AddAuditHook = add;
	/* our entry is where the runtime's first bytes changed */
	unsigned char *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
	/* audit_hooks.head: at 3,056 bytes in 3.12, 10,424 in 3.13 (the
	 * constructor runs once, on one thread: a static copy) */
	enum { RT_SCAN = 16384 / sizeof(void *) };
	static void *before[RT_SCAN];
	if (rt)
		memcpy(before, rt, sizeof before);
	if (P.AddAuditHook(audit_hook, NULL) != 0) {
		snprintf(msg, sizeof msg, "not recognised: CPython %s refused an audit hook", py_version);
		pp_meta("python", msg);
		return;
	}
	for (size_t i = 0; rt && i < RT_SCAN; i++) {
		void *now;
		memcpy(&now, rt + i * sizeof now, sizeof now);
		if (now == before[i])
			continue;
		/* one word, NULL before: the list's head, now our (malloc'd,
		 * aligned) entry naming our function */
		if (before[i] || hook_head || (uintptr_t)now < 65536 || (uintptr_t)now % sizeof now ||
		    ((void **)now)[1] != (void *)audit_hook) {
			hook_head = NULL;
			break;
		}
		hook_head = (void **)(rt + i * sizeof now);
		hook_entry = now;
	}
	py_on = 1;
	snprintf(msg, sizeof msg, "CPython %s: start-up, imports, phaseprof module", py_version);
	pp_meta("python", msg);
	pp_meta("python.dir", py_dir);
	/* A program embedding Python (gdb, a server) may never run a script:
	 * the start-up phase is only for the python executable itself. */
	if (exe_is_python()) {
		pp_phase_begin(PP_PROCESS_START, "python start-up");
		startup_open = 1;
	}
}

void ppa_python_at_exit(void)
{
	/* exit before the first line (no such file, a bad option): the phase
	 * ends here, on the thread that opened it */
	if (startup_open && ppa_gettid() == (uint32_t)getpid()) {
		startup_open = 0;
		pp_phase_end();
		pp_meta("python.first_line", "never reached");
	}
}

/* A forked child keeps the interpreter and the hook; its recorder is new. */
void ppa_python_after_fork(void)
{
	if (!py_on)
		return;
	startup_open = 0;
	step_open = first_open = 0;
}
