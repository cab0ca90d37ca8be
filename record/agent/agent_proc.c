/*
 * agent_proc.c — processes and threads: fork, exec, posix_spawn, _exit,
 * pthread_create, thread names.
 *
 * exec: the new image is recorded when the environment it is given still
 * preloads the agent (the settings are then completed, e.g. if the program
 * dropped PHASEPROF_*); a program that cleared or replaced the environment
 * (clearenv, an explicit envp without it) decided what its children get:
 * they are exec'd with that environment, unrecorded, and the run says so.
 * The recorder is closed first so the spool is complete, and reopened if
 * the exec fails.
 * A vfork child shares our memory: it is recognised by its pid and must not
 * touch the recorder.
 */
#include "agent_internal.h"
#include "phaseprof.h"
#include "pp_env.h"
#include "recorder_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* "NAME=value" of every variable exec must carry, captured at start-up */
#define N_CARRY 9
static const char *const carry_names[N_CARRY] = {
	PP_ENV_SPOOL_DIR, PP_ENV_AGENT, PP_ENV_SAMPLE_HZ,
	PP_ENV_MODE, PP_ENV_FOLLOW_FORK, PP_ENV_AGENT_PERIOD_MS,
	PP_ENV_ALLOC_SAMPLE, "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH",
};
#define CARRY_MAX 4200
/* packed one after the other: the few pages they need are all that is
 * touched (nine fixed slots of CARRY_MAX faulted in ten pages) */
static char carry_buf[N_CARRY * CARRY_MAX];
static char *carry[N_CARRY]; /* NULL: not set */
static int following = 1;   /* 0 in a child of --no-follow-fork: strip instead of carry */

static void save_carry(void)
{
	size_t at = 0;
	for (int i = 0; i < N_CARRY; i++) {
		const char *v = getenv(carry_names[i]);
		carry[i] = NULL;
		if (!v)
			continue;
		int n = snprintf(carry_buf + at, CARRY_MAX, "%s=%s", carry_names[i], v);
		carry[i] = carry_buf + at;
		at += (n < 0 ? 0 : n >= CARRY_MAX ? CARRY_MAX - 1 : (size_t)n) + 1;
	}
}

static int name_is(const char *entry, const char *name)
{
	size_t n = strlen(name);
	return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

/* Rewrites a LD_PRELOAD/LD_AUDIT value: agent first (add=1) or removed. */
static void path_list(char *out, size_t outlen, const char *name, const char *value, int add)
{
	const char *agent = ppa_cfg.agent_path;
	size_t alen = strlen(agent);
	int n = snprintf(out, outlen, "%s=", name);
	if (add)
		n += snprintf(out + n, outlen - (size_t)n, "%s", agent);
	const char *p = value ? value : "";
	while (*p && (size_t)n < outlen) {
		while (*p == ':' || *p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ':' && *e != ' ')
			e++;
		if (e > p && !((size_t)(e - p) == alen && strncmp(p, agent, alen) == 0))
			n += snprintf(out + n, outlen - (size_t)n, "%s%.*s",
				      (n > (int)strlen(name) + 1) ? ":" : "", (int)(e - p), p);
		p = e;
	}
}

/* The audit copy needs static TLS beyond glibc's default surplus (see
 * session/session_env.c); the tunable must reach every image. */
#define TLS_TUNABLE "glibc.rtld.optional_static_tls=65536"

/* Does envp still preload this agent? */
static int env_has_agent(char *const envp[])
{
	for (size_t i = 0; envp && envp[i]; i++)
		if (name_is(envp[i], "LD_PRELOAD") && ppa_cfg.agent_path[0] &&
		    strstr(envp[i] + 11, ppa_cfg.agent_path))
			return 1;
	return 0;
}

static int owns_recorder(void);

static void note_unrecorded_child(void)
{
	static int noted;
	if (noted || !owns_recorder())
		return;
	noted = 1;
	int g = ppa_guard;
	ppa_guard_set(1);
	pp_meta("agent.children_unrecorded",
		"the program cleared or replaced the environment: children exec'd without the agent");
	ppa_guard_set(g);
}

/* Fills out[] (cap entries) with envp plus our settings; returns out, or
 * envp untouched when the program removed the agent from it. */
static char **fix_env(char *const envp[], char **out, size_t cap, char *pre, char *aud,
		      size_t buflen)
{
	if (following && !env_has_agent(envp)) {
		note_unrecorded_child();
		return (char **)envp;
	}
	size_t k = 0;
	const char *preload = NULL, *audit = NULL;
	static char tun_default[] = "GLIBC_TUNABLES=" TLS_TUNABLE;
	int have_tun = 0;
	for (size_t i = 0; envp && envp[i] && k + N_CARRY + 4 < cap; i++) {
		const char *e = envp[i];
		if (name_is(e, "LD_PRELOAD")) {
			preload = e + 11;
			continue;
		}
		if (name_is(e, "LD_AUDIT")) {
			audit = e + 9;
			continue;
		}
		if (name_is(e, PP_ENV_OUT))
			continue; /* would win over the spool directory */
		if (name_is(e, "GLIBC_TUNABLES") && following && !strstr(e, "optional_static_tls")) {
			/* the program's own tunables, plus ours */
			char *t = pre + buflen / 2;
			snprintf(t, buflen / 2, "%s:%s", e, TLS_TUNABLE);
			out[k++] = t;
			have_tun = 1;
			continue;
		}
		if (name_is(e, "GLIBC_TUNABLES"))
			have_tun = 1;
		int ours = 0;
		for (int c = 0; c < N_CARRY; c++)
			if (name_is(e, carry_names[c]))
				ours = 1;
		if (!ours)
			out[k++] = (char *)e;
	}
	path_list(pre, buflen / 2, "LD_PRELOAD", preload, following);
	path_list(aud, buflen, "LD_AUDIT", audit, following);
	if (strcmp(pre, "LD_PRELOAD=") != 0)
		out[k++] = pre;
	if (strcmp(aud, "LD_AUDIT=") != 0)
		out[k++] = aud;
	if (following && !have_tun)
		out[k++] = tun_default;
	if (following)
		for (int c = 0; c < N_CARRY; c++)
			if (carry[c])
				out[k++] = carry[c];
	out[k] = NULL;
	return out;
}

static size_t env_count(char *const envp[])
{
	size_t n = 0;
	while (envp && envp[n])
		n++;
	return n;
}

#define WITH_FIXED_ENV(envp, var)                                              \
	size_t var##_cap = env_count(envp) + N_CARRY + 5;                      \
	char *var##_arr[var##_cap];                                            \
	char var##_pre[8192], var##_aud[8192];                                 \
	char **var = fix_env(envp, var##_arr, var##_cap, var##_pre, var##_aud, sizeof var##_pre)

/* Recording state of this process belongs to us (not a vfork child). */
static int owns_recorder(void)
{
	return atomic_load(&ppa_recording) && getpid() == ppa_pid;
}

static void seccomp_stop(const char *how);

static int before_exec(void)
{
	if (!owns_recorder())
		return 0;
	ppa_close_recorder("exec");
	return 1;
}

static void exec_failed(int closed)
{
	if (!closed)
		return;
	int e = errno;
	ppa_open_recorder();
	errno = e;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
static execve_fn r_execve, r_execvpe;
static int (*r_fexecve)(int, char *const[], char *const[]);
static int (*r_execveat)(int, const char *, char *const[], char *const[], int);
static int (*r_posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			    const posix_spawnattr_t *, char *const[], char *const[]);
static int (*r_posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			     const posix_spawnattr_t *, char *const[], char *const[]);
static void (*r__exit)(int);
static void (*r__Exit)(int);
static int (*r_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static int (*r_pthread_setname_np)(pthread_t, const char *);
static int (*r_prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);

#define REAL(f) ((__typeof__(r_##f))ppa_next((void **)&r_##f, #f))

PPA_API int execve(const char *path, char *const argv[], char *const envp[])
{
	WITH_FIXED_ENV(envp, env);
	int closed = before_exec();
	int r = REAL(execve)(path, argv, env);
	exec_failed(closed);
	return r;
}

PPA_API int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

PPA_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	WITH_FIXED_ENV(envp, env);
	int closed = before_exec();
	int r = REAL(execvpe)(file, argv, env);
	exec_failed(closed);
	return r;
}

PPA_API int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

PPA_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	WITH_FIXED_ENV(envp, env);
	int closed = before_exec();
	int r = REAL(fexecve)(fd, argv, env);
	exec_failed(closed);
	return r;
}

PPA_API int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	WITH_FIXED_ENV(envp, env);
	int closed = before_exec();
	int r = REAL(execveat)(dirfd, path, argv, env, flags);
	exec_failed(closed);
	return r;
}

/* execl family: collect the arguments, then the calls above */
#define COLLECT_ARGS(arg0, ap, argv, envp_out)                                 \
	size_t argc_ = 1;                                                      \
	va_start(ap, arg0);                                                    \
	while (va_arg(ap, char *))                                             \
		argc_++;                                                       \
	va_end(ap);                                                            \
	char *argv[argc_ + 1];                                                 \
	argv[0] = (char *)arg0;                                                \
	va_start(ap, arg0);                                                    \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                 \
		argv[i_] = va_arg(ap, char *);                                 \
	envp_out;                                                              \
	va_end(ap)

PPA_API int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	COLLECT_ARGS(arg0, ap, argv, (void)0);
	return execve(path, argv, environ);
}

PPA_API int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	COLLECT_ARGS(arg0, ap, argv, (void)0);
	return execvpe(file, argv, environ);
}

PPA_API int execle(const char *path, const char *arg0, ...)
{
	va_list ap;
	char **envp;
	COLLECT_ARGS(arg0, ap, argv, envp = va_arg(ap, char **));
	return execve(path, argv, envp);
}

/* posix_spawn does its exec inside libc, past any hook: fix the
 * environment here. The child records itself (its own spool, ppid = us). */
PPA_API int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	WITH_FIXED_ENV(envp, env);
	return REAL(posix_spawn)(pid, path, fa, attr, argv, env);
}

PPA_API int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	WITH_FIXED_ENV(envp, env);
	return REAL(posix_spawnp)(pid, file, fa, attr, argv, env);
}

/* ---- children's ends ----
 * A child killed by a signal its own agent did not see — SIGKILL, or a
 * fatal signal whose handler the program replaced (Open MPI's for SIGABRT
 * and SIGSEGV prints a backtrace and re-raises) — leaves a spool without
 * an exit record. Its parent learns the signal from wait*(), and the agent
 * completes the child's spool with it (pp_spool_note_exit: async-signal-
 * safe, as wait is called from SIGCHLD handlers). */
static void note_child_signaled(pid_t pid, int sig)
{
	if (ppa_cfg.spool_dir[0] == '/')
		pp_spool_note_exit(ppa_cfg.spool_dir, pid, (uint32_t)getpid(), -1, sig);
}

static pid_t (*r_waitpid)(pid_t, int *, int);
static pid_t (*r_wait4)(pid_t, int *, int, struct rusage *);
static int (*r_waitid)(idtype_t, id_t, siginfo_t *, int);

PPA_API pid_t waitpid(pid_t pid, int *status, int options)
{
	int st = 0, *sp = status ? status : &st; /* the program's own pointer: same faults */
	pid_t r = REAL(waitpid)(pid, sp, options);
	if (r > 0 && WIFSIGNALED(*sp))
		note_child_signaled(r, WTERMSIG(*sp));
	return r;
}

PPA_API pid_t wait(int *status) { return waitpid(-1, status, 0); }

PPA_API pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	int st = 0, *sp = status ? status : &st;
	pid_t r = REAL(wait4)(pid, sp, options, ru);
	if (r > 0 && WIFSIGNALED(*sp))
		note_child_signaled(r, WTERMSIG(*sp));
	return r;
}

PPA_API pid_t wait3(int *status, int options, struct rusage *ru) { return wait4(-1, status, options, ru); }

PPA_API int waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
	int r = REAL(waitid)(type, id, info, options);
	if (r == 0 && info && info->si_pid > 0 && !(options & WNOWAIT) &&
	    (info->si_code == CLD_KILLED || info->si_code == CLD_DUMPED))
		note_child_signaled(info->si_pid, info->si_status);
	return r;
}

/* resolved at start-up: wait is called from signal handlers */
static void resolve_wait(void)
{
	(void)REAL(waitpid);
	(void)REAL(wait4);
	(void)REAL(waitid);
}

static void (*r_exit)(int);

/* The status of an explicit exit() (a return from main reaches exit inside
 * libc, past this hook: `record` has that status from waitpid). */
PPA_API void exit(int status)
{
	if (owns_recorder())
		ppa_exit_status(status & 0xff, 0);
	REAL(exit)(status);
	__builtin_unreachable();
}

/* _exit and _Exit skip atexit: flush here. */
static void before_exit_now(int status)
{
	if (owns_recorder()) {
		ppa_exit_status(status & 0xff, 0);
		ppa_close_recorder("_exit");
	} else if (atomic_load(&ppa_recording)) {
		/* a child made by a raw clone3/clone (no fork handler ran) that
		 * reached no other recorder path: its parent's run says it was
		 * not followed */
		pp_foreign_child();
	}
}

PPA_API void _exit(int status)
{
	before_exit_now(status);
	REAL(_exit)(status);
	__builtin_unreachable();
}

PPA_API void _Exit(int status)
{
	before_exit_now(status);
	REAL(_Exit)(status);
	__builtin_unreachable();
}

/* ---- threads ---- */
typedef struct tramp {
	void *(*fn)(void *);
	void *arg;
} tramp;

static void *tramp_main(void *p)
{
	tramp t = *(tramp *)p;
	ppa_real_free(p);
	if (atomic_load(&ppa_recording)) {
		ppa_guard_set(1);
		char name[32];
		if (pthread_getname_np(pthread_self(), name, sizeof name) == 0)
			pp_thread_name(name);
		ppa_sampler_thread_start();
		ppa_guard_set(0);
	}
	return t.fn(t.arg);
}

int ppa_real_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	return REAL(pthread_create)(th, attr, fn, arg);
}

PPA_API int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	if (ppa_guard)
		return REAL(pthread_create)(th, attr, fn, arg);
	ppa_add(&ppa_self()->threads_created, 1);
	tramp *t = ppa_real_malloc(sizeof *t);
	if (!t)
		return REAL(pthread_create)(th, attr, fn, arg);
	t->fn = fn;
	t->arg = arg;
	int r = REAL(pthread_create)(th, attr, tramp_main, t);
	if (r != 0)
		ppa_real_free(t);
	return r;
}

static void name_self(const char *name)
{
	if (!atomic_load(&ppa_recording) || ppa_guard)
		return;
	ppa_guard_set(1);
	pp_thread_name(name);
	ppa_guard_set(0);
}

PPA_API int pthread_setname_np(pthread_t th, const char *name)
{
	int r = REAL(pthread_setname_np)(th, name);
	if (r == 0 && pthread_equal(th, pthread_self()))
		name_self(name);
	return r;
}

PPA_API int prctl(int op, ...)
{
	va_list ap;
	va_start(ap, op);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	if (op == PR_SET_SECCOMP && (a2 == SECCOMP_MODE_STRICT || a2 == SECCOMP_MODE_FILTER))
		seccomp_stop(a2 == SECCOMP_MODE_STRICT ? "prctl, strict mode" : "prctl");
	int r = REAL(prctl)(op, a2, a3, a4, a5);
	if (r == 0 && op == PR_SET_NAME && a2)
		name_self((const char *)a2);
	return r;
}

/* ---- fork ---- */
static void atfork_child(void)
{
	ppa_pid = getpid();
	ppa_reset_tstats();
	ppa_io_after_fork();
	ppa_libs_after_fork();
	ppa_sampler_after_fork();
	if (!ppa_cfg.follow_fork) {
		/* --no-follow-fork: the child and whatever it execs stay unrecorded */
		atomic_store(&ppa_recording, 0);
		following = 0;
		return;
	}
	ppa_after_fork_child();
}

static void atfork_parent(void) {}
static void atfork_prepare(void) {}

/* ---- seccomp: a filter the program installs may refuse any call of ours
 * (an allow-list of the program's own calls: readlink, fstat, writev,
 * fcntl, futex, getrlimit...). The agent does not guess what a filter
 * allows, and cannot ask once it is in place (reading /proc/self/status or
 * prctl(PR_GET_SECCOMP) are calls a filter may refuse too): it stops
 * recording, with a note, in the program's own prctl(PR_SET_SECCOMP) or
 * syscall(SYS_seccomp, SET_MODE_*) — before the filter exists, so every
 * last write and join happens while all calls are still allowed. After
 * that every hook passes straight through. A filter in place before the
 * agent's constructor (a sandbox that execs, a container's default
 * profile) is noted at start in run_meta `agent.seccomp`; the agent's
 * start-up calls passed it. Not seen: a raw `seccomp` system call made
 * without libc (Go), which the agent cannot intercept. */
static long (*r_syscall)(long, ...);

static void seccomp_stop(const char *how)
{
	if (!owns_recorder())
		return;
	char v[200];
	snprintf(v, sizeof v,
		 "the program installed a seccomp filter (%s) at %.3f s: recording stopped there, since the "
		 "filter may refuse the agent's own calls",
		 how, (double)pp_now() / 1e9);
	pp_meta("agent.stopped", v);
	ppa_close_recorder("seccomp");
	atomic_store(&ppa_quiet, 1); /* and for its children: nothing reopens */
}

/* The agent's own syscall() calls come here too (-Bsymbolic): resolved in
 * the constructor, before any signal handler of ours can run. */
PPA_API long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	if (PPA_UNLIKELY(!r_syscall))
		r_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (PPA_UNLIKELY(nr == SYS_seccomp) && (a1 == SECCOMP_SET_MODE_STRICT || a1 == SECCOMP_SET_MODE_FILTER))
		seccomp_stop("seccomp system call");
	return r_syscall(nr, a1, a2, a3, a4, a5, a6);
}

/* The recorder copy's syscall() (ppa_bypass, CMakeLists.txt): libc's, not
 * the hook above, like its other libc calls (it never asks for seccomp). */
long ppa_libc_syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	if (PPA_UNLIKELY(!r_syscall))
		r_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return r_syscall(nr, a1, a2, a3, a4, a5, a6);
}

/* Seccomp mode at start-up from /proc/self/status (0: none). */
static int seccomp_at_start(void)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[4096];
	long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strstr(buf, "\nSeccomp:");
	return p ? atoi(p + 9) : 0;
}

static int seccomp_mode0;

void ppa_proc_note_seccomp(void)
{
	if (seccomp_mode0)
		pp_meta("agent.seccomp", seccomp_mode0 == 1 ? "strict mode in place at start"
							      : "a filter was in place at start: the agent's start-up calls passed it");
}

void ppa_proc_init(void)
{
	r_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	seccomp_mode0 = seccomp_at_start();
	resolve_wait();
	save_carry();
	following = 1;
}

/* Registered after pp_open so our child handler runs after the recorder's
 * (child handlers run in registration order): the recorder has its new
 * spool by the time we restart our threads. */
void ppa_proc_after_open(void)
{
	static int done;
	if (!done) {
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
		done = 1;
	}
}

/* ---- main ----
 * Wrapping __libc_start_main gives the moment main starts (the end of
 * start-up as the program sees it) and main's return value, which exit()
 * receives inside libc where no hook sees it. */
typedef int (*main_fn)(int, char **, char **);
static main_fn real_main;

static int main_wrapper(int argc, char **argv, char **envp)
{
	if (atomic_load(&ppa_recording)) {
		char v[64];
		snprintf(v, sizeof v, "%lld", (long long)pp_now());
		int g = ppa_guard;
		ppa_guard_set(1);
		pp_meta("agent.main_ns", v);
		ppa_guard_set(g);
	}
	int r = real_main(argc, argv, envp);
	if (owns_recorder())
		ppa_exit_status(r & 0xff, 0);
	return r;
}

PPA_API int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
			      void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	int (*real)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *) =
		dlsym(RTLD_NEXT, "__libc_start_main");
	real_main = main;
	return real(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}
