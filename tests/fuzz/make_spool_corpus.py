#!/usr/bin/python3
"""Regenerates the spool seed corpus (committed; run by hand when the format
changes). ok_* spools are ingested (a damaged tail is cut, the rest kept),
bad_* spools are refused as a whole. Format: record/include/spool.h."""
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

# ---- version 2 (issue 22): the header carries its own CRC (in `reserved`),
# a chunk's CRC covers its type, flags, tid and size before the payload;
# the room after the header (PAD) and what a spool that could not be
# written to its end puts there; a note a raw clone3 child appends after
# the parent's END. Each damaged one differs from a good one in one field.
def header2(pid=200, ppid=1, clock=0, ticks=0, mono=1000, flip=None):
    h = bytearray(struct.pack('<8sIIIIII QQQ 3Q', b'PPSPOOL1', 2, 80, pid, ppid, clock, 0,
                              10**18, mono, ticks, 0, 0, 0))
    struct.pack_into('<I', h, 28, zlib.crc32(bytes(h)))
    if flip is not None:  # (byte, bit) flipped after sealing
        h[flip[0]] ^= 1 << flip[1]
    return bytes(h)

def chunk2(typ, payload, tid=0, flags=0, flip=None):
    fields = struct.pack('<HHII', typ, flags, tid, len(payload))
    c = zlib.crc32(payload, zlib.crc32(fields))
    pad = b'\0' * ((8 - len(payload) % 8) % 8)
    out = bytearray(struct.pack('<I', 0x4b4e4843) + fields + struct.pack('<II', c, 0) + payload + pad)
    if flip is not None:  # (byte of the chunk, bit) flipped after sealing
        out[flip[0]] ^= 1 << flip[1]
    return bytes(out)

def pad2(room=512):  # the PAD chunk right after the header: 512 bytes in all
    return chunk2(10, b'\0' * (room - 24))

def loss2(n, what):
    return chunk2(6, struct.pack('<Q', n) + b(what))

def meta2(k, v, tid=0):
    return chunk2(4, b(k) + b'\0' + b(v) + b'\0', tid)

def events2(tid, evs):
    return chunk2(1, b''.join(struct.pack('<QBBHIQ', *e) for e in evs), tid)

EV = [(2000, 1, 3, 0, 1, U), (2100, 1, 16, 0, 2, 0), (2150, 4, 0, 0, 3, 0x3ff0000000000000),
      (2200, 1, 21, 0, 4, U), (2300, 2, 0, 0, 0, 0), (2400, 2, 0, 0, 0, 0),
      (2500, 3, 0, 0, 1, 0), (2600, 2, 0, 0, 0, 0), (2700, 2, 0, 0, 0, 0)]
def body2(tid=7, flip_at=None, flip=None):
    parts = [chunk2(2, struct.pack('<I', 1) + b'init'), chunk2(2, struct.pack('<I', 2) + b'step'),
             chunk2(2, struct.pack('<I', 3) + b'c'), chunk2(2, struct.pack('<I', 4) + b'matmul'),
             meta2('command', 'prog --flag'), chunk2(3, b'main', tid=tid), events2(tid, EV),
             chunk2(5, struct.pack('<QQ', 5000, 6000))]
    if flip_at is not None:
        p = bytearray(parts[flip_at])
        p[flip[0]] ^= 1 << flip[1]
        parts[flip_at] = bytes(p)
    return b''.join(parts)

def end2(ts=3000):
    return chunk2(8, struct.pack('<Q', ts))

write('ok_v2_small.spool', header2(pid=201) + pad2() + body2() + end2())
# a chunk's type (EVENTS -> STRING), tid, size or flags flipped: damage, not other content
write('ok_v2_flip_type.spool', header2(pid=202) + pad2() + body2(flip_at=6, flip=(4, 0)) + end2())
write('ok_v2_flip_tid.spool', header2(pid=203) + pad2() + body2(flip_at=6, flip=(8, 3)) + end2())
write('ok_v2_flip_size.spool', header2(pid=204) + pad2() + body2(flip_at=5, flip=(12, 1)) + end2())
write('ok_v2_flip_flags.spool', header2(pid=205) + pad2() + body2(flip_at=4, flip=(6, 7)) + end2())
write('ok_v2_flip_end_type.spool', header2(pid=206) + pad2() + body2() + end2()[:4] +
      bytes([end2()[4] ^ 1]) + end2()[5:])
# a chunk type nobody knows, its CRC right
write('ok_v2_unknown_type.spool', header2(pid=207) + pad2() + chunk2(99, b'future') + body2() + end2())
# the disk filled up: the room after the header says what was lost, no END
room = loss2(1234, 'unwritten') + loss2(5, 'rows') + \
    meta2('recorder.write_failed', 'No space left on device after 4096 bytes: 1234 events, 5 rows not written')
write('ok_v2_diskfull.spool', header2(pid=208) + room + pad2(512 - len(room)) + body2())
# a raw clone3 child's note, appended after the parent's END (and an EXIT)
write('ok_v2_clone_note.spool', header2(pid=209) + pad2() + body2() + end2() +
      meta2('agent.child_unrecorded', 'pid 210, made at 0.002 s, not recorded: a child made by clone3 '
            'or clone without fork was not followed') + chunk2(9, struct.pack('<ii', 0, 0)))
# the header's own CRC wrong: a flipped bit in the pid, the clock kind, the version
write('bad_v2_header_pid.spool', header2(pid=211, flip=(16, 2)) + pad2() + body2() + end2())
write('bad_v2_header_clock.spool', header2(pid=212, flip=(24, 0)) + pad2() + body2() + end2())
write('bad_v2_header_crc.spool', header2(pid=213, flip=(28, 5)) + pad2() + body2() + end2())
write('bad_v2_header_start.spool', header2(pid=214, flip=(40, 6)) + pad2() + body2() + end2())
