"""Phase kinds: the values of ``pp_kind`` in record/include/phaseprof.h.

They are stored in the database: append, never renumber.
"""

KIND = {
    "span": 0,
    "process_start": 1,
    "library_load": 2,
    "runtime_init": 3,
    "op_registration": 4,
    "graph_build": 5,
    "shape_inference": 6,
    "session_create": 7,
    "variable_create": 8,
    "variable_init": 9,
    "weight_load": 10,
    "memory_alloc": 11,
    "gradient_build": 12,
    "optimizer_setup": 13,
    "compile": 14,
    "first_step": 15,
    "step": 16,
    "data_transfer": 17,
    "device_init": 18,
    "retrace": 19,
    "session_close": 20,
    "op": 21,
    "import": 22,
    "model_build": 23,
    "forward": 24,
    "backward": 25,
    "optimizer_step": 26,
    "data_wait": 27,
    "comm": 28,
    "comm_init": 29,
    "data_fetch": 30,
    "data_collate": 31,
}

NAME = {v: k for k, v in KIND.items()}

SPAN = 0
PROCESS_START = 1
LIBRARY_LOAD = 2
RUNTIME_INIT = 3
WEIGHT_LOAD = 10
OPTIMIZER_SETUP = 13
COMPILE = 14
FIRST_STEP = 15
STEP = 16
DATA_TRANSFER = 17
IMPORT = 22
MODEL_BUILD = 23
FORWARD = 24
BACKWARD = 25
OPTIMIZER_STEP = 26
DATA_WAIT = 27
COMM = 28
COMM_INIT = 29
DATA_FETCH = 30
DATA_COLLATE = 31


def kind_value(kind):
    """An int kind from a name ("compile") or an int; ValueError otherwise."""
    if isinstance(kind, int) and not isinstance(kind, bool):
        if kind in NAME:
            return kind
        raise ValueError("unknown phase kind %d" % kind)
    try:
        return KIND[kind]
    except (KeyError, TypeError):
        raise ValueError("unknown phase kind %r (one of: %s)" % (kind, ", ".join(KIND))) from None
