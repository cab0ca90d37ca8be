#!/usr/bin/python3
"""Regenerates the spool seed corpus (committed; run by hand when the format
changes). ok_* spools are ingested (a damaged tail is cut, the rest kept),
bad_* spools are refused as a whole. Format: profiler/spool.h."""
import os, struct, zlib

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, 'corpus', 'spool')
os.makedirs(out, exist_ok=True)

def header(pid=100, ppid=1, clock=0, version=1, size=80, magic=b'PPSPOOL1', ticks=0, mono=1000):
    return struct.pack('<8sIIIIII QQQ 3Q', magic, version, size, pid, ppid, clock, 0,
                       10**18, mono, ticks, 0, 0, 0)

def chunk(typ, payload, tid=0, crc=None):
    c = zlib.crc32(payload) if crc is None else crc
    pad = b'\0' * ((8 - len(payload) % 8) % 8)
    return struct.pack('<IHHIIII', 0x4b4e4843, typ, 0, tid, len(payload), c, 0) + payload + pad

def b(s):
    return s.encode() if isinstance(s, str) else s

def string(i, s):
    return chunk(2, struct.pack('<I', i) + b(s))

def events(tid, evs):  # (ts, type, kind, reserved, name, arg)
    return chunk(1, b''.join(struct.pack('<QBBHIQ', *e) for e in evs), tid)

def meta(k, v):
    return chunk(4, b(k) + b'\0' + b(v) + b'\0')

def row(table, vals):  # [(tag, value)]
    p = struct.pack('<I', len(table)) + table.encode() + struct.pack('<I', len(vals))
    for tag, v in vals:
        p += tag.encode()
        if tag == 'i': p += struct.pack('<q', v)
        elif tag == 'd': p += struct.pack('<d', v)
        elif tag in 'st': p += struct.pack('<I', len(b(v))) + b(v)
    return chunk(7, p)

def end(ts):
    return chunk(8, struct.pack('<Q', ts))

def write(name, data):
    open(os.path.join(out, name), 'wb').write(data)

U = 2**64 - 1
body = (string(1, 'init') + string(2, 'step') + string(3, 'c') + string(4, 'matmul') +
        meta('command', 'prog --flag') + meta('agent.exit_code', '0') +
        chunk(3, b'main', tid=7) +
        events(7, [(2000, 1, 3, 0, 1, U), (2100, 1, 16, 0, 2, 0), (2150, 4, 0, 0, 3, 0x3ff0000000000000),
                   (2200, 1, 21, 0, 4, U), (2300, 2, 0, 0, 0, 0), (2400, 2, 0, 0, 0, 0),
                   (2500, 3, 0, 0, 1, 0), (2600, 2, 0, 0, 0, 0), (2700, 2, 0, 0, 0, 0)]) +
        row('io', [('i', 7), ('s', '/etc/passwd'), ('t', 'read'), ('i', 2), ('i', 100), ('i', 50), ('i', 1)]) +
        row('graphs', [('i', 0), ('t', 'g'), ('i', 1), ('i', 2000), ('i', 1), ('i', 0)]) +
        row('graph_nodes', [('i', 0), ('i', 0), ('s', 'n0'), ('i', 1), ('i', 0), ('t', '[2]'), ('d', 1.5)]) +
        row('samples', [('i', 7), ('i', 2250), ('t', '401000,402000')]) +
        chunk(6, struct.pack('<Q', 3) + b'events', tid=7) +
        chunk(5, struct.pack('<QQ', 5000, 6000)))
write('ok_small.spool', header() + body + end(3000))
write('ok_tsc.spool', header(clock=1, ticks=1000, mono=1000) + body + end(3000))
write('ok_empty.spool', header())
whole = header() + body + end(3000)
write('ok_torn_tail.spool', whole[:-5])
write('ok_bad_crc_middle.spool', header() + string(1, 'init') + chunk(4, b'k\0v\0', crc=1) + body)
write('ok_sparse_ids.spool', header() + string(0xfffffe, 'x') +
      row('graphs', [('i', 0xfffffe), ('t', 'g'), ('i', 1), ('i', 5), ('i', 0), ('i', 0)]) + end(2000))
write('ok_unknown_table.spool', header() + row('nonesuch', [('i', 1)]) + row('io', [('i', 1)]) + end(10))
write('ok_huge_times.spool', header(clock=1, ticks=2**63, mono=2**63) +
      events(1, [(U, 1, 200, 1, 99, U), (0, 2, 0, 0, 0, 0), (2**63, 5, 1, 0, 1, 2**40), (1, 6, 1, 0, 0, U)]) +
      chunk(5, struct.pack('<QQ', U, 0)) + chunk(5, struct.pack('<QQ', 0, U)))
# names a hostile program controls (span, op, thread, counter, path,
# command line, graph node): markup, the end of a <script>, terminal
# escapes, a spreadsheet formula, control bytes, bytes that are not UTF-8.
# Stored as they are; every output escapes them (tests/viewers/hostile.sh).
H = [b'<img src=x onerror=alert(1)>', b'</script><script>alert(2)</script>', b'\x1b]0;pwned\x07\x1b[2J',
     b"=cmd|' /C calc'!A0", b'\xff\xfe\xc3 not utf-8 \xe2\x82', b'\x01\x02\x7f\xc2\x9b31m']
write('ok_hostile_names.spool', header() + string(1, H[0]) + string(2, H[1]) + string(3, H[2]) +
      string(4, H[3] + H[4]) + meta('command', H[1] + H[5]) + meta(H[2], H[4]) + chunk(3, H[2] + H[5], tid=7) +
      events(7, [(2000, 1, 3, 0, 1, U), (2100, 1, 16, 0, 2, 0), (2150, 4, 0, 0, 3, 0x3ff0000000000000),
                 (2200, 1, 21, 0, 4, U), (2300, 2, 0, 0, 0, 0), (2400, 2, 0, 0, 0, 0),
                 (2500, 3, 0, 0, 1, 0), (2600, 2, 0, 0, 0, 0), (2700, 2, 0, 0, 0, 0)]) +
      row('io', [('i', 7), ('s', H[4]), ('t', H[3]), ('i', 2), ('i', 100), ('i', 50), ('i', 1)]) +
      row('graphs', [('i', 0), ('t', H[0]), ('i', 1), ('i', 2000), ('i', 1), ('i', 0)]) +
      row('graph_nodes', [('i', 0), ('i', 0), ('s', H[2] + H[4]), ('i', 1), ('i', 0), ('t', H[5]), ('d', 1.5)]) +
      end(3000))
write('bad_magic.spool', header(magic=b'PPSPOOL2') + body)
write('bad_version.spool', header(version=2) + body)
write('bad_header_size.spool', header(size=96) + body)
write('bad_short.spool', header()[:60])
write('bad_text.spool', b'this is not a spool file at all, just some text that is long enough\n' * 2)
