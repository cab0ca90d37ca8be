/*
 * agent_pyversions.c — the CPython layouts the sampler reads (x86-64 /
 * aarch64 LP64, default builds, not free-threaded).
 *
 *   3.11  a table, checked against the 3.11.2 headers (Debian 12);
 *   3.12  a table, checked against the 3.12.1 interpreter (its DWARF, and
 *         tests/python_stack/pyoffsets_check.py, which compares every
 *         entry with the live interpreter through ctypes);
 *   3.13  read at run time from the _Py_DebugOffsets the interpreter
 *         publishes at the start of _PyRuntime (cookie "xdebugpy"), for
 *         out-of-process debuggers; the same check covers what is read.
 *
 * Any other version has no layout here: the sampler keeps native frames
 * and says so in one run_meta line.
 */
#include "agent_pyversions.h"

#include <stdio.h>
#include <string.h>

static const ppa_pylayout py311 = {
	.minor = 11, .source = "table",
	.rt_tss = 592, .rt_initialized = 16, .rt_main_interp = 48, .rt_interp_head = -1,
	.rt_tstate_current = 576, .rt_auto_interp = 584,
	.in_next = -1, .in_threads_head = -1,
	.ts_interp = 16, .ts_next = 8, .ts_native_tid = -1, .ts_chunk = 296,
	.ts_cframe = 56, .ts_frame = 8, .ts_read = 304,
	.fr_code = 32, .fr_previous = 48, .fr_instr = 56, .fr_is_entry = 68, .fr_owner = -1,
	.owner_cstack = -1, .fr_read = 72,
	.co_firstlineno = 72, .co_filename = 112, .co_qualname = 128, .co_linetable = 136, .co_code = 184,
	.co_read = 184,
	.ob_type = 8, .var_size = 16, .bytes_data = 32,
	.str_length = 16, .str_state = 32, .str_ascii_data = 48, .str_compact_data = 72,
};

static const ppa_pylayout py312 = {
	.minor = 12, .source = "table",
	.rt_tss = 1544, .rt_initialized = 16, .rt_main_interp = 48, .rt_interp_head = 40,
	.rt_tstate_current = -1, .rt_auto_interp = -1,
	.in_next = 0, .in_threads_head = 72,
	.ts_interp = 16, .ts_next = 8, .ts_native_tid = 144, .ts_chunk = 232,
	.ts_cframe = 56, .ts_frame = 0, .ts_read = 240,
	.fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_is_entry = -1, .fr_owner = 70,
	.owner_cstack = 3, .fr_read = 72,
	.co_firstlineno = 68, .co_filename = 112, .co_qualname = 128, .co_linetable = 136, .co_code = 192,
	.co_read = 192,
	.ob_type = 8, .var_size = 16, .bytes_data = 32,
	.str_length = 16, .str_state = 32, .str_ascii_data = 40, .str_compact_data = 56,
};

const ppa_pylayout *ppa_pylayout_table(unsigned minor)
{
	return minor == 11 ? &py311 : minor == 12 ? &py312 : NULL;
}

/* positions in the 3.13 _Py_DebugOffsets (Include/internal/pycore_debug_offsets.h) */
enum {
	DO_VERSION = 8, DO_FREE_THREADED = 16,
	DO_RT_INTERP_HEAD = 40,
	DO_IN_NEXT = 64, DO_IN_THREADS_HEAD = 72,
	DO_TS_NEXT = 168, DO_TS_INTERP = 176, DO_TS_FRAME = 184, DO_TS_NATIVE_TID = 200, DO_TS_CHUNK = 208,
	DO_FR_PREVIOUS = 232, DO_FR_EXECUTABLE = 240, DO_FR_INSTR = 248, DO_FR_OWNER = 264,
	DO_CO_FILENAME = 280, DO_CO_QUALNAME = 296, DO_CO_LINETABLE = 304, DO_CO_FIRSTLINENO = 312,
	DO_CO_CODE = 344,
	DO_OB_TYPE = 360,
	DO_BYTES_SIZE = 520, DO_BYTES_SVAL = 528,
	DO_STR_STATE = 544, DO_STR_LENGTH = 552, DO_STR_ASCII_SIZE = 560,
};

static uint64_t u64(const unsigned char *p, int off)
{
	uint64_t v;
	memcpy(&v, p + off, sizeof v);
	return v;
}

/* one offset, within [0, limit - width] */
static int take(const unsigned char *rt, int pos, int width, int limit, int *out)
{
	uint64_t v = u64(rt, pos);
	if (v > (uint64_t)(limit - width))
		return -1;
	*out = (int)v;
	return 0;
}

static int max3(int a, int b, int c)
{
	return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

int ppa_pylayout_debug(const unsigned char *rt, size_t n, uint64_t hexversion, ppa_pylayout *o, char *why,
		       size_t cap)
{
	if (n < PPA_PY_DEBUG_OFFSETS_SIZE || memcmp(rt, "xdebugpy", 8) != 0) {
		snprintf(why, cap, "no _Py_DebugOffsets (cookie \"xdebugpy\") at the start of _PyRuntime");
		return -1;
	}
	uint64_t v = u64(rt, DO_VERSION);
	if (v >> 16 != 0x30d || hexversion >> 16 != 0x30d || v != hexversion) {
		snprintf(why, cap, "_Py_DebugOffsets of version %#llx in CPython %#llx (read: 3.13)",
			 (unsigned long long)v, (unsigned long long)hexversion);
		return -1;
	}
	if (u64(rt, DO_FREE_THREADED)) {
		snprintf(why, cap, "free-threaded build (its frames are not read)");
		return -1;
	}
	memset(o, 0, sizeof *o);
	o->minor = 13;
	o->source = "debug offsets";
	o->rt_tss = o->rt_initialized = o->rt_main_interp = o->rt_tstate_current = o->rt_auto_interp = -1;
	o->ts_cframe = o->fr_is_entry = -1;
	o->owner_cstack = 3; /* FRAME_OWNED_BY_CSTACK, 3.13 */
	enum { RT = 1 << 20, IN = 1 << 20 };
	int bad = take(rt, DO_RT_INTERP_HEAD, 8, RT, &o->rt_interp_head) |
		  take(rt, DO_IN_NEXT, 8, IN, &o->in_next) | take(rt, DO_IN_THREADS_HEAD, 8, IN, &o->in_threads_head) |
		  take(rt, DO_TS_NEXT, 8, PPA_PY_TS_MAX, &o->ts_next) |
		  take(rt, DO_TS_INTERP, 8, PPA_PY_TS_MAX, &o->ts_interp) |
		  take(rt, DO_TS_FRAME, 8, PPA_PY_TS_MAX, &o->ts_frame) |
		  take(rt, DO_TS_NATIVE_TID, 8, PPA_PY_TS_MAX, &o->ts_native_tid) |
		  take(rt, DO_TS_CHUNK, 8, PPA_PY_TS_MAX, &o->ts_chunk) |
		  take(rt, DO_FR_PREVIOUS, 8, PPA_PY_FR_MAX, &o->fr_previous) |
		  take(rt, DO_FR_EXECUTABLE, 8, PPA_PY_FR_MAX, &o->fr_code) |
		  take(rt, DO_FR_INSTR, 8, PPA_PY_FR_MAX, &o->fr_instr) |
		  take(rt, DO_FR_OWNER, 1, PPA_PY_FR_MAX, &o->fr_owner) |
		  take(rt, DO_CO_FILENAME, 8, PPA_PY_CO_MAX, &o->co_filename) |
		  take(rt, DO_CO_QUALNAME, 8, PPA_PY_CO_MAX, &o->co_qualname) |
		  take(rt, DO_CO_LINETABLE, 8, PPA_PY_CO_MAX, &o->co_linetable) |
		  take(rt, DO_CO_FIRSTLINENO, 4, PPA_PY_CO_MAX, &o->co_firstlineno) |
		  take(rt, DO_CO_CODE, 0, PPA_PY_CO_MAX, &o->co_code) |
		  take(rt, DO_OB_TYPE, 8, 64, &o->ob_type) |
		  take(rt, DO_BYTES_SIZE, 8, 64, &o->var_size) | take(rt, DO_BYTES_SVAL, 0, 64, &o->bytes_data) |
		  take(rt, DO_STR_STATE, 4, 128, &o->str_state) | take(rt, DO_STR_LENGTH, 8, 128, &o->str_length) |
		  take(rt, DO_STR_ASCII_SIZE, 0, 128, &o->str_ascii_data);
	if (bad) {
		snprintf(why, cap, "_Py_DebugOffsets with an offset out of range");
		return -1;
	}
	/* PyCompactUnicodeObject: PyASCIIObject, then utf8_length and utf8 */
	o->str_compact_data = o->str_ascii_data + 16;
	o->ts_read = max3(max3(o->ts_next, o->ts_interp, o->ts_frame), o->ts_native_tid, o->ts_chunk) + 8;
	o->fr_read = max3(max3(o->fr_previous, o->fr_code, o->fr_instr), o->fr_owner, 0) + 8;
	o->co_read = max3(max3(o->co_filename, o->co_qualname, o->co_linetable) + 8, o->co_firstlineno + 4, o->co_code);
	if (o->fr_read > PPA_PY_FR_MAX || o->ts_read > PPA_PY_TS_MAX || o->co_read > PPA_PY_CO_MAX) {
		snprintf(why, cap, "_Py_DebugOffsets with an offset out of range");
		return -1;
	}
	return 0;
}
