/*
 * pyoffsets_probe.c — the sampler's CPython layout (agent_pyversions.c) as
 * text, from inside a live interpreter: pyoffsets_check.py loads this with
 * ctypes and compares every offset with the objects it describes.
 */
#include "agent_pyversions.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

__attribute__((visibility("default"))) int pp_pylayout_dump(char *buf, size_t cap)
{
	const unsigned char *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
	const unsigned long *hex = dlsym(RTLD_DEFAULT, "Py_Version");
	if (!rt || !hex) {
		snprintf(buf, cap, "error=no _PyRuntime or Py_Version\n");
		return -1;
	}
	unsigned minor = (unsigned)(*hex >> 16) & 0xff;
	ppa_pylayout l;
	const ppa_pylayout *t = (*hex >> 24) == 3 ? ppa_pylayout_table(minor) : NULL;
	char why[160] = "";
	if (t)
		l = *t;
	else if (ppa_pylayout_debug(rt, PPA_PY_DEBUG_OFFSETS_SIZE, *hex, &l, why, sizeof why) != 0) {
		snprintf(buf, cap, "error=%s\n", why);
		return -1;
	}
	size_t w = 0;
#define F(name) w += (size_t)snprintf(buf + w, w < cap ? cap - w : 0, #name "=%d\n", l.name)
	w += (size_t)snprintf(buf, cap, "minor=%u\nsource=%s\n", l.minor, l.source);
	F(rt_tss); F(rt_initialized); F(rt_main_interp); F(rt_interp_head); F(rt_tstate_current);
	F(rt_auto_interp); F(in_next); F(in_threads_head); F(ts_interp); F(ts_next); F(ts_native_tid);
	F(ts_chunk); F(ts_cframe); F(ts_frame); F(ts_read); F(fr_code); F(fr_previous); F(fr_instr);
	F(fr_is_entry); F(fr_owner); F(owner_cstack); F(fr_read); F(co_firstlineno); F(co_filename);
	F(co_qualname); F(co_linetable); F(co_code); F(co_read); F(ob_type); F(var_size); F(bytes_data);
	F(str_length); F(str_state); F(str_ascii_data); F(str_compact_data);
#undef F
	return w < cap ? 0 : -1;
}
