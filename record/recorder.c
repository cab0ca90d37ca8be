/*
 * The recorder: per-thread event buffers drained by one writer thread into
 * the spool.
 *
 * Hot path (emit): load the thread's buffer, write 24 bytes, publish the new
 * count with a release store (the spool gets them packed, ~3 bytes each). A full buffer is handed to the writer under a
 * mutex (once per buffer_events events). When no free buffer may be had
 * (max_buffers in flight: the writer is behind, e.g. many busy threads on
 * few cores) the thread drains the spool itself and goes on, so nothing is
 * lost and memory stays bounded (PP_FULL_DRAIN); with PP_FULL_DROP the
 * event is dropped and counted instead.
 *
 * With PP_FULL_DRAIN a thread drains already when a few buffers per thread
 * are in flight (recycled_buffers()), before max_buffers: a writer that is
 * behind at that point is behind for good (it has no core to itself), and
 * growing the backlog costs more than the drain: each new buffer is memory
 * the kernel must fault in and zero on first touch (~1 ns per byte on this
 * VM, as much as the event itself), used once. The buffers that do exist
 * are reused while warm.
 *
 * Ordering: the writer snapshots every thread's (buffer, count) and takes the
 * full-buffer list under the same lock threads use to hand buffers over, so a
 * thread's events reach the spool in order. Strings are taken after that
 * snapshot but written before the events, so no event refers to a string the
 * spool does not yet hold.
 */
#include "phaseprof.h"
#include "pp_env.h"
#include "pp_rows.h"
#include "recorder_internal.h"
#include "pp_grow.h"
#include "pp_hash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Per-thread name cache: pointer -> id, verified by content. */
#define NAME_CACHE 256
typedef struct name_cache_entry {
	const char *ptr;
	const char *text;             /* interned copy */
	uint32_t id;
} name_cache_entry;

typedef struct pp_buffer {
	struct pp_buffer *next;       /* in the full or free list */
	struct pp_thread *owner;
	uint32_t cap;
	_Atomic uint32_t n;           /* events committed */
	uint32_t flushed;             /* events already written (writer only) */
	pp_event ev[];
} pp_buffer;

typedef struct pp_thread {
	struct pp_thread *next;       /* registry */
	_Atomic(pp_buffer *) cur;
	uint32_t tid;
	uint64_t generation;          /* recorder generation this state belongs to */
	_Atomic uint64_t lost;        /* events dropped on this thread */
	uint64_t lost_reported;       /* writer only */
	uint64_t events;
	int dead;                     /* thread exited; writer frees after the last flush */
	struct name_cache_entry *names; /* pointer -> id cache (NAME_CACHE entries) */
} pp_thread;



static struct recorder {
	_Atomic int open;
	uint64_t generation;
	pp_options opts;
	char spool_path[4096];
	char spool_dir[4096];
	int spool_dir_mode;
	pp_spool_writer w;
	pp_spool_header header;
	uint32_t buffer_events, max_buffers;

	pthread_mutex_t lock;         /* registry, full/free lists, buffer count */
	pthread_cond_t wake;
	pp_thread *threads;
	pp_buffer *full_head, *full_tail;
	pp_buffer *free_list;
	uint32_t buffers;             /* allocated */
	uint32_t threads_seen;        /* registered this recording (sizes the recycled set) */
	int kicked;
	int stopping;
	pthread_t writer;
	int writer_running;

	pthread_mutex_t str_lock;     /* interning table + pending strings */
	pp_hash index;                /* hash of by_id[id] -> id */
	uint32_t next_id;
	uint32_t *pending;            /* ids not yet written */
	uint32_t pending_n, pending_cap;
	char **by_id;                 /* id -> text */
	uint32_t by_id_cap;

	pthread_mutex_t side_lock;    /* rows, meta, thread names: pre-encoded chunks */
	unsigned char *side;
	size_t side_n, side_cap;
	unsigned char *side_spare;     /* the last drained side buffer, for reuse */
	size_t side_spare_cap;
	uint64_t rows, rows_lost, rows_lost_reported;

	_Atomic uint64_t events_total;
	uint64_t lost_reported_total;  /* events-lost already written as LOSS chunks */
	uint64_t unwritten;            /* events the spool could not take (write failed) */
	uint64_t loss_unwritten;       /* events lost whose LOSS chunk could not be written */
	uint64_t rows_unwritten;       /* rows (and their losses) the spool could not take */
	_Atomic uint64_t self_drains;  /* times a thread drained because every buffer was in flight */
	pthread_mutex_t write_lock;   /* the spool fd: writer thread vs close/fork */
	char error[512];
	int atfork_installed;
	int atexit_installed;
	int pid;                      /* the process whose spool this is (start_spool) */
	_Atomic int foreign_noted;    /* a raw clone child that said it is not followed */
} R = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.str_lock = PTHREAD_MUTEX_INITIALIZER,
	.side_lock = PTHREAD_MUTEX_INITIALIZER,
	.write_lock = PTHREAD_MUTEX_INITIALIZER,
	.w.lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
};

/* initial-exec: the hot path must not call __tls_get_addr (PIC code would) */
#define PP_TLS __thread __attribute__((tls_model("initial-exec")))
static pp_phase_hook phase_hook;
static void *phase_hook_ud;

void pp_set_phase_hook(pp_phase_hook fn, void *ud)
{
	phase_hook_ud = ud;
	__atomic_store_n(&phase_hook, fn, __ATOMIC_RELEASE);
}

#define CALL_HOOK(begin, kind, name)                                                   \
	do {                                                                           \
		pp_phase_hook h_ = __atomic_load_n(&phase_hook, __ATOMIC_ACQUIRE);     \
		if (UNLIKELY(h_ != NULL))                                              \
			h_((begin), (kind), (name), phase_hook_ud);                    \
	} while (0)

static PP_TLS pp_thread *tls_thread;
static PP_TLS uint64_t tls_gen;       /* generation tls_thread belongs to: checked before any dereference */
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static const char *const kind_names[PP_KIND_COUNT] = {
#define KIND_NAME(e, name) [PP_##e] = #name,
	PP_KINDS(KIND_NAME)
#undef KIND_NAME
};

const char *pp_kind_name(pp_kind kind)
{
	if ((unsigned)kind >= PP_KIND_COUNT)
		return "unknown";
	return kind_names[kind];
}

int pp_kind_from_name(const char *name)
{
	for (int i = 0; i < PP_KIND_COUNT; i++)
		if (strcmp(kind_names[i], name) == 0)
			return i;
	return -1;
}

const char *pp_last_error(void) { return R.error; }
static inline int is_open(void) { return atomic_load_explicit(&R.open, memory_order_relaxed); }
int pp_is_open(void) { return is_open(); }

static void note_clone_child(void);

/* 1 in a process the recorder's state was copied into without a fork
 * handler running: a child made by a raw clone3 or clone system call. Its
 * locks may be held by threads it does not have (the spool writer in a
 * drain) and its descriptor is the parent's spool: it takes no recorder
 * lock and writes nothing, and says once, in the parent's spool, that it
 * was not followed. It changes no shared state: with CLONE_VM its memory
 * is the parent's. A system call: only on the cold paths (a full buffer,
 * a row, the close). */
static int foreign(void)
{
	if (!R.pid || (int)getpid() == R.pid)
		return 0;
	note_clone_child();
	return 1;
}

int pp_foreign_child(void) { return is_open() && foreign(); }
const char *pp_spool_path(void) { return R.spool_path; }

static void set_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(R.error, sizeof R.error, fmt, ap);
	va_end(ap);
}

uint64_t pp_now(void)
{
	uint64_t t = pp_mono_ns();
	return t > R.header.start_mono_ns ? t - R.header.start_mono_ns : 0;
}

/* ---------------------------------------------------------------- strings */

/* Returns the id of `s` (0 on allocation failure); the interned copy in *text. */
static uint32_t intern_locked(const char *s, const char **text)
{
	uint32_t h = pp_hash_str(s), id;
	for (uint32_t it = 0; pp_hash_next(&R.index, h, &it, &id);)
		if (strcmp(R.by_id[id], s) == 0) {
			*text = R.by_id[id];
			return id;
		}
	/* room first, so a failure leaves nothing half-added */
	if (PP_GROW(R.by_id, R.next_id + 2, R.by_id_cap) != 0 ||
	    PP_GROW(R.pending, R.pending_n + 1, R.pending_cap) != 0)
		return 0;
	char *copy = strdup(s);
	if (!copy)
		return 0;
	id = R.next_id + 1;
	if (pp_hash_add(&R.index, h, id) != 0) {
		free(copy);
		return 0;
	}
	R.next_id = id;
	R.by_id[id] = copy;
	R.pending[R.pending_n++] = id;
	*text = copy;
	return id;
}

static pp_thread *thread_init(void);

static uint32_t intern(const char *s)
{
	if (!s)
		s = "";
	/* per-thread cache keyed by pointer, verified by content (names may be
	 * dynamic buffers whose content changes). It lives on the heap, not in
	 * TLS: static TLS is scarce for a preloaded/audit library. */
	pp_thread *t = tls_thread;
	if (!t || tls_gen != R.generation)
		t = thread_init();
	name_cache_entry *e = NULL;
	if (t && t->names) {
		uintptr_t p = (uintptr_t)s;
		e = &t->names[(p >> 3) & (NAME_CACHE - 1)];
		if (e->ptr == s && strcmp(e->text, s) == 0)
			return e->id;
	}
	if (foreign())
		return 0;
	const char *text = NULL;
	pthread_mutex_lock(&R.str_lock);
	uint32_t id = intern_locked(s, &text);
	pthread_mutex_unlock(&R.str_lock);
	if (id && e) {
		e->ptr = s;
		e->text = text;
		e->id = id;
	}
	return id;
}

/* ---------------------------------------------------------------- threads */

static void thread_exit(void *arg)
{
	pp_thread *t = arg;
	/* a closed or re-opened recorder freed this state already */
	if (!t || tls_thread != t || tls_gen != R.generation)
		return;
	pthread_mutex_lock(&R.lock);
	if (tls_gen == R.generation)
		t->dead = 1;
	pthread_mutex_unlock(&R.lock);
	tls_thread = NULL;
}

static void make_key(void) { pthread_key_create(&thread_key, thread_exit); }

/* Buffers a PP_FULL_DRAIN recording grows to before threads drain: two per
 * thread (the one being filled, one with the writer) and a few spare. */
static uint32_t recycled_buffers(void)
{
	uint32_t n = 2 * R.threads_seen + 4;
	return R.opts.full_policy == PP_FULL_DRAIN && n < R.max_buffers ? n : R.max_buffers;
}

static pp_buffer *buffer_get_locked(pp_thread *owner, uint32_t limit)
{
	pp_buffer *b = R.free_list;
	if (b) {
		R.free_list = b->next;
	} else {
		if (R.buffers >= limit)
			return NULL;
		b = malloc(sizeof *b + (size_t)R.buffer_events * sizeof(pp_event));
		if (!b)
			return NULL;
		R.buffers++;
		b->cap = R.buffer_events;
	}
	b->next = NULL;
	b->owner = owner;
	atomic_store_explicit(&b->n, 0, memory_order_relaxed);
	b->flushed = 0;
	return b;
}

static pp_thread *thread_init(void)
{
	if (!is_open() || foreign())
		return NULL;
	pthread_once(&key_once, make_key);
	pp_thread *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->names = calloc(NAME_CACHE, sizeof *t->names); /* optional: NULL just means no cache */
	t->tid = (uint32_t)syscall(SYS_gettid);
	pthread_mutex_lock(&R.lock);
	t->generation = R.generation;
	R.threads_seen++;
	pp_buffer *b = buffer_get_locked(t, R.max_buffers);
	atomic_store(&t->cur, b);
	t->next = R.threads;
	R.threads = t;
	pthread_mutex_unlock(&R.lock);
	tls_thread = t;
	tls_gen = t->generation;
	pthread_setspecific(thread_key, t);
	return t;
}

static void drain(int final);

/* The spool's lock taken on a program's thread (a drain of its own, the
 * close, fork): the thread's signals are held back meanwhile, so none of
 * the program's handlers runs in the middle of its writes — one that
 * closes or dup2s a descriptor (pp_spool_fd_enter) would move the spool's
 * between a write's check and the write, and one that records would wait
 * for the lock its own thread holds. The writer thread blocks every signal
 * for its whole life. */
static void write_lock_held(sigset_t *old)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, old);
	pthread_mutex_lock(&R.write_lock);
}

static void write_unlock_held(const sigset_t *old)
{
	pthread_mutex_unlock(&R.write_lock);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* The current buffer is full (or missing): hand it to the writer, take another. */
static pp_buffer *buffer_swap(pp_thread *t)
{
	if (foreign())
		return NULL;
	pthread_mutex_lock(&R.lock);
	pp_buffer *old = atomic_load_explicit(&t->cur, memory_order_relaxed);
	if (old && atomic_load_explicit(&old->n, memory_order_relaxed) < old->cap) {
		pthread_mutex_unlock(&R.lock);
		return old;
	}
	pp_buffer *b = buffer_get_locked(t, recycled_buffers());
	/* Every buffer is in flight: do the writer's work on this thread.
	 * write_lock orders us with the writer (one drain at a time, so each
	 * thread's events stay in order); the drain writes this thread's full
	 * buffer too, and recycles the queued ones — which another thread may
	 * take first, hence the (bounded) retries. */
	for (int tries = 0; !b && R.opts.full_policy == PP_FULL_DRAIN && !R.stopping && tries < 100;
	     tries++) {
		pthread_mutex_unlock(&R.lock);
		sigset_t old_mask;
		write_lock_held(&old_mask);
		drain(0);
		write_unlock_held(&old_mask);
		pthread_mutex_lock(&R.lock);
		atomic_fetch_add_explicit(&R.self_drains, 1, memory_order_relaxed);
		b = buffer_get_locked(t, recycled_buffers());
	}
	if (!b) /* others took every recycled one: grow, within max_buffers */
		b = buffer_get_locked(t, R.max_buffers);
	if (b) {
		if (old) {
			if (R.full_tail)
				R.full_tail->next = old;
			else
				R.full_head = old;
			R.full_tail = old;
		}
		atomic_store_explicit(&t->cur, b, memory_order_release);
	}
	R.kicked = 1;
	pthread_cond_signal(&R.wake);
	pthread_mutex_unlock(&R.lock);
	return b;
}

static inline void write_event(pp_buffer *b, uint32_t n, uint8_t type, uint8_t kind,
			       uint32_t name, uint64_t arg, uint64_t ts)
{
	pp_event *e = &b->ev[n];
	e->ts = ts ? ts : pp_ticks();
	e->type = type;
	e->kind = kind;
	e->reserved = 0;
	e->name = name;
	e->arg = arg;
	atomic_store_explicit(&b->n, n + 1, memory_order_release);
}

/* Everything but the common case: first event of a thread, full buffer. Kept
 * out of line so the fast path needs no stack frame. */
static __attribute__((noinline, cold)) void emit_slow(uint8_t type, uint8_t kind, uint32_t name,
							uint64_t arg, uint64_t ts)
{
	pp_thread *t = tls_thread;
	if (!is_open() || foreign())
		return;
	if (!t || tls_gen != R.generation) {
		t = thread_init();
		if (!t)
			return;
	}
	pp_buffer *b = atomic_load_explicit(&t->cur, memory_order_relaxed);
	uint32_t n;
	if (!b || (n = atomic_load_explicit(&b->n, memory_order_relaxed)) == b->cap) {
		b = buffer_swap(t);
		if (!b) {
			atomic_fetch_add_explicit(&t->lost, 1, memory_order_relaxed);
			return;
		}
		n = atomic_load_explicit(&b->n, memory_order_relaxed);
	}
	write_event(b, n, type, kind, name, arg, ts);
}

static inline void emit(uint8_t type, uint8_t kind, uint32_t name, uint64_t arg, uint64_t ts)
{
	pp_thread *t = tls_thread;
	if (LIKELY(t && tls_gen == R.generation)) {
		pp_buffer *b = atomic_load_explicit(&t->cur, memory_order_relaxed);
		if (LIKELY(b)) {
			uint32_t n = atomic_load_explicit(&b->n, memory_order_relaxed);
			if (LIKELY(n < b->cap)) {
				write_event(b, n, type, kind, name, arg, ts);
				return;
			}
		}
	}
	emit_slow(type, kind, name, arg, ts);
}

/* ---------------------------------------------------------------- public events */

static __attribute__((noinline, cold)) uint32_t site_intern(pp_site *site)
{
	uint32_t raw = intern(site->name);
	uint32_t id = (raw & 0xffffff) | (uint32_t)((R.generation & 0xff) << 24);
	__atomic_store_n(&site->id, id, __ATOMIC_RELAXED);
	return id;
}

void pp_begin_site(pp_site *site)
{
	if (!is_open())
		return;
	uint32_t id = __atomic_load_n(&site->id, __ATOMIC_RELAXED);
	/* site ids are only valid for the generation that interned them: a
	 * re-opened recorder has a fresh string table */
	if (UNLIKELY(id == 0 || (id >> 24) != (R.generation & 0xff)))
		id = site_intern(site);
	emit(PP_EV_BEGIN, (uint8_t)site->kind, id & 0xffffff, UINT64_MAX, 0);
	CALL_HOOK(1, (int)site->kind, site->name);
}

void pp_phase_begin(pp_kind kind, const char *name)
{
	if (!is_open())
		return;
	emit(PP_EV_BEGIN, (uint8_t)kind, intern(name ? name : pp_kind_name(kind)), UINT64_MAX, 0);
	CALL_HOOK(1, (int)kind, name ? name : pp_kind_name(kind));
}

void pp_phase_end(void)
{
	if (!is_open())
		return;
	CALL_HOOK(0, 0, NULL);
	emit(PP_EV_END, 0, 0, 0, 0);
}

/* The process's CPU time over a step, as counter step.cpu_ns at its end:
 * on a busy machine a step's wall time includes the time the program waited
 * for a CPU, which `diff` must not take for a regression; its CPU time does
 * not (diag/README.md, diff). The process's (all threads: a step's
 * work may run on a framework's worker threads), read with one
 * clock_gettime at each boundary (two steps that follow each other share
 * it): a system call, 0.85-2.2 us on the development VM (2026-11-28).
 * Per thread, since the thread that begins a step ends it. */
static __thread int64_t step_cpu0 = -1;

static int64_t process_cpu_ns(void)
{
	struct timespec t;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0)
		return -1;
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void step_begin_at(int64_t iteration, uint64_t ts, int64_t cpu_now)
{
	static pp_site site = {"step", PP_STEP, 0};
	step_cpu0 = cpu_now;
	uint32_t id = __atomic_load_n(&site.id, __ATOMIC_RELAXED);
	if (UNLIKELY(id == 0 || (id >> 24) != (R.generation & 0xff))) {
		id = (intern("step") & 0xffffff) | (uint32_t)((R.generation & 0xff) << 24);
		__atomic_store_n(&site.id, id, __ATOMIC_RELAXED);
	}
	emit(PP_EV_BEGIN, PP_STEP, id & 0xffffff, (uint64_t)iteration, ts);
	CALL_HOOK(1, PP_STEP, "step");
}

/* Returns the CPU time read, -1 when no step was open: a boundary between
 * two steps reads it once for both. */
static int64_t step_cpu_counter(void)
{
	int64_t now = -1;
	if (step_cpu0 >= 0) {
		now = process_cpu_ns();
		if (now >= step_cpu0)
			pp_counter("step.cpu_ns", (double)(now - step_cpu0));
	}
	step_cpu0 = -1;
	return now;
}

void pp_step_begin(int64_t iteration)
{
	if (!is_open())
		return;
	step_begin_at(iteration, 0, process_cpu_ns());
}

void pp_step_end(void)
{
	if (is_open())
		step_cpu_counter();
	step_cpu0 = -1;
	pp_phase_end();
}

void pp_step_next(int64_t iteration, int end_phases)
{
	if (!is_open())
		return;
	int64_t cpu = step_cpu_counter();
	uint64_t ts = pp_ticks();
	for (int i = 0; i <= end_phases; i++) {
		CALL_HOOK(0, 0, NULL);
		emit(PP_EV_END, 0, 0, 0, ts);
	}
	step_begin_at(iteration, ts, cpu >= 0 ? cpu : process_cpu_ns());
}

void pp_mark(const char *name)
{
	if (!is_open())
		return;
	emit(PP_EV_MARK, 0, intern(name), 0, 0);
}

void pp_counter(const char *name, double value)
{
	if (!is_open())
		return;
	uint64_t bits;
	memcpy(&bits, &value, sizeof bits);
	emit(PP_EV_COUNTER, 0, intern(name), bits, 0);
}

void pp_op(const char *node_name, const char *op_type, uint64_t start_ns, uint64_t end_ns,
	   int64_t step)
{
	if (!is_open())
		return;
	/* Explicit times are pp_now() nanoseconds; kind = 1 tells ingest so. */
	uint32_t type = intern(op_type);
	emit(PP_EV_OP, 1, intern(node_name), (uint64_t)type, start_ns ? start_ns : 1);
	emit(PP_EV_OP_END, 1, 0, (uint64_t)step, end_ns ? end_ns : 1);
}

void pp_phase_at(pp_kind kind, const char *name, uint64_t start_ns, uint64_t end_ns)
{
	if (!is_open())
		return;
	uint32_t id = intern(name ? name : pp_kind_name(kind));
	pp_thread *t = tls_thread;
	if (!t || tls_gen != R.generation)
		return;
	/* reserved = 1: ts holds pp_now() nanoseconds, not ticks */
	pp_buffer *b;
	for (int i = 0; i < 2; i++) {
		b = atomic_load_explicit(&t->cur, memory_order_relaxed);
		uint32_t n = b ? atomic_load_explicit(&b->n, memory_order_relaxed) : 0;
		if (!b || n == b->cap) {
			b = buffer_swap(t);
			if (!b) {
				atomic_fetch_add_explicit(&t->lost, 1, memory_order_relaxed);
				continue;
			}
			n = atomic_load_explicit(&b->n, memory_order_relaxed);
		}
		pp_event *e = &b->ev[n];
		e->ts = i == 0 ? start_ns : end_ns;
		e->type = i == 0 ? PP_EV_BEGIN : PP_EV_END;
		e->kind = (uint8_t)kind;
		e->reserved = 1;
		e->name = i == 0 ? id : 0;
		e->arg = UINT64_MAX;
		atomic_store_explicit(&b->n, n + 1, memory_order_release);
	}
}

/* ---------------------------------------------------------------- side chunks */

/* Appends a pre-encoded chunk (type, tid, payload) to the side buffer. */
static int side_append(uint16_t type, uint32_t tid, const void *p, uint32_t n)
{
	if (foreign())
		return -1;
	pthread_mutex_lock(&R.side_lock);
	size_t need = R.side_n + 10 + n;
	if (need > R.side_cap) {
		size_t cap = R.side_cap ? R.side_cap * 2 : 65536;
		while (cap < need)
			cap *= 2;
		/* cap the side buffer so a runaway producer cannot eat the machine */
		unsigned char *s = cap <= (256u << 20) ? realloc(R.side, cap) : NULL;
		if (!s) {
			pthread_mutex_unlock(&R.side_lock);
			return -1;
		}
		R.side = s;
		R.side_cap = cap;
	}
	unsigned char *d = R.side + R.side_n;
	memcpy(d, &type, 2);
	memcpy(d + 2, &tid, 4);
	memcpy(d + 6, &n, 4);
	memcpy(d + 10, p, n);
	R.side_n = need;
	pthread_mutex_unlock(&R.side_lock);
	if (need > (1u << 20)) { /* plenty queued: wake the writer early */
		pthread_mutex_lock(&R.lock);
		R.kicked = 1;
		pthread_cond_signal(&R.wake);
		pthread_mutex_unlock(&R.lock);
	}
	return 0;
}

static uint32_t self_tid(void)
{
	pp_thread *t = tls_thread;
	return t && tls_gen == R.generation ? t->tid : (uint32_t)syscall(SYS_gettid);
}

void pp_meta(const char *key, const char *value)
{
	if (!is_open() || !key || foreign())
		return;
	if (!value)
		value = "";
	size_t kl = strlen(key), vl = strlen(value);
	char *buf = malloc(kl + vl + 2);
	if (!buf)
		return;
	memcpy(buf, key, kl + 1);
	memcpy(buf + kl + 1, value, vl + 1);
	side_append(PP_CHUNK_META, self_tid(), buf, (uint32_t)(kl + vl + 2));
	free(buf);
}

void pp_exit_status(int exit_code, int term_signal)
{
	if (!is_open())
		return;
	int32_t v[2] = {exit_code, term_signal};
	side_append(PP_CHUNK_EXIT, self_tid(), v, sizeof v);
}

void pp_thread_name(const char *name)
{
	if (!is_open() || !name)
		return;
	side_append(PP_CHUNK_THREAD, self_tid(), name, (uint32_t)strlen(name));
}

/* Row encoding: see spool.h. A row is encoded on the stack unless it
 * outgrows ENC_STACK (a long string): most rows then cost no allocation. */
#define ENC_STACK 512
typedef struct enc {
	unsigned char *p;
	size_t n, cap;
	int oom;
	unsigned char stack[ENC_STACK];
} enc;

static void enc_init(enc *e)
{
	e->p = e->stack;
	e->n = 0;
	e->cap = sizeof e->stack;
	e->oom = 0;
}

static void enc_done(enc *e)
{
	if (e->p != e->stack)
		free(e->p);
}

static __attribute__((noinline)) int enc_grow(enc *e, size_t n)
{
	size_t cap = e->cap * 2;
	while (cap < e->n + n)
		cap *= 2;
	unsigned char *p = e->p == e->stack ? malloc(cap) : realloc(e->p, cap);
	if (!p) {
		e->oom = 1;
		return -1;
	}
	if (e->p == e->stack)
		memcpy(p, e->stack, e->n);
	e->p = p;
	e->cap = cap;
	return 0;
}

static inline void enc_put(enc *e, const void *src, size_t n)
{
	if (e->oom || (e->n + n > e->cap && enc_grow(e, n) != 0))
		return;
	memcpy(e->p + e->n, src, n);
	e->n += n;
}

static void enc_str(enc *e, char tag, const char *s)
{
	uint32_t l = (uint32_t)strlen(s);
	enc_put(e, &tag, 1);
	enc_put(e, &l, 4);
	enc_put(e, s, l);
}

/* A ROW payload (spool.h): table name, column count, then the values. */
static void row_head(enc *e, const char *table, const char *fmt)
{
	enc_init(e);
	uint32_t tl = (uint32_t)strlen(table), nc = (uint32_t)strlen(fmt);
	enc_put(e, &tl, 4);
	enc_put(e, table, tl);
	enc_put(e, &nc, 4);
}

/* Appends the encoded row (or counts it lost) and frees the encoder. */
static int row_commit(enc *e)
{
	int rc = -1;
	if (!e->oom && side_append(PP_CHUNK_ROW, self_tid(), e->p, (uint32_t)e->n) == 0)
		rc = 0;
	enc_done(e);
	pthread_mutex_lock(&R.side_lock);
	if (rc == 0)
		R.rows++;
	else
		R.rows_lost++;
	pthread_mutex_unlock(&R.side_lock);
	return rc;
}

static int vrow(const char *table, const char *fmt, va_list ap)
{
	if (foreign()) /* before any allocation: the allocator's lock may be a missing thread's */
		return -1;
	enc e;
	row_head(&e, table, fmt);
	for (const char *f = fmt; *f; f++) {
		char tag = *f;
		switch (tag) {
		case 'i': {
			int64_t v = va_arg(ap, int64_t);
			enc_put(&e, &tag, 1);
			enc_put(&e, &v, 8);
			break;
		}
		case 'd': {
			double v = va_arg(ap, double);
			enc_put(&e, &tag, 1);
			enc_put(&e, &v, 8);
			break;
		}
		case 's':
		case 't': {
			const char *s = va_arg(ap, const char *);
			if (s)
				enc_str(&e, tag, s);
			else
				enc_put(&e, "n", 1);
			break;
		}
		case 'n':
			enc_put(&e, &tag, 1);
			break;
		default:
			enc_done(&e);
			set_error("pp_row(%s): unknown format letter '%c'", table, tag);
			return -1;
		}
	}
	return row_commit(&e);
}

/* The cell form: the same encoding, types from fmt, values from the array. */
static int cells_row(const char *table, const char *fmt, const pp_cell *cells)
{
	if (foreign())
		return -1;
	enc e;
	row_head(&e, table, fmt);
	for (size_t k = 0; fmt[k]; k++) {
		char tag = fmt[k];
		const pp_cell *c = &cells[k];
		if (!strchr("idstn", tag)) {
			enc_done(&e);
			set_error("pp_rowv(%s): unknown format letter '%c'", table, tag);
			return -1;
		}
		if (tag == 'n' || c->null || ((tag == 's' || tag == 't') && !c->v.s)) {
			enc_put(&e, "n", 1);
		} else if (tag == 's' || tag == 't') {
			enc_str(&e, tag, c->v.s);
		} else {
			enc_put(&e, &tag, 1);
			enc_put(&e, tag == 'i' ? (const void *)&c->v.i : (const void *)&c->v.d, 8);
		}
	}
	return row_commit(&e);
}

int pp_row(const char *table, const char *fmt, ...)
{
	if (!is_open() || !table || !fmt)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	int rc = vrow(table, fmt, ap);
	va_end(ap);
	return rc;
}

int pp_rowv(const char *table, const char *fmt, const pp_cell *cells)
{
	if (!is_open() || !table || !fmt || !cells)
		return -1;
	return cells_row(table, fmt, cells);
}

int pp_graph_snapshot(const char *label, int64_t version, const pp_graph_node *nodes,
		      int n_nodes, const pp_graph_edge *edges, int n_edges)
{
	static _Atomic int64_t next_graph;
	if (!is_open())
		return -1;
	/* graph ids are local to the spool; ingest maps them to store ids */
	int64_t gid = atomic_fetch_add(&next_graph, 1) + 1;
	int rc = pp_row_graphs(gid, label ? label : "", version, (int64_t)pp_now(), n_nodes, n_edges);
	for (int i = 0; i < n_nodes && rc == 0; i++)
		rc = pp_row_graph_nodes(gid, i, nodes[i].name, nodes[i].op, nodes[i].device,
					nodes[i].shape ? nodes[i].shape : "", nodes[i].cost_ns);
	for (int i = 0; i < n_edges && rc == 0; i++)
		rc = pp_row_graph_edges(gid, edges[i].src, edges[i].dst, edges[i].src_output);
	return rc;
}

/* ---------------------------------------------------------------- writer */

/* A (ticks, CLOCK_MONOTONIC) pair: the tick read bracketed by two clock
 * reads, best of three, so a preemption in between does not skew the
 * conversion (and the tick sits mid-way, not 20 ns before the clock). */
static void clock_pair(uint64_t *ticks, uint64_t *mono)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		uint64_t m1 = pp_mono_ns(), t = pp_ticks(), m2 = pp_mono_ns();
		if (m2 - m1 < best) {
			best = m2 - m1;
			*ticks = t;
			*mono = m1 + (m2 - m1) / 2;
		}
	}
}

static void write_clock_point(void)
{
	uint64_t pair[2];
	clock_pair(&pair[0], &pair[1]);
	pp_spool_write_chunk(&R.w, PP_CHUNK_CLOCK, 0, pair, sizeof pair);
}

/* Events go to the spool packed (spool_pack.c), a slice at a time through
 * one buffer: drains run one at a time (under write_lock), and the writer
 * allocates nothing for it. */
#define PACK_SLICE 8192
static unsigned char pack_buf[PACK_SLICE * PP_PACK_MAX];

static int write_events(uint32_t tid, const pp_event *ev, uint32_t n)
{
	int rc = 0;
	for (uint32_t done = 0; done < n;) {
		uint32_t k = n - done < PACK_SLICE ? n - done : PACK_SLICE;
		size_t bytes = pp_events_pack(ev + done, k, pack_buf);
		if (pp_spool_write_chunk(&R.w, PP_CHUNK_EVENTS_PACKED, tid, pack_buf, (uint32_t)bytes) != 0)
			rc = -1;
		done += k;
	}
	return rc;
}

typedef struct snap {
	pp_buffer *b;
	uint32_t n;
} snap;

/* One drain pass: full buffers, then the live part of every thread's
 * current buffer, with strings and side chunks written first. Those small
 * chunks (strings, rows, meta, thread names) go out in one write: ~1,300
 * checked writes for import numpy otherwise. Event chunks are written as
 * they are packed (gathering them too cost the 2-thread recorder bench ~1
 * ns per event). Caller holds write_lock. */
static void drain(int final)
{
	pthread_mutex_lock(&R.lock);
	pp_buffer *full = R.full_head;
	R.full_head = R.full_tail = NULL;
	size_t nt = 0;
	for (pp_thread *t = R.threads; t; t = t->next)
		nt++;
	snap *snaps = nt ? calloc(nt, sizeof *snaps) : NULL;
	size_t i = 0;
	for (pp_thread *t = R.threads; t && snaps; t = t->next, i++) {
		pp_buffer *b = atomic_load_explicit(&t->cur, memory_order_acquire);
		snaps[i].b = b;
		snaps[i].n = b ? atomic_load_explicit(&b->n, memory_order_acquire) : 0;
	}
	pthread_mutex_unlock(&R.lock);

	/* strings interned up to now (a superset of those the snapshot uses) */
	pp_spool_batch_begin(&R.w);
	pthread_mutex_lock(&R.str_lock);
	for (uint32_t k = 0; k < R.pending_n; k++) {
		uint32_t id = R.pending[k];
		const char *s = R.by_id[id];
		pp_spool_write_chunk2(&R.w, PP_CHUNK_STRING, 0, &id, 4, s, (uint32_t)strlen(s));
	}
	R.pending_n = 0;
	pthread_mutex_unlock(&R.str_lock);

	/* side chunks (rows, meta, thread names) */
	pthread_mutex_lock(&R.side_lock);
	unsigned char *side = R.side;
	size_t side_n = R.side_n, side_cap = R.side_cap;
	if (side) {
		/* producers go on in the spare: no buffer mapped and unmapped
		 * per drain (see close_recorder) */
		R.side = R.side_spare;
		R.side_cap = R.side_spare_cap;
		R.side_spare = NULL;
		R.side_spare_cap = 0;
	}
	R.side_n = 0;
	uint64_t rows_lost = R.rows_lost - R.rows_lost_reported;
	R.rows_lost_reported = R.rows_lost;
	pthread_mutex_unlock(&R.side_lock);
	for (size_t off = 0; off + 10 <= side_n;) {
		uint16_t type;
		uint32_t tid, n;
		memcpy(&type, side + off, 2);
		memcpy(&tid, side + off + 2, 4);
		memcpy(&n, side + off + 6, 4);
		if (pp_spool_write_chunk(&R.w, type, tid, side + off + 10, n) != 0 && type == PP_CHUNK_ROW)
			R.rows_unwritten++;
		off += 10 + n;
	}
	if (side) {
		pthread_mutex_lock(&R.side_lock);
		if (!R.side_spare && side_cap <= (1u << 20)) {
			R.side_spare = side;
			R.side_spare_cap = side_cap;
			side = NULL;
		}
		pthread_mutex_unlock(&R.side_lock);
	}
	free(side);
	if (rows_lost) {
		if (pp_spool_write_chunk2(&R.w, PP_CHUNK_LOSS, 0, &rows_lost, 8, "rows", 4) != 0)
			R.rows_unwritten += rows_lost;
	}

	pp_spool_batch_end(&R.w);

	/* full buffers, oldest first; recycle them */
	pp_buffer *recycled = NULL;
	while (full) {
		pp_buffer *b = full;
		full = b->next;
		uint32_t n = atomic_load_explicit(&b->n, memory_order_acquire);
		if (n > b->flushed) {
			if (write_events(b->owner->tid, &b->ev[b->flushed], n - b->flushed) != 0)
				R.unwritten += n - b->flushed;
			atomic_fetch_add(&R.events_total, n - b->flushed);
		}
		b->next = recycled;
		recycled = b;
	}
	for (i = 0; i < nt && snaps; i++) {
		pp_buffer *b = snaps[i].b;
		if (b && snaps[i].n > b->flushed) {
			if (write_events(b->owner->tid, &b->ev[b->flushed], snaps[i].n - b->flushed) != 0)
				R.unwritten += snaps[i].n - b->flushed;
			atomic_fetch_add(&R.events_total, snaps[i].n - b->flushed);
			b->flushed = snaps[i].n;
		}
	}
	free(snaps);

	/* losses, dead threads, buffer recycling */
	pthread_mutex_lock(&R.lock);
	while (recycled) {
		pp_buffer *b = recycled;
		recycled = b->next;
		b->next = R.free_list;
		R.free_list = b;
	}
	pp_thread **pt = &R.threads;
	while (*pt) {
		pp_thread *t = *pt;
		uint64_t lost = atomic_load_explicit(&t->lost, memory_order_relaxed);
		if (lost > t->lost_reported) {
			uint64_t d = lost - t->lost_reported;
			t->lost_reported = lost;
			R.lost_reported_total += d;
			if (pp_spool_write_chunk2(&R.w, PP_CHUNK_LOSS, t->tid, &d, 8, "events", 6) != 0)
				R.loss_unwritten += d;
		}
		pp_buffer *b = atomic_load_explicit(&t->cur, memory_order_relaxed);
		if (t->dead && (!b || b->flushed == atomic_load(&b->n))) {
			*pt = t->next;
			if (b) {
				b->next = R.free_list;
				R.free_list = b;
			}
			free(t->names);
			free(t);
			continue;
		}
		pt = &t->next;
	}
	pthread_mutex_unlock(&R.lock);
	(void)final;
	write_clock_point();
}

/* The agent counts its own threads (the program's /proc/self/stat thread
 * count leaves them out); a program linking the recorder has no such hook. */
extern void ppa_own_thread(int enter) __attribute__((weak));

static void *writer_loop(void *arg);

static void *writer_main(void *arg)
{
	if (ppa_own_thread)
		ppa_own_thread(1);
	void *r = writer_loop(arg);
	if (ppa_own_thread)
		ppa_own_thread(0);
	return r;
}

static void *writer_loop(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	int early_clock_done = 0;
	for (;;) {
		pthread_mutex_lock(&R.lock);
		if (!R.kicked && !R.stopping) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			/* a second clock point 2 ms in, so a short or crashed run has two */
			uint64_t ms = early_clock_done ? R.opts.flush_ms : 2;
			ts.tv_nsec += (long)(ms % 1000) * 1000000L;
			ts.tv_sec += (time_t)(ms / 1000) + ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&R.wake, &R.lock, &ts);
		}
		int stop = R.stopping;
		R.kicked = 0;
		pthread_mutex_unlock(&R.lock);
		/* pp_close drains after the join: a drain here would only make
		 * the closing thread wait longer */
		if (stop)
			break;
		early_clock_done = 1;
		pthread_mutex_lock(&R.write_lock);
		drain(0);
		pthread_mutex_unlock(&R.write_lock);
	}
	return NULL;
}

/* ---------------------------------------------------------------- open/close */

static void write_meta_direct(const char *k, const char *v)
{
	size_t kl = strlen(k), vl = strlen(v);
	pp_spool_write_chunk2(&R.w, PP_CHUNK_META, 0, k, (uint32_t)kl + 1, v, (uint32_t)vl + 1);
}

static void write_start_meta(void)
{
	char buf[8192];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n > 0) {
			for (ssize_t i = 0; i < n - 1; i++)
				if (buf[i] == 0)
					buf[i] = ' ';
			buf[n] = 0;
			write_meta_direct("command", buf);
		}
	}
	if (gethostname(buf, sizeof buf) == 0) {
		buf[sizeof buf - 1] = 0;
		write_meta_direct("host", buf);
	}
	if (R.opts.label)
		write_meta_direct("label", R.opts.label);
	if (R.opts.scenario)
		write_meta_direct("scenario", R.opts.scenario);
	if (R.opts.variant)
		write_meta_direct("variant", R.opts.variant);
	write_meta_direct("clock", pp_clock_kind() == PP_CLOCK_TSC ? "tsc" : "monotonic");
}

static int create_spool(char *err, size_t errlen)
{
	if (R.spool_dir_mode) {
		for (int seq = 0; seq < 10000; seq++) {
			snprintf(R.spool_path, sizeof R.spool_path, "%.4000s/%d-%d.spool", R.spool_dir,
				 (int)getpid(), seq);
			if (pp_spool_create(&R.w, R.spool_path, 1, err, errlen) == 0)
				return 0;
			if (errno != EEXIST)
				return -1;
		}
		return -1;
	}
	return pp_spool_create(&R.w, R.spool_path, 0, err, errlen);
}

static int start_spool(void)
{
	char err[512];
	if (create_spool(err, sizeof err) != 0) {
		set_error("%s", err);
		return -1;
	}
	memset(&R.header, 0, sizeof R.header);
	memcpy(R.header.magic, PP_SPOOL_MAGIC, 8);
	R.header.version = PP_SPOOL_VERSION;
	R.header.header_size = sizeof R.header;
	R.header.pid = (uint32_t)getpid();
	R.pid = (int)getpid();
	R.header.ppid = (uint32_t)getppid();
	R.header.clock = (uint32_t)pp_clock_kind();
	clock_pair(&R.header.start_ticks, &R.header.start_mono_ns);
	R.header.start_unix_ns = pp_realtime_ns();
	pp_spool_header_seal(&R.header);
	if (pp_spool_write_header(&R.w, &R.header) != 0) {
		set_error("cannot write spool %s: %s", R.spool_path, strerror(R.w.failed));
		pp_spool_close(&R.w, 1);
		return -1;
	}
	if (pp_spool_write_reserve(&R.w) != 0) {
		set_error("cannot write spool %s: %s", R.spool_path, strerror(R.w.failed ? R.w.failed : EIO));
		pp_spool_close(&R.w, 1);
		return -1;
	}
	uint64_t pair[2] = {R.header.start_ticks, R.header.start_mono_ns};
	pp_spool_write_chunk(&R.w, PP_CHUNK_CLOCK, 0, pair, sizeof pair);
	write_start_meta();
	return 0;
}

static int start_writer(void)
{
	R.stopping = 0;
	R.kicked = 0;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = pthread_create(&R.writer, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		set_error("cannot start the spool writer thread: %s", strerror(rc));
		return -1;
	}
	R.writer_running = 1;
	return 0;
}

/* Whether this thread's atfork_prepare took the locks: the recorder may be
 * closed by another thread meanwhile, the locks must still be released. */
static PP_TLS int tls_fork_locked;
static sigset_t fork_mask; /* under write_lock */

static void atfork_prepare(void)
{
	if (!is_open())
		return;
	write_lock_held(&fork_mask);
	tls_fork_locked = 1;
	pthread_mutex_lock(&R.lock);
	pthread_mutex_lock(&R.str_lock);
	pthread_mutex_lock(&R.side_lock);
	pthread_mutex_lock(&R.w.lock);
}

static void atfork_parent(void)
{
	if (!tls_fork_locked)
		return;
	tls_fork_locked = 0;
	pthread_mutex_unlock(&R.w.lock);
	pthread_mutex_unlock(&R.side_lock);
	pthread_mutex_unlock(&R.str_lock);
	pthread_mutex_unlock(&R.lock);
	write_unlock_held(&fork_mask);
}

/* A META chunk `agent.child_unrecorded` written into the parent's spool
 * through the descriptor a child inherited, in one O_APPEND write (whole
 * among the parent's), by a raw system call (no hook counts it). */
static void write_child_note(int fd, const char *val, int vl)
{
	static const char key[] = "agent.child_unrecorded";
	if (fd < 0 || vl < 0)
		return;
	if (vl >= 700)
		vl = 699;
	unsigned char buf[sizeof(pp_chunk_header) + sizeof key + 700 + 8];
	pp_chunk_header h = {0};
	h.magic = PP_CHUNK_MAGIC;
	h.type = PP_CHUNK_META;
	h.size = (uint32_t)(sizeof key + (size_t)vl + 1);
	memcpy(buf + sizeof h, key, sizeof key);
	memcpy(buf + sizeof h + sizeof key, val, (size_t)vl);
	buf[sizeof h + sizeof key + (size_t)vl] = 0;
	h.crc = pp_crc32(pp_crc32(0, (const char *)&h + PP_CHUNK_CRC_FIELDS, PP_CHUNK_CRC_LEN), buf + sizeof h, h.size);
	memcpy(buf, &h, sizeof h);
	size_t n = sizeof h + h.size;
	while (n & 7)
		buf[n++] = 0;
	syscall(SYS_write, fd, buf, n);
}

/* A forked child that could not start its own spool (the program changed
 * its user or root first: setresuid, chroot; the folder is out of reach)
 * is not silently missing: the parent's spool says so. */
static void note_child_unrecorded(int fd)
{
	char val[700];
	int vl = snprintf(val, sizeof val, "pid %d, forked at %.3f s, not recorded: %s", (int)getpid(),
			  (double)pp_now() / 1e9, R.error[0] ? R.error : "its spool could not be started");
	write_child_note(fd, val, vl);
}

/* A child made by a raw clone3/clone system call (foreign()): the agent
 * does not follow it (no fork handler ran: its copy of the recorder has the
 * parent's spool and threads that do not exist in it). Said once, when it
 * first reaches the recorder's cold path, in the parent's spool, through
 * the descriptor it inherited if that is still the spool. */
static void note_clone_child(void)
{
	int me = (int)getpid();
	if (atomic_exchange(&R.foreign_noted, me) == me)
		return;
	struct stat st;
	int fd = R.w.fd;
	if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t)st.st_dev != R.w.dev ||
	    (uint64_t)st.st_ino != R.w.ino)
		return;
	char val[300];
	int vl = snprintf(val, sizeof val,
			  "pid %d, made at %.3f s, not recorded: a child made by clone3 or clone without fork "
			  "was not followed", me, (double)pp_now() / 1e9);
	write_child_note(fd, val, vl);
}

static void atfork_child(void)
{
	if (!tls_fork_locked)
		return;
	tls_fork_locked = 0;
	/* Re-initialised, not unlocked: a condition variable copied from a
	 * parent whose writer was waiting on it holds that phantom waiter, and
	 * the child's first signal on it can block forever. */
	pthread_mutex_init(&R.side_lock, NULL);
	pthread_mutex_init(&R.str_lock, NULL);
	pthread_mutex_init(&R.lock, NULL);
	pthread_mutex_init(&R.write_lock, NULL);
	pp_spool_lock_init(&R.w);
	pthread_cond_init(&R.wake, NULL);
	pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
	if (!is_open())
		return; /* closed by another thread while we forked */
	/* The parent owns every buffered event and the spool fd: drop our copies
	 * (leaked on purpose: other threads' states are unreachable in a child). */
	R.generation++;
	R.threads = NULL;
	R.full_head = R.full_tail = NULL;
	R.free_list = NULL;
	R.buffers = 0;
	R.threads_seen = 0;
	R.writer_running = 0;
	free(R.side);
	R.side = NULL;
	R.side_n = R.side_cap = 0;
	R.side_spare = NULL; /* the parent's drain may hold it */
	R.side_spare_cap = 0;
	R.rows = R.rows_lost = R.rows_lost_reported = 0;
	atomic_store(&R.events_total, 0);
	R.lost_reported_total = R.unwritten = R.loss_unwritten = R.rows_unwritten = 0;
	tls_thread = NULL;
	tls_gen = 0;
	/* the parent's spool, kept (high, close-on-exec) until the child's own
	 * exists: a child that cannot create one says so there */
	int parent_fd = R.w.fd >= 0 ? fcntl(R.w.fd, F_DUPFD_CLOEXEC, R.w.fd) : -1;
	pp_spool_close(&R.w, 1);
	if (R.opts.fork_policy == PP_FORK_DISABLE) {
		if (parent_fd >= 0)
			close(parent_fd);
		atomic_store(&R.open, 0);
		return;
	}
	if (!R.spool_dir_mode) {
		char base[4096];
		snprintf(base, sizeof base, "%s", R.spool_path);
		snprintf(R.spool_path, sizeof R.spool_path, "%.4000s.%d", base, (int)getpid());
	}
	/* every string the child may refer to must be in its own spool */
	R.pending_n = 0;
	for (uint32_t id = 1; id <= R.next_id; id++) {
		if (PP_GROW(R.pending, R.pending_n + 1, R.pending_cap) != 0)
			break;
		R.pending[R.pending_n++] = id;
	}
	if (start_spool() != 0 || start_writer() != 0) {
		atomic_store(&R.open, 0);
		note_child_unrecorded(parent_fd);
	}
	if (parent_fd >= 0)
		close(parent_fd);
}

static void close_at_exit(void)
{
	if (is_open())
		pp_close();
}

static const char *keep_copy(char *dst, size_t n, const char *src)
{
	if (!src)
		return NULL;
	snprintf(dst, n, "%s", src);
	return dst;
}

int pp_open(const pp_options *opts)
{
	if (is_open()) {
		set_error("phaseprof recorder is already open (spool %s)", R.spool_path);
		return -1;
	}
	pp_clock_init();
	/* the thread key now, while its number is low: glibc allocates a
	 * thread's slot for key numbers from 32 up, on that thread (the agent's
	 * own threads must not allocate) */
	pthread_once(&key_once, make_key);
	pp_options o = {0};
	if (opts)
		o = *opts;
	if (!o.buffer_events)
		o.buffer_events = 16384;
	if (!o.max_buffers)
		o.max_buffers = 256;
	if (!o.flush_ms)
		o.flush_ms = 50;
	R.opts = o;
	R.buffer_events = o.buffer_events;
	R.max_buffers = o.max_buffers;
	R.spool_dir_mode = 0;
	const char *dir = getenv(PP_ENV_SPOOL_DIR);
	if (o.spool_path) {
		snprintf(R.spool_path, sizeof R.spool_path, "%s", o.spool_path);
	} else if (getenv(PP_ENV_OUT)) {
		snprintf(R.spool_path, sizeof R.spool_path, "%s", getenv(PP_ENV_OUT));
	} else if (dir && *dir) {
		snprintf(R.spool_dir, sizeof R.spool_dir, "%s", dir);
		R.spool_dir_mode = 1;
	} else {
		snprintf(R.spool_path, sizeof R.spool_path, "phaseprof-%d.spool", (int)getpid());
	}
	/* the option strings must outlive the caller's: keep copies */
	static char label[256], scenario[128], variant[128];
	R.opts.label = keep_copy(label, sizeof label, o.label);
	R.opts.scenario = keep_copy(scenario, sizeof scenario, o.scenario);
	R.opts.variant = keep_copy(variant, sizeof variant, o.variant);
	R.opts.spool_path = NULL;

	R.generation++;
	/* a fresh string table per recording: ids restart at 1 */
	pthread_mutex_lock(&R.str_lock);
	for (uint32_t id = 1; id <= R.next_id; id++)
		free(R.by_id[id]);
	pp_hash_free(&R.index);
	R.next_id = 0;
	R.pending_n = 0;
	pthread_mutex_unlock(&R.str_lock);
	R.rows = R.rows_lost = R.rows_lost_reported = 0;
	R.lost_reported_total = R.unwritten = R.loss_unwritten = R.rows_unwritten = 0;
	atomic_store(&R.self_drains, 0);
	atomic_store(&R.events_total, 0);

	if (start_spool() != 0)
		return -1;
	atomic_store(&R.open, 1);
	if (start_writer() != 0) {
		atomic_store(&R.open, 0);
		pp_spool_close(&R.w, 1);
		return -1;
	}
	if (!R.atfork_installed) {
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
		R.atfork_installed = 1;
	}
	if (!R.atexit_installed) {
		atexit(close_at_exit);
		R.atexit_installed = 1;
	}
	return 0;
}

static int close_recorder(int release);

/* The spool's writes failed (disk full, file size limit): what was lost is
 * written over the room kept after the header, which needs no new block,
 * so the run says how many events and rows it lacks instead of 0. */
static void note_write_failure(int err)
{
	/* the final drain has run: every loss is in these counters */
	unsigned char buf[PP_SPOOL_RESERVE];
	size_t n = 0;
	uint64_t ev = R.unwritten + R.loss_unwritten, rows = R.rows_unwritten;
	n += pp_spool_put_chunk(buf + n, sizeof buf - n, PP_CHUNK_LOSS, &ev, 8, "unwritten", 9);
	n += pp_spool_put_chunk(buf + n, sizeof buf - n, PP_CHUNK_LOSS, &rows, 8, "rows", 4);
	char v[160];
	int vl = snprintf(v, sizeof v, "%s after %llu bytes: %llu events, %llu rows not written", strerror(err),
			  (unsigned long long)R.w.bytes, (unsigned long long)ev, (unsigned long long)rows);
	static const char key[] = "recorder.write_failed";
	if (vl > 0 && vl < (int)sizeof v)
		n += pp_spool_put_chunk(buf + n, sizeof buf - n - 24, PP_CHUNK_META, key, sizeof key, v, (uint32_t)vl + 1);
	pp_spool_fill_reserve(&R.w, buf, n);
}

int pp_close(void) { return close_recorder(1); }

int pp_close_at_exit(void) { return close_recorder(0); }

static int close_recorder(int release)
{
	if (!is_open() || foreign())
		return 0;
	/* the run ends here, not after the writer's wake-up and final drain */
	uint64_t end = pp_ticks();
	/* stop accepting events first; events racing with this are dropped */
	atomic_store(&R.open, 0);
	if (R.writer_running) {
		pthread_mutex_lock(&R.lock);
		R.stopping = 1;
		pthread_cond_signal(&R.wake);
		pthread_mutex_unlock(&R.lock);
		pthread_join(R.writer, NULL);
		R.writer_running = 0;
	}
	sigset_t old_mask;
	write_lock_held(&old_mask);
	drain(1);
	if (R.w.reclaimed) {
		char v[32];
		snprintf(v, sizeof v, "%u", R.w.reclaimed);
		write_meta_direct("recorder.spool_fd_reclaimed", v);
	}
	if (atomic_load(&R.self_drains)) {
		char v[32];
		snprintf(v, sizeof v, "%llu", (unsigned long long)atomic_load(&R.self_drains));
		write_meta_direct("recorder.self_drains", v);
	}
	pp_spool_write_chunk(&R.w, PP_CHUNK_END, 0, &end, sizeof end);
	int failed = R.w.failed;
	if (failed)
		note_write_failure(failed);
	pp_spool_close(&R.w, release);
	write_unlock_held(&old_mask);

	/* free buffers and thread states; threads re-register on the next open.
	 * A process that is ending keeps them: buffers are mappings of their
	 * own, and each unmapping in a process whose threads ran on other CPUs
	 * waits for those CPUs to flush their TLBs (an interrupt to each, a
	 * trap to the hypervisor in a VM). */
	pthread_mutex_lock(&R.lock);
	for (pp_thread *t = R.threads; t;) {
		pp_thread *n = t->next;
		pp_buffer *b = atomic_load(&t->cur);
		if (b) {
			b->next = R.free_list;
			R.free_list = b;
		}
		if (release) {
			free(t->names);
			free(t);
		}
		t = n;
	}
	R.threads = NULL;
	while (release && R.free_list) {
		pp_buffer *b = R.free_list;
		R.free_list = b->next;
		free(b);
	}
	R.free_list = NULL;
	if (release) {
		free(R.side_spare);
		R.side_spare = NULL;
		R.side_spare_cap = 0;
	}
	R.buffers = 0;
	R.threads_seen = 0;
	pthread_mutex_unlock(&R.lock);
	tls_thread = NULL;
	R.generation++; /* stale thread pointers in other threads' TLS are ignored */
	if (failed) {
		set_error("writing spool %s failed: %s (%llu events could not be written)",
			  R.spool_path, strerror(failed), (unsigned long long)R.unwritten);
		return -1;
	}
	return 0;
}

int pp_exit_note_signal_safe(int32_t code, int32_t sig)
{
	/* a raw clone child: its parent's spool, nothing of its own */
	if (!is_open() || (int)getpid() != R.pid)
		return -1;
	return pp_spool_write_exit_signal_safe(&R.w, code, sig);
}

/* The program closes or replaces descriptors [first, last] between enter
 * and leave, holding the descriptor's lock: no write is between its check
 * and its write, and no reopen is between its open and its move to a high
 * number (a blanket close would take that temporary number). A handler
 * doing the same on a thread already inside passes straight through: this
 * thread holds the lock, so no write or reopen is in progress. */
static PP_TLS int tls_fd_depth, tls_fd_locked;

void pp_spool_fd_enter(unsigned int first, unsigned int last)
{
	if (tls_fd_depth++ == 0) {
		if (!is_open() || foreign())
			return;
		pthread_mutex_lock(&R.w.lock);
		tls_fd_locked = 1;
	}
	if (tls_fd_locked && R.w.fd >= 0 && (unsigned int)R.w.fd >= first && (unsigned int)R.w.fd <= last)
		pp_spool_move(&R.w, first, last);
}

void pp_spool_fd_leave(void)
{
	if (--tls_fd_depth == 0 && tls_fd_locked) {
		pp_spool_reopen(&R.w);
		tls_fd_locked = 0;
		pthread_mutex_unlock(&R.w.lock);
	}
}

void pp_stats(pp_recorder_stats *out)
{
	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&R.lock);
	uint64_t unflushed = 0;
	out->events_lost = R.lost_reported_total + R.unwritten;
	for (pp_thread *t = R.threads; t; t = t->next) {
		out->threads++;
		out->events_lost += atomic_load(&t->lost) - t->lost_reported;
		pp_buffer *b = atomic_load(&t->cur);
		if (b)
			unflushed += atomic_load(&b->n) - b->flushed;
	}
	for (pp_buffer *b = R.full_head; b; b = b->next)
		unflushed += atomic_load(&b->n) - b->flushed;
	pthread_mutex_unlock(&R.lock);
	pthread_mutex_lock(&R.side_lock);
	out->rows = R.rows;
	out->rows_lost = R.rows_lost;
	pthread_mutex_unlock(&R.side_lock);
	out->self_drains = atomic_load(&R.self_drains);
	out->bytes_written = R.w.bytes;
	out->events = atomic_load(&R.events_total) + unflushed;
}
