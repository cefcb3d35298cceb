"""tritonclient (HTTP in JSON mode, HTTP with the binary tensor extension for inputs and
outputs, or gRPC) as an Open Inference Protocol caller of the TorchServe models that ferry
bridges (`handler.py`). Prints one JSON object: each case's answer (float tensors as their bit
patterns, compared exactly) or error.
Usage: python oip_caller.py http|http-binary|grpc HOST:PORT [CASE,CASE...]  (default: every case)"""

import json
import sys

import numpy as np
from tritonclient.utils import InferenceServerException

X = np.array([[1.5, -2.0, 3.25], [0.1, 1e-8, -1e30]], dtype=np.float32)
N = np.array([7, -(2**40)], dtype=np.int64)
ONLY = set(sys.argv[3].split(",")) if len(sys.argv) > 3 else None


def values(a):
    if a.dtype == np.float32:
        return a.view(np.uint32).flatten().tolist()
    return a.flatten().tolist()


# tritonclient's default: binary_data=True for inputs and outputs.
BINARY = sys.argv[1] == "http-binary"


def infer(mod, c, grpc, model, tensors, outputs):
    inputs = []
    for name, arr, dt in tensors:
        i = mod.InferInput(name, list(arr.shape), dt)
        if grpc:
            i.set_data_from_numpy(arr)
        else:
            i.set_data_from_numpy(arr, binary_data=BINARY)
        inputs.append(i)
    if grpc:
        requested = [mod.InferRequestedOutput(n) for n in outputs]
    else:
        requested = [mod.InferRequestedOutput(n, binary_data=BINARY) for n in outputs]
    r = c.infer(model, inputs, outputs=requested, request_id="req-7")
    response = r.get_response(as_json=True) if grpc else r.get_response()
    got = {"id": response["id"]}
    if BINARY:
        # Which outputs came back as binary sections.
        got["binary"] = sorted(o["name"] for o in response["outputs"]
                               if "binary_data_size" in o.get("parameters", {}))
    for n in outputs:
        a = r.as_numpy(n)
        got[n] = {"dtype": str(a.dtype), "shape": list(a.shape), "values": values(a)}
    return got


def metadata(c, grpc, model):
    m = c.get_model_metadata(model, as_json=True) if grpc else c.get_model_metadata(model)
    # proto3 JSON prints int64 shapes as strings (protocol pitfall 9).
    for t in m.get("inputs", []) + m.get("outputs", []):
        t["shape"] = [int(d) for d in t["shape"]]
    return {k: m.get(k) for k in ("name", "platform", "inputs", "outputs")}


def case(out, name, fn):
    if ONLY is not None and name not in ONLY:
        return
    try:
        out[name] = fn()
    except InferenceServerException as e:
        out[name] = {"status": str(e.status()), "message": e.message()}


def main():
    grpc = sys.argv[1] == "grpc"
    if grpc:
        import tritonclient.grpc as mod
    else:
        import tritonclient.http as mod
    c = mod.InferenceServerClient(sys.argv[2])
    out = {"x_bits": values(X), "n": N.tolist()}
    case(out, "live", lambda: c.is_server_live())
    case(out, "ready", lambda: c.is_model_ready("double_json"))
    case(out, "metadata", lambda: metadata(c, grpc, "pair_json"))
    for p in ("json", "raw", "npy"):
        case(out, f"double_{p}",
             lambda p=p: infer(mod, c, grpc, f"double_{p}", [("INPUT0", X, "FP32")], ["OUTPUT0"]))
    case(out, "pair", lambda: infer(mod, c, grpc, "pair_json",
                                    [("x", X, "FP32"), ("n", N, "INT64")], ["y", "count"]))
    case(out, "pair_one_output", lambda: infer(mod, c, grpc, "pair_json",
                                               [("x", X, "FP32"), ("n", N, "INT64")], ["count"]))
    case(out, "sum", lambda: infer(mod, c, grpc, "sum_npy",
                                   [("x", X, "FP32"), ("n", N, "INT64")], ["total"]))
    poison = X.copy()
    poison[0, 0] = 666
    case(out, "handler_fails", lambda: infer(mod, c, grpc, "double_json",
                                             [("INPUT0", poison, "FP32")], ["OUTPUT0"]))
    case(out, "wrong_dtype", lambda: infer(mod, c, grpc, "double_json",
                                           [("INPUT0", X.astype(np.float64), "FP64")], ["OUTPUT0"]))
    case(out, "missing_input", lambda: infer(mod, c, grpc, "pair_json", [("x", X, "FP32")], ["y"]))
    case(out, "unknown_model", lambda: infer(mod, c, grpc, "nope", [("INPUT0", X, "FP32")],
                                             ["OUTPUT0"]))
    print(json.dumps(out))


main()
