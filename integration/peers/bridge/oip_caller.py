"""tritonclient (HTTP in JSON mode, HTTP with the binary tensor extension for inputs and
outputs, or gRPC) as an Open Inference Protocol caller of models that ferry bridges to KServe
V1. Prints one JSON object: each case's answer or error (status as HTTP numbers, or gRPC
status names).
Usage: python oip_caller.py HOST:PORT [http|http-binary|grpc]"""

import json
import sys

import ml_dtypes
import numpy as np
import tritonclient.grpc as grpc
import tritonclient.http as http
from tritonclient.utils import InferenceServerException

GRPC = len(sys.argv) > 2 and sys.argv[2] == "grpc"
# tritonclient's default: binary_data=True for inputs and outputs.
BINARY = len(sys.argv) > 2 and sys.argv[2] == "http-binary"
client_lib = grpc if GRPC else http


def infer(c, model, tensors, outputs):
    inputs = []
    for name, arr, dt in tensors:
        i = client_lib.InferInput(name, list(arr.shape), dt)
        if GRPC:
            i.set_data_from_numpy(arr)
        else:
            i.set_data_from_numpy(arr, binary_data=BINARY)
        inputs.append(i)
    if GRPC:
        requested = [grpc.InferRequestedOutput(n) for n in outputs]
    else:
        requested = [http.InferRequestedOutput(n, binary_data=BINARY) for n in outputs]
    r = c.infer(model, inputs, outputs=requested, request_id="req-1")
    response = r.get_response(as_json=True) if GRPC else r.get_response()
    got = {"id": response.get("id")}
    if BINARY:
        # Which outputs came back as binary sections.
        got["binary"] = sorted(o["name"] for o in response["outputs"]
                               if "binary_data_size" in o.get("parameters", {}))
    for n in outputs:
        a = r.as_numpy(n)
        if a.dtype == np.float32:
            values = a.view(np.uint32).flatten().tolist()  # bits: compared exactly
        elif a.dtype in (np.float16, ml_dtypes.bfloat16):
            values = a.view(np.uint16).flatten().tolist()
        elif a.dtype == np.object_:
            values = [v.decode() if isinstance(v, bytes) else v for v in a.flatten().tolist()]
        else:
            values = a.flatten().tolist()
        got[n] = {"dtype": str(a.dtype), "shape": list(a.shape), "values": values}
    return got


def metadata(c, model):
    if not GRPC:
        return c.get_model_metadata(model)
    m = c.get_model_metadata(model, as_json=True)
    # The gRPC JSON form spells shapes as strings (int64); the HTTP form as numbers.
    for side in ("inputs", "outputs"):
        for t in m.get(side, []):
            t["shape"] = [int(d) for d in t.get("shape", [])]
    return m


def case(out, name, fn):
    try:
        out[name] = fn()
    except InferenceServerException as e:
        out[name] = {"status": str(e.status()), "message": e.message()}


def main():
    c = client_lib.InferenceServerClient(sys.argv[1])
    x = np.array([[1.5, -2.0, 3.25], [0.1, 0.2, -0.3], [1e-8, -1e30, -0.0]], dtype=np.float32)
    tag = np.array([b"alpha", b"beta", "gamma \u00e9".encode()], dtype=np.object_)
    m = np.array([[1, 2, 3], [4, 5, -(2**62)]], dtype=np.int64)
    out = {"x_bits": x.view(np.uint32).flatten().tolist()}
    case(out, "ready", lambda: c.is_model_ready("scorer"))
    case(out, "metadata", lambda: metadata(c, "scorer"))
    case(out, "scorer", lambda: infer(c, "scorer", [("x", x, "FP32"), ("tag", tag, "BYTES")],
                                      ["doubled", "positives", "label"]))
    case(out, "scorer_one_output", lambda: infer(c, "scorer", [("x", x, "FP32"), ("tag", tag, "BYTES")],
                                                 ["label"]))
    case(out, "matrix", lambda: infer(c, "matrix", [("m", m, "INT64")], ["mt"]))
    h = np.array([[0.1, -2.5, 16376, 6.1e-5], [1 / 3, -0.0, 0.5, 1e-3]], dtype=np.float16)
    out["halves_expected"] = (h * np.float16(2)).view(np.uint16).flatten().tolist()
    case(out, "halves", lambda: infer(c, "halves", [("h", h, "FP16")], ["h2"]))
    if GRPC or BINARY:
        # BF16 has no JSON form: tritonclient sends it binary only.
        b = np.array([[0.1, -2.5, 3e38, 1e-30], [1 / 3, -0.0, 7, 1e-3]], dtype=ml_dtypes.bfloat16)
        out["bhalves_expected"] = (b * ml_dtypes.bfloat16(2)).view(np.uint16).flatten().tolist()
        case(out, "bhalves", lambda: infer(c, "bhalves", [("b", b, "BF16")], ["b2"]))
    case(out, "wrong_dtype", lambda: infer(c, "scorer", [("x", x.astype(np.float64), "FP64"),
                                                         ("tag", tag, "BYTES")], ["label"]))
    case(out, "missing_input", lambda: infer(c, "scorer", [("x", x, "FP32")], ["label"]))
    case(out, "unknown_model", lambda: infer(c, "nope", [("x", x, "FP32"), ("tag", tag, "BYTES")],
                                             ["label"]))
    case(out, "unknown_model_ready", lambda: c.is_model_ready("nope"))
    print(json.dumps(out))


main()
