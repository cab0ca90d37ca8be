/*
 * agent_pystack.c — Python frames in CPU samples (CPython 3.11, 3.12, 3.13).
 *
 * The sampling handler calls ppa_pystack_capture(): it finds the interrupted
 * thread's PyThreadState (3.11, 3.12: through the interpreter's own
 * thread-specific key, _PyRuntime.autoTSSkey, read with pthread_getspecific:
 * a plain array read in glibc, no lock; 3.13, whose published offsets do not
 * include that key: by walking the interpreters' thread lists for the
 * thread's id, then kept per thread and checked at every use) and walks
 * current_frame → previous, recording only (code object address,
 * instruction index, is_entry) per frame. 3.12+ mark where an eval call
 * began with a shim frame owned by the C stack instead of an is_entry byte:
 * the frame under it is taken as the entry frame and the shim left out. It
 * never calls Python, never allocates, never locks. Frame memory is read
 * with process_vm_readv on our own pid, which fails with EFAULT on a bad
 * pointer instead of faulting (a C frame just entered may not have set its
 * current_frame yet), except inside the thread's current data-stack chunk,
 * which is always mapped.
 *
 * The drain (stats thread) resolves each (code, index) once: the code object
 * is read with process_vm_readv and accepted only if its type is
 * &PyCode_Type, its name and file only if they are str objects; the line
 * comes from the location table (co_linetable, one format in 3.11-3.13).
 * Each distinct (code, line) becomes one `py_frames` row; in the sample text
 * every native _PyEval_EvalFrameDefault frame is replaced by the Python
 * frames it was running ("p<id>" tokens), i.e. the frames up to and
 * including the next entry frame.
 *
 * Offsets come from agent_pyversions.c (3.11, 3.12: checked tables; 3.13:
 * the interpreter's _Py_DebugOffsets). Any other version: native frames
 * only, and one run_meta line (agent.python_frames) says why. Before the
 * handler walks anything, the drain checks the layout once against the live
 * interpreter (runtime → thread state → frame → code object type) and
 * refuses on a mismatch.
 */
#include "agent_internal.h"
#include "agent_pyversions.h"
#include "phaseprof.h"
#include "pp_env.h"
#include "pp_rows.h"
#include "pp_hash.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* the running interpreter's layout (agent_pyversions.c), set before
 * py_state turns 1 */
static ppa_pylayout L;

#define PY_MAX 64
#define PY_RING 8192          /* = the sample ring: slot i pairs with sample slot i */

/* One Python frame in 8 bytes: code address / 8 (44 bits), instruction
 * index + 1 (19 bits, 0: before the first instruction), entry bit. */
typedef struct pyslot {
	_Atomic uint64_t seq;     /* sample index + 1 once written */
	uint32_t n, truncated;
	uint64_t f[PY_MAX];
} pyslot;

static pyslot *pring;
static _Atomic int py_state;     /* 0 pending, 1 on, -1 off */
static const char *rt;           /* &_PyRuntime */
static uintptr_t code_type, str_type, bytes_type;
static uintptr_t eval_lo, eval_hi;
static char version[32];
static char fake_version[32];    /* PHASEPROF_PYSTACK_FAKE_VERSION */
static int no_python;            /* record --no-python */
static char state_line[224];     /* the run_meta line, again in a forked child's run */
static int checks_failed;
static _Atomic int resolver_on, resolver_stop, resolver_busy;

static int self_read(void *dst, uintptr_t src, size_t n)
{
	struct iovec l = {dst, n}, r = {(void *)src, n};
	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

static uintptr_t word(const unsigned char *p, int off)
{
	uintptr_t v;
	memcpy(&v, p + off, sizeof v);
	return v;
}

/* ---------------------------------------------------------------- handler */

static void capture(pyslot *ps);

void ppa_pystack_capture(uint64_t w)
{
	if (!pring)
		return;
	pyslot *ps = &pring[w % PY_RING];
	atomic_store_explicit(&ps->seq, 0, memory_order_relaxed);
	capture(ps);
	atomic_store_explicit(&ps->seq, w + 1, memory_order_release);
}

static void capture(pyslot *ps)
{
	ps->n = ppa_pystack_frames(ps->f, PY_MAX, &ps->truncated);
}

/* 3.13: the calling thread's PyThreadState, found by walking the
 * runtime's interpreters and their threads for this thread's id (only
 * published offsets: the runtime's autoTSSkey is not among them), kept
 * per thread and checked (same thread id) at every use. A thread without
 * one (a native thread) looks again every 64th sample. Every read is a
 * process_vm_readv: a thread state may be freed under the walk. */
static __thread uintptr_t my_ts PPA_TLS;
static __thread uint32_t my_ts_miss PPA_TLS;

static int ts_is_mine(uintptr_t ts, unsigned char *buf, uint32_t tid)
{
	if (!ts || self_read(buf, ts, (size_t)L.ts_read) != 0)
		return 0;
	uint64_t nt = word(buf, L.ts_native_tid);
	return nt == tid && word(buf, L.ts_interp) != 0;
}

static int find_ts(unsigned char *buf)
{
	uint32_t tid = ppa_gettid();
	if (ts_is_mine(my_ts, buf, tid))
		return 1;
	my_ts = 0;
	if (my_ts_miss++ % 64)
		return 0;
	uintptr_t in = word((const unsigned char *)rt, L.rt_interp_head);
	for (int i = 0; in && i < 16; i++) {
		uintptr_t ts = 0, next = 0;
		if (self_read(&ts, in + (uintptr_t)L.in_threads_head, sizeof ts) != 0 ||
		    self_read(&next, in + (uintptr_t)L.in_next, sizeof next) != 0)
			return 0;
		for (int k = 0; ts && k < 512; k++) {
			if (ts_is_mine(ts, buf, tid)) {
				my_ts = ts;
				my_ts_miss = 0;
				return 1;
			}
			if (self_read(&ts, ts + (uintptr_t)L.ts_next, sizeof ts) != 0)
				break;
		}
		in = next;
	}
	return 0;
}

/* The calling thread's Python frames, leaf first, as frame words (up to
 * max); *truncated says whether more were left. Never allocates, never
 * locks: called from the sampling handler and from the malloc hooks. */
uint32_t ppa_pystack_frames(uint64_t *out, uint32_t max, uint32_t *truncated)
{
	*truncated = 0;
	if (atomic_load_explicit(&py_state, memory_order_acquire) != 1)
		return 0;
	uintptr_t f, chunk;
	if (L.rt_tss >= 0) {
		/* 3.11, 3.12: the thread's state through the interpreter's
		 * own thread-specific key (a plain array read in glibc) */
		int tss_ok;
		unsigned int key;
		memcpy(&tss_ok, rt + L.rt_tss, sizeof tss_ok);
		memcpy(&key, rt + L.rt_tss + 4, sizeof key);
		if (!tss_ok)
			return 0;
		/* the thread's own state: valid memory until the thread clears the key */
		const unsigned char *ts = pthread_getspecific((pthread_key_t)key);
		if (!ts)
			return 0;
		uintptr_t cf = word(ts, L.ts_cframe);
		chunk = word(ts, L.ts_chunk);
		if (!cf)
			return 0;
		/* cframe is &tstate->root_cframe or a _PyCFrame on this thread's
		 * stack above us: mapped, though current_frame may not be set yet */
		f = word((const unsigned char *)cf, L.ts_frame);
	} else {
		unsigned char tb[PPA_PY_TS_MAX];
		if (!find_ts(tb))
			return 0;
		f = word(tb, L.ts_frame);
		chunk = word(tb, L.ts_chunk);
	}
	uintptr_t csize = 0;
	if (chunk && L.rt_tss >= 0)
		memcpy(&csize, (const void *)(chunk + 8), sizeof csize); /* the thread's own, live */
	else if (chunk && self_read(&csize, chunk + 8, sizeof csize) != 0)
		chunk = 0;
	const size_t frn = (size_t)L.fr_read;
	uint32_t n = 0;
	for (uint32_t hops = 0; f && n < max && hops < 2 * max; hops++) {
		unsigned char fr[PPA_PY_FR_MAX];
		if (chunk && f >= chunk && csize >= frn && f - chunk <= csize - frn)
			memcpy(fr, (const void *)f, frn);
		else if (self_read(fr, f, frn) != 0)
			break;
		uintptr_t previous = word(fr, L.fr_previous);
		if (L.fr_owner >= 0 && fr[L.fr_owner] == L.owner_cstack) {
			/* 3.12+: the shim an eval call pushes on the C stack; the
			 * frame below it was that call's first (its entry frame) */
			if (n)
				out[n - 1] |= 1;
			f = previous;
			continue;
		}
		uintptr_t code = word(fr, L.fr_code), instr = word(fr, L.fr_instr);
		intptr_t idx = instr && code ? ((intptr_t)instr - (intptr_t)(code + (uintptr_t)L.co_code)) / 2 + 1 : 0;
		if (idx < 0 || idx >= (1 << 19))
			idx = 0;
		int entry = L.fr_is_entry >= 0 && fr[L.fr_is_entry];
		out[n++] = (uint64_t)(code >> 3) << 20 | (uint64_t)idx << 1 | (entry ? 1u : 0u);
		f = previous;
	}
	*truncated = f != 0;
	return n;
}

/* ---------------------------------------------------------------- set-up */

/* set by ppa_pystack_probe: frames for allocation sites only, no
 * sampling, so no line about frames in samples */
static int probe_only;

static void set_state(int st, const char *line)
{
	snprintf(state_line, sizeof state_line, "%s", line);
	if (!probe_only)
		pp_meta("agent.python_frames", state_line);
	atomic_store_explicit(&py_state, st, memory_order_release);
}

static void set_off(const char *why)
{
	set_state(-1, why);
}

static int parse_version(const char *s, unsigned *maj, unsigned *min, unsigned *mic)
{
	*mic = 0;
	return sscanf(s, "%u.%u.%u", maj, min, mic) >= 2 ? 0 : -1;
}

/* Looks for CPython in the process (the executable or a libpython loaded
 * later). Returns 1 when found and the version is one whose layout we know,
 * 0 when not (yet) a Python process, -1 when refused (meta written). */
static int py_at_start = -1; /* _PyRuntime found at start-up (constructor, main thread) */

static int libpython_cb(struct dl_phdr_info *i, size_t n, void *ud)
{
	(void)n;
	if (i->dlpi_name && strstr(i->dlpi_name, "libpython")) {
		*(int *)ud = 1;
		return 1;
	}
	return 0;
}

/* Whether CPython can be in the process, without a failing dlsym: glibc
 * allocates the failure's message, and on the stats thread (polled every
 * period with --sample) that gave the thread a malloc arena of its own
 * (64 MiB of address space). The first look is in the constructor, on the
 * program's main thread; later, a libpython among the loaded objects. */
static int python_loaded(void)
{
	if (py_at_start < 0)
		py_at_start = dlsym(RTLD_DEFAULT, "_PyRuntime") != NULL;
	if (py_at_start)
		return 1;
	int found = 0;
	dl_iterate_phdr(libpython_cb, &found);
	return found;
}

static int detect(void)
{
	if (!python_loaded())
		return 0;
	void *rts = dlsym(RTLD_DEFAULT, "_PyRuntime");
	if (!rts)
		return 0;
	const unsigned long *hex = dlsym(RTLD_DEFAULT, "Py_Version");
	const char *(*getver)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
	unsigned maj = 0, min = 0, mic = 0;
	if (fake_version[0])
		parse_version(fake_version, &maj, &min, &mic);
	else if (hex) {
		maj = (unsigned)(*hex >> 24) & 0xff;
		min = (unsigned)(*hex >> 16) & 0xff;
		mic = (unsigned)(*hex >> 8) & 0xff;
	} else if (getver)
		parse_version(getver(), &maj, &min, &mic);
	snprintf(version, sizeof version, "%u.%u.%u", maj, min, mic);
	char why[200];
	if (no_python) {
		snprintf(why, sizeof why, "off (--no-python): CPython %s; native frames only", version);
		set_off(why);
		return -1;
	}
	const ppa_pylayout *tab = maj == 3 ? ppa_pylayout_table(min) : NULL;
	if (tab) {
		L = *tab;
	} else if (maj == 3 && min == 13) {
		unsigned char dbg[PPA_PY_DEBUG_OFFSETS_SIZE];
		char bad[120];
		uint64_t hv = hex ? (uint64_t)*hex : (uint64_t)maj << 24 | min << 16 | mic << 8;
		int r = self_read(dbg, (uintptr_t)rts, sizeof dbg);
		if (r != 0)
			snprintf(bad, sizeof bad, "_PyRuntime unreadable (%s)", strerror(errno));
		if (r != 0 || ppa_pylayout_debug(dbg, sizeof dbg, hv, &L, bad, sizeof bad) != 0) {
			snprintf(why, sizeof why, "off: CPython %s: %s; native frames only", version, bad);
			set_off(why);
			return -1;
		}
	} else {
		snprintf(why, sizeof why, "off: CPython %s frame layout not known to this build (3.11, 3.12: "
			 "checked tables; 3.13: its debug offsets); native frames only", version);
		set_off(why);
		return -1;
	}
	code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
	str_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
	bytes_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
	void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (eval && dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
		eval_lo = (uintptr_t)eval;
		eval_hi = eval_lo + sym->st_size;
	}
	if (!code_type || !str_type || !bytes_type || !eval_hi) {
		snprintf(why, sizeof why, "off: CPython %s without the symbols needed (PyCode_Type, "
			 "_PyEval_EvalFrameDefault and its size); native frames only", version);
		set_off(why);
		return -1;
	}
	unsigned char probe[8];
	if (self_read(probe, (uintptr_t)rts, sizeof probe) != 0) {
		snprintf(why, sizeof why, "off: process_vm_readv on the own process failed (%s); native frames only",
			 strerror(errno));
		set_off(why);
		return -1;
	}
	rt = rts;
	return 1;
}

/* Checks the offsets against the running interpreter: the thread holding
 * the GIL must belong to the main interpreter and its current frame must
 * point at a code object. 1 checked, 0 not yet decidable, -1 mismatch. */
static int check_layout(void)
{
	if (L.rt_tstate_current >= 0) {
		/* 3.11: the thread holding the GIL */
		unsigned char r[640];
		if (self_read(r, (uintptr_t)rt, sizeof r) != 0)
			return -1;
		int init, tss;
		memcpy(&init, r + L.rt_initialized, sizeof init);
		memcpy(&tss, r + L.rt_tss, sizeof tss);
		uintptr_t main_i = word(r, L.rt_main_interp), auto_i = word(r, L.rt_auto_interp);
		uintptr_t cur = word(r, L.rt_tstate_current);
		if (!init || !tss || !main_i || !cur)
			return 0;
		if (auto_i != main_i)
			return -1;
		unsigned char ts[PPA_PY_TS_MAX];
		if (self_read(ts, cur, (size_t)L.ts_read) != 0)
			return 0; /* the thread state went away meanwhile */
		if (word(ts, L.ts_interp) != main_i)
			return 0; /* a subinterpreter's thread, or a stale read */
		uintptr_t cf = word(ts, L.ts_cframe), f = 0, code = 0, type = 0;
		if (!cf || self_read(&f, cf + (uintptr_t)L.ts_frame, sizeof f) != 0 || !f)
			return 0;
		if (self_read(&code, f + (uintptr_t)L.fr_code, sizeof code) != 0 ||
		    self_read(&type, code + (uintptr_t)L.ob_type, sizeof type) != 0)
			return 0;
		return type == code_type ? 1 : -1;
	}
	/* 3.12, 3.13: the main interpreter's threads, newest first; the first
	 * one running Python code decides */
	const uintptr_t R = (uintptr_t)rt;
	int v = 0;
	if (L.rt_initialized >= 0 && (self_read(&v, R + (uintptr_t)L.rt_initialized, sizeof v) != 0 || !v))
		return 0;
	if (L.rt_tss >= 0 && (self_read(&v, R + (uintptr_t)L.rt_tss, sizeof v) != 0 || !v))
		return 0;
	uintptr_t in = 0, next = 0, ts = 0;
	if (L.rt_main_interp >= 0) {
		if (self_read(&in, R + (uintptr_t)L.rt_main_interp, sizeof in) != 0)
			return -1;
	} else {
		/* interpreters.head: the newest; the main one is the last */
		if (self_read(&in, R + (uintptr_t)L.rt_interp_head, sizeof in) != 0)
			return -1;
		for (int i = 0; in && i < 64; i++) {
			if (self_read(&next, in + (uintptr_t)L.in_next, sizeof next) != 0)
				return -1;
			if (!next)
				break;
			in = next;
		}
		if (next)
			return 0;
	}
	if (!in || self_read(&ts, in + (uintptr_t)L.in_threads_head, sizeof ts) != 0)
		return 0;
	for (int k = 0; ts && k < 64; k++) {
		unsigned char tb[PPA_PY_TS_MAX];
		if (self_read(tb, ts, (size_t)L.ts_read) != 0)
			return 0;
		if (word(tb, L.ts_interp) != in)
			return -1;
		uintptr_t f = 0;
		if (L.ts_cframe < 0)
			f = word(tb, L.ts_frame);
		else if (word(tb, L.ts_cframe) &&
			 self_read(&f, word(tb, L.ts_cframe) + (uintptr_t)L.ts_frame, sizeof f) != 0)
			f = 0;
		for (int j = 0; f && j < 8; j++) {
			unsigned char fr[PPA_PY_FR_MAX];
			uintptr_t type = 0;
			if (self_read(fr, f, (size_t)L.fr_read) != 0)
				break;
			if (L.fr_owner >= 0 && fr[L.fr_owner] == L.owner_cstack) {
				f = word(fr, L.fr_previous);
				continue;
			}
			if (self_read(&type, word(fr, L.fr_code) + (uintptr_t)L.ob_type, sizeof type) != 0)
				break;
			return type == code_type ? 1 : -1;
		}
		ts = word(tb, L.ts_next);
	}
	return 0;
}

static void poll_state(void)
{
	static int found;
	if (atomic_load(&py_state) != 0)
		return;
	if (!found) {
		int d = detect();
		if (d <= 0)
			return;
		found = 1;
	}
	int c = check_layout();
	if (c > 0) {
		char v[96];
		snprintf(v, sizeof v, "on: CPython %s", version);
		set_state(1, v);
	} else if (c < 0 && ++checks_failed >= 50) {
		char why[200];
		snprintf(why, sizeof why, "off: CPython %s does not have the 3.%u layout this build read (%s: "
			 "thread state / frame / code object mismatch); native frames only", version, L.minor, L.source);
		set_off(why);
	}
}

int ppa_pystack_start(void)
{
	static int env_read;
	if (!env_read) {
		/* read once, before the program can touch its environment */
		const char *v = getenv(PP_ENV_PYSTACK_FAKE_VERSION); /* tests: an unchecked version */
		snprintf(fake_version, sizeof fake_version, "%s", v ? v : "");
		v = getenv(PP_ENV_PYTHON);
		no_python = v && strcmp(v, "0") == 0;
		env_read = 1;
	}
	atomic_store(&resolver_stop, 0);
	if (!pring) {
		void *p = ppa_map(sizeof(pyslot) * PY_RING);
		if (!p)
			return -1;
		/* resident from the start, as the sample ring (agent_sample.c):
		 * never a rise in the program's memory as samples fill it */
		memset(p, 0, sizeof(pyslot) * PY_RING);
		pring = p;
	}
	poll_state();
	return 0;
}

/* ---------------------------------------------------------------- resolution */

/* CPython 3.11-3.13 location table (Objects/locations.md): entries of a first
 * byte 1ccccnnn (code c, n+1 code units) and varint payloads. */
static const unsigned char *varint(const unsigned char *p, const unsigned char *end, unsigned *out)
{
	unsigned v = 0, shift = 0;
	while (p < end) {
		unsigned b = *p++;
		v |= (b & 63u) << shift;
		shift += 6;
		if (!(b & 64) || shift > 30)
			break;
	}
	*out = v;
	return p;
}

int ppa_py_line(const unsigned char *tab, size_t len, int firstlineno, int index)
{
	const unsigned char *p = tab, *end = tab + len;
	int line = firstlineno, addr = 0;
	if (index < 0)
		return firstlineno;
	while (p < end) {
		unsigned b = *p++, u;
		if (!(b & 0x80))
			continue; /* resynchronise on a first byte */
		int code = (int)(b >> 3) & 15, units = (int)(b & 7) + 1, has_line = 1;
		if (code == 15)
			has_line = 0;
		else if (code == 14 || code == 13) {
			p = varint(p, end, &u);
			line += (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
			if (code == 14)
				for (int k = 0; k < 3; k++)
					p = varint(p, end, &u);
		} else if (code >= 10) {
			line += code - 10;
			p += 2;
		} else
			p += 1;
		if (index < addr + units)
			return has_line ? line : -1;
		addr += units;
	}
	return -1;
}

/* A str object as UTF-8 into buf. 0 or -1 if not a readable str. */
static int read_str(uintptr_t o, char *buf, size_t cap)
{
	unsigned char h[128];
	if (!o || L.str_compact_data > (int)sizeof h || self_read(h, o, (size_t)L.str_compact_data) != 0 ||
	    word(h, L.ob_type) != str_type)
		return -1;
	uint64_t len = word(h, L.str_length);
	unsigned state;
	memcpy(&state, h + L.str_state, sizeof state);
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4) || len > 4096)
		return -1;
	unsigned char raw[4096 * 4];
	uintptr_t data = o + (uintptr_t)(ascii ? L.str_ascii_data : L.str_compact_data);
	if (len && self_read(raw, data, (size_t)len * kind) != 0)
		return -1;
	size_t w = 0;
	for (uint64_t i = 0; i < len; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? (uint32_t)(raw[2 * i] | raw[2 * i + 1] << 8)
			     : (uint32_t)(raw[4 * i] | raw[4 * i + 1] << 8 | raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24);
		char enc[4];
		size_t k;
		if (c < 0x80) { enc[0] = (char)c; k = 1; }
		else if (c < 0x800) { enc[0] = (char)(0xC0 | c >> 6); enc[1] = (char)(0x80 | (c & 63)); k = 2; }
		else if (c < 0x10000) {
			enc[0] = (char)(0xE0 | c >> 12); enc[1] = (char)(0x80 | ((c >> 6) & 63));
			enc[2] = (char)(0x80 | (c & 63)); k = 3;
		} else {
			enc[0] = (char)(0xF0 | (c >> 18 & 7)); enc[1] = (char)(0x80 | ((c >> 12) & 63));
			enc[2] = (char)(0x80 | ((c >> 6) & 63)); enc[3] = (char)(0x80 | (c & 63)); k = 4;
		}
		if (w + k >= cap)
			break;
		memcpy(buf + w, enc, k);
		w += k;
	}
	buf[w] = 0;
	return 0;
}

/* Caches in agent-mapped memory: (frame word → id) and (code, line → id),
 * entries under a pp_hash index each. Cleared at CACHE entries, so a long
 * run re-emits a few rows rather than growing. */
#define CACHE 8192
typedef struct centry { uint64_t a, b; int64_t id; } centry;
typedef struct pcache { centry *e; uint32_t n; pp_hash index; } pcache;
static pcache by_word = {.index.al = &ppa_map_alloc}, by_line = {.index.al = &ppa_map_alloc};
static int64_t next_id;
static _Atomic uint64_t resolve_misses;  /* code objects read (cache misses) */
static uint64_t unreadable;      /* Python frames written as p0 (drain only) */

static int64_t cache_get(const pcache *c, uint64_t a, uint64_t b)
{
	for (uint32_t it = 0, i; pp_hash_next(&c->index, pp_hash_u64x2(a, b), &it, &i);)
		if (c->e[i].a == a && c->e[i].b == b)
			return c->e[i].id;
	return 0;
}

/* never fails: the index is reserved for CACHE entries up front */
static void cache_put(pcache *c, uint64_t a, uint64_t b, int64_t id)
{
	if (pp_hash_add(&c->index, pp_hash_u64x2(a, b), c->n) == 0)
		c->e[c->n++] = (centry){a, b, id};
}

static void cache_clear(void)
{
	pp_hash_clear(&by_word.index);
	pp_hash_clear(&by_line.index);
	by_word.n = by_line.n = 0;
}

/* Reads a frame word's code object: qualified name, file, line. 0 or -1. */
static int describe(uint64_t fw, char *qual, size_t qcap, char *file, size_t fcap, int *line_out)
{
	uintptr_t code = (uintptr_t)(fw >> 20) << 3;
	int index = (int)((fw >> 1) & ((1u << 19) - 1)) - 1;
	unsigned char co[PPA_PY_CO_MAX];
	if (self_read(co, code, (size_t)L.co_read) != 0 || word(co, L.ob_type) != code_type ||
	    read_str(word(co, L.co_qualname), qual, qcap) != 0 ||
	    read_str(word(co, L.co_filename), file, fcap) != 0)
		return -1;
	int first;
	memcpy(&first, co + L.co_firstlineno, sizeof first);
	int line = first;
	uintptr_t lt = word(co, L.co_linetable);
	unsigned char bh[64];
	static unsigned char tab[1 << 20]; /* under resolve_lock */
	if (lt && self_read(bh, lt, (size_t)L.bytes_data) == 0 && word(bh, L.ob_type) == bytes_type) {
		uint64_t n = word(bh, L.var_size);
		if (n <= sizeof tab && self_read(tab, lt + (uintptr_t)L.bytes_data, (size_t)n) == 0) {
			line = ppa_py_line(tab, (size_t)n, first, index);
			if (line < 0)
				line = first;
		}
	}
	*line_out = line;
	return 0;
}

static int64_t frame_row(uintptr_t code, int line, const char *qual, const char *file)
{
	int64_t id = cache_get(&by_line, code, (uint64_t)line);
	if (!id) {
		id = ++next_id;
		const char *base = strrchr(file, '/');
		char symbol[1700];
		snprintf(symbol, sizeof symbol, "%s (%s:%d)", qual, base ? base + 1 : file, line);
		pp_row_py_frames(id, symbol, file[0] == '/' ? file : "python", qual, line);
		cache_put(&by_line, code, (uint64_t)line, id);
	}
	return id;
}

static int64_t resolve_frame_locked(uint64_t fw)
{
	uint64_t key = fw & ~1ull;
	if (!by_word.e)
		return 0;
	if (by_word.n >= CACHE) {
		/* ids stay unique in the run; only the caches start again */
		cache_clear();
	}
	int64_t id = cache_get(&by_word, key, 0);
	if (id)
		return id;
	resolve_misses++;
	char qual[512], file[1024];
	int line;
	if (describe(fw, qual, sizeof qual, file, sizeof file, &line) != 0)
		return 0;
	id = frame_row((uintptr_t)(fw >> 20) << 3, line, qual, file);
	cache_put(&by_word, key, 0, id);
	return id;
}

/* the drain and the resolver thread share the caches */
static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;

static int64_t resolve_frame(uint64_t fw)
{
	pthread_mutex_lock(&resolve_lock);
	int64_t id = resolve_frame_locked(fw);
	pthread_mutex_unlock(&resolve_lock);
	return id;
}

/* ---------------------------------------------------------------- resolver
 * A code object can be freed soon after the frame that ran it returns (a
 * module's top-level code at the end of its import): waiting for the next
 * drain (20 ms) lost a third of the Python frames while importing numpy.
 * This thread resolves the code objects of new samples within 0.5 ms
 * while new code keeps appearing (start-up, imports), backing off to 8 ms
 * in a steady loop; the drain then finds them cached. */
static pthread_t resolver;
static uint64_t resolver_cursor;

static void *resolver_loop(void *arg);

static void *resolver_main(void *arg)
{
	ppa_own_thread(1);
	void *r = resolver_loop(arg);
	ppa_own_thread(0);
	return r;
}

static void *resolver_loop(void *arg)
{
	(void)arg;
	ppa_guard_set(1);
	long nap = 500000; /* ns: 0.5 ms while new code objects appear, backing off to 8 ms */
	for (;;) {
		atomic_store(&resolver_busy, 1);
		if (atomic_load(&resolver_stop))
			break;
		uint64_t hi = ppa_sampler_written(), misses = resolve_misses;
		if (hi - resolver_cursor > PY_RING)
			resolver_cursor = hi - PY_RING;
		for (; resolver_cursor < hi; resolver_cursor++) {
			const pyslot *ps = &pring[resolver_cursor % PY_RING];
			if (atomic_load_explicit(&ps->seq, memory_order_acquire) != resolver_cursor + 1)
				break; /* not written yet */
			for (uint32_t k = 0; k < ps->n && k < PY_MAX; k++)
				resolve_frame(ps->f[k]);
		}
		atomic_store(&resolver_busy, 0);
		nap = resolve_misses != misses ? 500000 : nap < 8000000 ? nap * 2 : nap;
		struct timespec ts = {0, nap};
		nanosleep(&ts, NULL);
	}
	atomic_store(&resolver_busy, 0);
	return NULL;
}

static void resolver_start(void)
{
	if (atomic_load(&resolver_on) || !by_word.e)
		return;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* no program signal lands there */
	atomic_store(&resolver_stop, 0);
	resolver_cursor = ppa_sampler_written();
	if (pthread_create(&resolver, NULL, resolver_main, NULL) == 0) {
		pthread_detach(resolver);
		atomic_store(&resolver_on, 1);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Stops the resolver before the recorder closes. No join: this may run in
 * a fatal-signal handler; wait (bounded) until it is out of its work. */
void ppa_pystack_stop(void)
{
	if (!atomic_exchange(&resolver_on, 0))
		return;
	atomic_store(&resolver_stop, 1);
	for (int i = 0; i < 200 && atomic_load(&resolver_busy); i++) {
		struct timespec ts = {0, 250000};
		nanosleep(&ts, NULL);
	}
}

int ppa_pystack_active(void)
{
	return pring != NULL && atomic_load(&py_state) >= 0;
}

/* Writes a sample's stack as text (leaf first): native addresses in hex,
 * each _PyEval_EvalFrameDefault frame replaced by "p<id>" tokens of the
 * Python frames it was running. ips[0] is the interrupted pc, the others
 * return addresses. */
size_t ppa_pystack_format(uint32_t slot, const uintptr_t *ips, uint32_t n, int native_truncated,
			  char *out, size_t cap)
{
	const pyslot *ps = pring ? &pring[slot % PY_RING] : NULL;
	uint32_t np = ps ? ps->n : 0;
	/* groups of Python frames, leaf first: each ends at an entry frame */
	uint32_t gstart[PY_MAX + 1], ng = 0;
	for (uint32_t i = 0; i < np; i++) {
		if (i == 0 || (ps->f[i - 1] & 1))
			gstart[ng++] = i;
	}
	gstart[ng] = np;
	uint32_t ne = 0;
	for (uint32_t i = 0; i < n; i++) {
		uintptr_t a = i ? ips[i] - 1 : ips[i];
		if (a >= eval_lo && a < eval_hi)
			ne++;
	}
	/* When both stacks are complete, align from the root: the interrupted
	 * C frame may not have pushed its Python frame yet. When either was cut,
	 * align from the leaf. */
	int from_root = !native_truncated && !(ps && ps->truncated);
	size_t w = 0;
	uint32_t e = 0;
	out[0] = 0;
	for (uint32_t i = 0; i < n && w + 24 < cap; i++) {
		uintptr_t a = i ? ips[i] - 1 : ips[i];
		int g = -1;
		if (eval_hi && a >= eval_lo && a < eval_hi) {
			g = from_root ? (int)e - (int)ne + (int)ng : (int)e;
			if (g < 0 || g >= (int)ng)
				g = -1;
			e++;
		}
		if (g < 0) {
			w += (size_t)snprintf(out + w, cap - w, "%s%lx", w ? "," : "", (unsigned long)ips[i]);
			continue;
		}
		for (uint32_t k = gstart[g]; k < gstart[g + 1] && w + 24 < cap; k++) {
			int64_t id = resolve_frame(ps->f[k]);
			unreadable += id == 0;
			w += (size_t)snprintf(out + w, cap - w, "%sp%lld", w ? "," : "", (long long)id);
		}
	}
	return w;
}

static int caches_init(void)
{
	if (by_word.e)
		return 0;
	centry *p = ppa_map(sizeof(centry) * CACHE * 2);
	if (!p)
		return -1;
	if (pp_hash_reserve(&by_word.index, CACHE) != 0 || pp_hash_reserve(&by_line.index, CACHE) != 0) {
		pp_hash_free(&by_word.index);
		pp_hash_free(&by_line.index);
		ppa_unmap(p, sizeof(centry) * CACHE * 2);
		return -1;
	}
	memset(p, 0, sizeof(centry) * CACHE * 2); /* resident now, as the rings */
	by_line.e = p + CACHE;
	by_word.e = p;
	return 0;
}

void ppa_pystack_poll(void)
{
	if (!pring || caches_init() != 0)
		return;
	poll_state();
	if (atomic_load(&py_state) == 1 && atomic_load(&ppa_recording) && !atomic_load(&resolver_stop))
		resolver_start();
}

void ppa_pystack_report(void)
{
	static uint64_t said;
	if (unreadable && unreadable != said && atomic_load(&ppa_recording)) {
		said = unreadable;
		char v[32];
		snprintf(v, sizeof v, "%llu", (unsigned long long)unreadable);
		pp_meta("agent.python_frames_unreadable", v);
	}
}

void ppa_pystack_after_fork(void)
{
	/* threads do not survive fork: the next drain starts a resolver */
	atomic_store(&resolver_on, 0);
	atomic_store(&resolver_busy, 0);
	pthread_mutex_init(&resolve_lock, NULL);
	/* the child records a new run: its py_frames rows start again */
	if (by_word.e)
		cache_clear();
	next_id = 0;
	unreadable = 0;
	if (atomic_load(&py_state) != 0)
		pp_meta("agent.python_frames", state_line);
}

/* ---------------------------------------------------------------- allocation sites */

/* Frames for allocation sites without sampling (agent_kept.c): the same
 * detection and layout check, from a Python thread at a step's start,
 * without the sample ring, the resolver thread or the run_meta line about
 * frames in samples. Until it is decided (1 or -1), called again at the
 * next step. */
void ppa_pystack_probe(void)
{
	if (atomic_load(&py_state) != 0)
		return;
	static int env_read;
	if (!env_read) {
		const char *v = getenv(PP_ENV_PYSTACK_FAKE_VERSION);
		snprintf(fake_version, sizeof fake_version, "%s", v ? v : "");
		v = getenv(PP_ENV_PYTHON);
		no_python = v && strcmp(v, "0") == 0;
		env_read = 1;
	}
	pthread_mutex_lock(&resolve_lock);
	int ok = caches_init() == 0;
	pthread_mutex_unlock(&resolve_lock);
	if (!ok)
		return;
	if (!pring)
		probe_only = 1;
	poll_state();
}

/* Files of the interpreter, installed packages and phaseprof's own
 * Python layer (the adapter's wrappers are on every call's stack): an
 * allocation made there is attributed to the program's frame that called
 * into them. */
static int library_file(const char *file)
{
	return file[0] == '<' || strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") ||
	       strstr(file, "/lib/python3.") || strstr(file, "/phaseprof/");
}

/* The site of an allocation from its frames (leaf first): the innermost
 * frame in the program's own files, else the innermost frame. Writes
 * "qualname (file.py:line)" and returns its py_frames id (0: none
 * readable). */
int64_t ppa_pystack_site(const uint64_t *fw, uint32_t n, char *sym, size_t cap)
{
	sym[0] = 0;
	int64_t id = 0;
	pthread_mutex_lock(&resolve_lock);
	for (uint32_t i = 0; i < n; i++) {
		char qual[256], file[1024];
		int line;
		if (describe(fw[i], qual, sizeof qual, file, sizeof file, &line) != 0)
			continue;
		int lib = library_file(file);
		if (lib && sym[0])
			continue; /* the innermost is kept as the fallback */
		const char *base = strrchr(file, '/');
		snprintf(sym, cap, "%s (%s:%d)", qual, base ? base + 1 : file, line);
		id = frame_row((uintptr_t)(fw[i] >> 20) << 3, line, qual, file);
		if (!lib)
			break;
	}
	pthread_mutex_unlock(&resolve_lock);
	return id;
}
