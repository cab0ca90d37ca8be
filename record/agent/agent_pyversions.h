/*
 * agent_pyversions.h — where CPython keeps what the sampler reads (thread
 * state, frames, code objects, strings), per version. See
 * agent_pyversions.c. Plain C, no agent state: the offsets test loads it
 * into a live interpreter on its own.
 */
#ifndef AGENT_PYVERSIONS_H
#define AGENT_PYVERSIONS_H

#include <stddef.h>
#include <stdint.h>

/* Byte offsets; -1 where the version has no such field. */
typedef struct ppa_pylayout {
	unsigned minor;          /* 3.<minor> */
	const char *source;      /* "table" (checked offsets) or "debug offsets" (read from the interpreter) */
	/* how the sampled thread's PyThreadState is found: through the
	 * runtime's autoTSSkey (pthread_getspecific), else by walking the
	 * runtime's interpreters and their threads for the native thread id */
	int rt_tss;              /* _PyRuntime.autoTSSkey: {int initialised; pthread_key_t key} */
	int rt_initialized;      /* _PyRuntime.initialized (int) */
	int rt_main_interp;      /* _PyRuntime.interpreters.main */
	int rt_interp_head;      /* _PyRuntime.interpreters.head */
	int rt_tstate_current;   /* 3.11: _PyRuntime.gilstate.tstate_current */
	int rt_auto_interp;      /* 3.11: _PyRuntime.gilstate.autoInterpreterState */
	int in_next, in_threads_head;
	int ts_interp, ts_next, ts_native_tid, ts_chunk;
	int ts_cframe;           /* 3.11, 3.12: tstate->cframe; -1: the frame is in the thread state */
	int ts_frame;            /* current_frame: in the cframe (ts_cframe >= 0) or in the thread state */
	int ts_read;             /* bytes of the thread state covering the fields above */
	int fr_code, fr_previous, fr_instr;
	int fr_is_entry;         /* 3.11: frame->is_entry (char) */
	int fr_owner;            /* 3.12+: frame->owner (char); the C stack's shim frames end an eval call */
	int owner_cstack;        /* FRAME_OWNED_BY_CSTACK */
	int fr_read;             /* bytes of a frame covering the fields above */
	int co_firstlineno, co_filename, co_qualname, co_linetable, co_code;
	int co_read;             /* bytes of a code object covering the fields above */
	int ob_type, var_size, bytes_data;
	int str_length, str_state, str_ascii_data, str_compact_data;
} ppa_pylayout;

/* The checked table of 3.<minor> (11, 12), NULL if none. */
const ppa_pylayout *ppa_pylayout_table(unsigned minor);

/* 3.13: fills *out from the _Py_DebugOffsets the interpreter publishes at
 * the start of _PyRuntime (a copy of its first `n` bytes in `rt`).
 * `hexversion` is the interpreter's Py_Version. 0, or -1 with why[]
 * saying why (no cookie, another version, a free-threaded build, an
 * offset out of the ranges the sampler reads). */
int ppa_pylayout_debug(const unsigned char *rt, size_t n, uint64_t hexversion, ppa_pylayout *out, char *why,
		       size_t cap);

/* bytes of _PyRuntime that ppa_pylayout_debug reads */
#define PPA_PY_DEBUG_OFFSETS_SIZE 584

#define PPA_PY_FR_MAX 128        /* the sampler's frame buffer */
#define PPA_PY_TS_MAX 1024       /* its thread-state buffer */
#define PPA_PY_CO_MAX 512        /* the resolver's code-object buffer */

#endif
