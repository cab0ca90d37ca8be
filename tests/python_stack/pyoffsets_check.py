"""Checks the sampler's CPython layout against the live interpreter.

usage: python3.X pyoffsets_check.py PROBE_SO

PROBE_SO (pyoffsets_probe.c) reports the layout the agent uses for this
interpreter (agent_pyversions.c: a checked table for 3.11 and 3.12, the
interpreter's _Py_DebugOffsets for 3.13). Every offset is compared here with
what the interpreter itself says through ctypes: the runtime's main
interpreter and thread-state key, this thread's state, the frame running
this code and its callers, a code object's fields, str and bytes objects.
Prints one line per check; exit 1 if any failed.
"""

import ctypes
import sys
import threading

api = ctypes.pythonapi
api.PyThreadState_Get.restype = ctypes.c_void_p
api.PyInterpreterState_Main.restype = ctypes.c_void_p
api.PyThread_tss_get.restype = ctypes.c_void_p
api.PyThread_tss_get.argtypes = [ctypes.c_void_p]

probe = ctypes.CDLL(sys.argv[1])
buf = ctypes.create_string_buffer(8192)
rc = probe.pp_pylayout_dump(buf, ctypes.c_size_t(len(buf)))
L = {}
for line in buf.value.decode().splitlines():
    k, v = line.split("=", 1)
    L[k] = int(v) if v.lstrip("-").isdigit() else v
if rc != 0:
    print("no layout for CPython %s: %s" % (sys.version.split()[0], L.get("error")))
    sys.exit(1)

failed = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failed.append(what)


def u64(addr):
    return ctypes.c_uint64.from_address(addr).value


def i32(addr):
    return ctypes.c_int32.from_address(addr).value


def u8(addr):
    return ctypes.c_uint8.from_address(addr).value


def mem(addr, n):
    return ctypes.string_at(addr, n)


def frames_here():
    """(frame address, code address) of this function's frame and its
    callers, shim frames left out, leaf first; and the entry flags."""
    ts = api.PyThreadState_Get()
    # read inline: inside a helper, the current frame would be the helper's
    rd = ctypes.c_uint64.from_address
    if L["ts_cframe"] >= 0:
        f = rd(rd(ts + L["ts_cframe"]).value + L["ts_frame"]).value
    else:
        f = rd(ts + L["ts_frame"]).value
    out = []
    while f and len(out) < 64:
        if L["fr_owner"] >= 0 and u8(f + L["fr_owner"]) == L["owner_cstack"]:
            if out:
                out[-1][2] = True
        else:
            entry = L["fr_is_entry"] >= 0 and u8(f + L["fr_is_entry"]) != 0
            out.append([f, u64(f + L["fr_code"]), entry, u64(f + L["fr_instr"])])
        f = u64(f + L["fr_previous"])
    return out


def caller():
    return frames_here()


rt = ctypes.addressof(ctypes.c_char.in_dll(api, "_PyRuntime"))
ts = api.PyThreadState_Get()
main = api.PyInterpreterState_Main()
ver = "%d.%d" % sys.version_info[:2]
check(L["minor"] == sys.version_info[1], "layout of 3.%s for CPython %s (%s)" % (L["minor"], ver, L["source"]))
check(L["source"] == ("debug offsets" if sys.version_info >= (3, 13) else "table"), "source: %s" % L["source"])

# the runtime: main interpreter, thread-state key, this thread's state
if L["rt_initialized"] >= 0:
    check(i32(rt + L["rt_initialized"]) == 1, "_PyRuntime.initialized")
if L["rt_main_interp"] >= 0:
    check(u64(rt + L["rt_main_interp"]) == main, "_PyRuntime.interpreters.main")
if L["rt_interp_head"] >= 0:
    i, last = u64(rt + L["rt_interp_head"]), 0
    while i:
        last, i = i, u64(i + L["in_next"])
    check(last == main, "interpreters.head ... next: the main interpreter last")
if L["rt_tss"] >= 0:
    check(i32(rt + L["rt_tss"]) == 1, "_PyRuntime.autoTSSkey initialised")
    check(api.PyThread_tss_get(ctypes.c_void_p(rt + L["rt_tss"])) == ts, "autoTSSkey gives this thread's state")
if L["rt_tstate_current"] >= 0:
    check(u64(rt + L["rt_tstate_current"]) == ts, "gilstate.tstate_current is this thread's state")
if L["rt_auto_interp"] >= 0:
    check(u64(rt + L["rt_auto_interp"]) == main, "gilstate.autoInterpreterState")
check(u64(ts + L["ts_interp"]) == main, "tstate->interp")
if L["in_threads_head"] >= 0:
    t, seen = u64(main + L["in_threads_head"]), False
    for _ in range(1000):
        if not t:
            break
        seen = seen or t == ts
        t = u64(t + L["ts_next"])
    check(seen, "interp->threads.head ... next reaches this thread's state")
if L["ts_native_tid"] >= 0:
    check(u64(ts + L["ts_native_tid"]) == threading.get_native_id(), "tstate->native_thread_id")
    # another thread's state, found the way the sampler finds it
    got = []
    th = threading.Thread(target=lambda: got.append((api.PyThreadState_Get(), threading.get_native_id())))
    th.start()
    th.join()
    check(got and got[0][0] != ts, "a second thread has its own state")

# frames: this function's, its caller's, down to the module's
fr = caller()
codes = [c for _, c, _, _ in fr]
check(len(fr) >= 3 and codes[0] == id(frames_here.__code__) and codes[1] == id(caller.__code__),
      "current frame -> previous: frames_here, caller (%d frames)" % len(fr))
mod_code = sys._getframe().f_code
check(id(mod_code) in codes and codes.index(id(mod_code)) == 2, "then the module's frame")
check(fr[-1][2], "the outermost frame is an entry frame")
check(not fr[0][2] and not fr[1][2], "the inner frames are not entry frames")
co = frames_here.__code__
n_units = len(co.co_code) // 2
idx = (fr[0][3] - (codes[0] + L["co_code"])) // 2
check(0 <= idx < n_units, "frame's instruction pointer inside co_code_adaptive (index %d of %d)" % (idx, n_units))
chunk = u64(ts + L["ts_chunk"])
check(chunk and chunk < fr[0][0] < chunk + u64(chunk + 8), "the frame is in tstate->datastack_chunk")

# code objects
check(u64(id(co) + L["ob_type"]) == id(type(co)), "ob_type")
check(u64(id(co) + L["co_filename"]) == id(co.co_filename), "co_filename")
check(u64(id(co) + L["co_qualname"]) == id(co.co_qualname), "co_qualname")
check(u64(id(co) + L["co_linetable"]) == id(co.co_linetable), "co_linetable")
check(i32(id(co) + L["co_firstlineno"]) == co.co_firstlineno, "co_firstlineno")


def never_run(a, b):
    return a * b + 1


nc = never_run.__code__
check(mem(id(nc) + L["co_code"], 2) == nc.co_code[:2], "co_code_adaptive starts as co_code")
for k in ("co_read", "fr_read", "ts_read"):
    check(0 < L[k] <= {"co_read": 512, "fr_read": 128, "ts_read": 1024}[k], "%s = %d" % (k, L[k]))

# str and bytes
for s, kind, ascii in (("sampler_ascii_name", 1, 1), ("n\u00e4me", 1, 0), ("\u540d\u524d", 2, 0)):
    s = "".join(list(s))  # a fresh compact object
    st = i32(id(s) + L["str_state"])
    check(u64(id(s) + L["str_length"]) == len(s), "str length of %r" % s)
    check((st >> 2) & 7 == kind and (st >> 5) & 1 == 1 and (st >> 6) & 1 == ascii, "str state of %r" % s)
    data = L["str_ascii_data"] if ascii else L["str_compact_data"]
    enc = {1: "latin-1", 2: "utf-16-le"}[kind]
    check(mem(id(s) + data, len(s) * kind) == s.encode(enc), "str data of %r" % s)
b = bytes(range(7)) + b"xyz"
check(u64(id(b) + L["var_size"]) == len(b), "bytes size")
check(mem(id(b) + L["bytes_data"], len(b)) == b, "bytes data")

print("%d failed" % len(failed) if failed else "all checks passed: CPython %s" % sys.version.split()[0])
sys.exit(1 if failed else 0)
