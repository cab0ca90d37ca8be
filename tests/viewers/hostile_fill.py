#!/usr/bin/env python3
"""hostile_fill.py DB — a recording as an attacker would send it: every text
column of every table (but meta's schema_version and schema_digest, which
make it a phaseprof database) holds hostile content: markup that runs script
or injects elements in HTML, text that ends a <script>, terminal escapes
(ESC, BEL, CSI, C1), spreadsheet formulas (= + - @), bytes that are not
UTF-8, control bytes. Each value also carries its row id, so unique columns
stay unique. Prints the columns filled, one per line."""
import sqlite3
import sys

PAYLOADS = [
    b"<img src=x onerror=alert(1)><b id=pwned>x</b>",
    b"</script><script>alert(2)</script><!--",
    b"=cmd|' /C calc'!A0 \x1b]0;pwned\x07\x1b[2J\x1b[31m",
    b"+1+1 \xff\xfe not utf-8 \xc3 \xe2\x82",
    b"-2 \x01\x02\x08\x0b\x0c\x0d\x7f \xc2\x9b31m \x9b",
    b"@SUM(1) \"q' &amp; <style>body{display:none}</style>",
    b"' onmouseover=alert(3) x='\" onfocus=alert(4) autofocus \"",
    b"javascript:alert(5)//\\N\\G\\l</title></svg><svg onload=alert(6)>",
]


def main():
    db = sqlite3.connect(sys.argv[1])
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
    filled = []
    for t in tables:
        cols = [r[1] for r in db.execute(f'PRAGMA table_info("{t}")') if r[2].upper() == 'TEXT']
        for c in cols:
            where = ""
            if t == "meta":
                where = " WHERE key NOT IN ('schema_version','schema_digest')"
                if c == "key":
                    continue  # the keys the store looks up stay; their values do not
            elif t == "run_meta" and c == "key":
                where = " WHERE rowid % 2 = 1"  # half: hostile keys; half: hostile values of real keys
            case = " ".join(f"WHEN {i} THEN X'{p.hex()}'" for i, p in enumerate(PAYLOADS))
            db.execute(f'UPDATE "{t}" SET "{c}" = CAST((CASE rowid % {len(PAYLOADS)} {case} END)'
                       f" || X'{' #'.encode().hex()}' || rowid AS TEXT){where}")
            filled.append(f"{t}.{c}")
    db.commit()
    db.close()
    print("\n".join(filled))


if __name__ == "__main__":
    main()
