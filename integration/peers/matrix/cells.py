"""What the matrix callers share (numpy where the caller's venv has it): the jobs file, the
normalised tensor form every caller prints, and the bad-input variants of a profile.

A job is {"cell": name, "target": "HOST:PORT", "profile": {"model", "inputs": [{"name",
"datatype", "shape", "data" (flat)}], "outputs": [{"name", "datatype"}]}} (V1 jobs add
"form": "row" | "columnar"). A tensor prints as {"datatype", "shape", "values"}: FP32 values as
their bit patterns (compared exactly), BYTES as UTF-8 strings; an error as {"error": status,
"message": text}, the status as the caller saw it (an HTTP code or a gRPC code name)."""

import copy
import json
import sys

try:
    import numpy as np
except ImportError:  # the grpcio venv of the TF Serving caller, which packs with struct
    np = None

DTYPES = {"FP32": "float32", "FP64": "float64", "INT64": "int64", "INT32": "int32",
          "BOOL": "bool"}
NAMES = {v: k for k, v in DTYPES.items()}


def jobs():
    with open(sys.argv[1], encoding="utf-8") as f:
        return json.load(f)


def array(t):
    """A profile tensor as the numpy array a caller sends."""
    if t["datatype"] == "BYTES":
        return np.array([s.encode() for s in t["data"]], dtype=np.object_).reshape(t["shape"])
    return np.array(t["data"], dtype=DTYPES[t["datatype"]]).reshape(t["shape"])


def tensor(a, datatype=None):
    """The printed form of an answer's tensor (`datatype` when the wire carries none; nested
    lists that do not fit it raise ValueError)."""
    if datatype == "BYTES" or (datatype is None and np.asarray(a).dtype.kind in "OU"):
        a = np.array(a, dtype=object)
        values = [v.decode() if isinstance(v, bytes) else str(v) for v in a.reshape(-1)]
        return {"datatype": "BYTES", "shape": list(a.shape), "values": values}
    a = np.asarray(a) if datatype is None else np.array(a, dtype=DTYPES[datatype])
    name = NAMES.get(a.dtype.name, a.dtype.name)
    values = a.view(np.uint32) if a.dtype == np.float32 else a
    return {"datatype": name, "shape": list(a.shape), "values": values.reshape(-1).tolist()}


def wrong_dtype(profile):
    """The first FP32 input declared (and sent) as FP64."""
    p = copy.deepcopy(profile)
    for t in p["inputs"]:
        if t["datatype"] == "FP32":
            t["datatype"] = "FP64"
            break
    return p


def missing_input(profile):
    p = copy.deepcopy(profile)
    p["inputs"] = p["inputs"][:-1]
    return p


def unknown_model(profile):
    p = copy.deepcopy(profile)
    p["model"] = "nope"
    return p


def run(printed_error, fn, errors):
    """One case's printed result: fn()'s answer, or printed_error() of the error it raised (one
    of `errors`; anything else fails the script, and so the test)."""
    try:
        return fn()
    except errors as e:
        return printed_error(e)
