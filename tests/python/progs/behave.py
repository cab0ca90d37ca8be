# Prints what the program sees of its interpreter, for a comparison with a
# plain run: the wrapped program must see the same.
import json
import os
import sys

import __main__

out = {
    "path": sys.path,
    "env": dict(os.environ),
    "flags": repr(sys.flags),
    "modules": sorted(sys.modules),
    "main": sorted(k for k in vars(__main__) if k != "out"),
    "profile": repr(sys.getprofile()),
    "trace": repr(sys.gettrace()),
    "argv": sys.argv,
    "custom": [m for m in ("sitecustomize", "usercustomize") if m in sys.modules],
}
print(json.dumps(out, sort_keys=True))
