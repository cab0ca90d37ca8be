"""The folders are the pipeline (README.md, "For developers"): a file includes only
headers of its own top folder, or the public headers (an include/ folder)
of a folder below it. Fails naming each include that breaks that, and each
include loop between files of different folders.

usage: check_layers.py REPO_ROOT"""
import os
import re
import sys

# lowest first; a folder may use the public headers of any earlier one
LAYERS = ["common", "record", "ingest", "store", "diag", "session", "viewers", "demo", "cli"]
SOURCES = (".c", ".h", ".cu")

root = sys.argv[1]
headers = {}   # header name -> (top folder, public?)
files = []
for top in LAYERS:
    for d, _, names in os.walk(os.path.join(root, top)):
        for n in names:
            if not n.endswith(SOURCES):
                continue
            p = os.path.join(d, n)
            files.append((top, p))
            if n.endswith(".h"):
                public = os.path.basename(d) == "include"
                if n in headers and headers[n][0] != top:
                    print("FAIL: header name %s in two folders (%s, %s)" % (n, headers[n][0], top))
                    sys.exit(1)
                headers[n] = (top, public or headers.get(n, (top, False))[1])

bad = []
edges = {}
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for top, p in files:
    for h in inc.findall(open(p, errors="replace").read()):
        h = os.path.basename(h)
        if h not in headers:
            continue  # generated (commands.inc, flow_oplibs.inc) or a test's own
        owner, public = headers[h]
        if owner == top:
            continue
        rel = os.path.relpath(p, root)
        if LAYERS.index(owner) > LAYERS.index(top):
            bad.append("%s includes %s of %s/, a higher layer" % (rel, h, owner))
        elif not public:
            bad.append("%s includes %s, private to %s/" % (rel, h, owner))
        edges.setdefault(top, set()).add(owner)

# a loop between folders (only possible through the checks above failing,
# but said on its own so a new layer order cannot hide one)
def cycle(n, seen, stack):
    for m in edges.get(n, ()):
        if m in stack:
            return stack[stack.index(m):] + [m]
        if m not in seen:
            seen.add(m)
            c = cycle(m, seen, stack + [m])
            if c:
                return c
    return None

for top in LAYERS:
    c = cycle(top, {top}, [top])
    if c:
        bad.append("include loop between folders: " + " -> ".join(c))
        break

if bad:
    print("FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("ok: %d files in %d folders keep to the layers %s" % (len(files), len(LAYERS), " < ".join(LAYERS)))
