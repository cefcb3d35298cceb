"""Runs the translation test cases with tritonclient against one server address and prints
one JSON object: case name -> normalised result (outputs, metadata, or an error category), so
a call through ferry can be compared with a direct call.

Usage: triton_cases.py --protocol http|grpc --url HOST:PORT [--binary] [--json-content-type]
       [--skip CASE ...]
"""

import argparse
import json
import sys

import numpy as np

HTTP_CODES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 500: "INTERNAL", 501: "UNIMPLEMENTED",
              503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED", 429: "RESOURCE_EXHAUSTED"}


def category(exc):
    status = exc.status()
    if status is None:
        return {"error": "NO_STATUS", "message": exc.message()}
    status = str(status)
    if status.startswith("StatusCode."):
        return {"error": status[len("StatusCode."):], "message": exc.message()}
    try:
        return {"error": HTTP_CODES.get(int(status), "HTTP_" + status), "message": exc.message()}
    except ValueError:
        return {"error": status, "message": exc.message()}


def tensors():
    return {
        "fp32": ("FP32", np.array([[1.5, -2.25, 3.0], [4.0, 5.5, -6.0]], dtype=np.float32)),
        "int64": ("INT64", np.array([[1, -2, 9007199254740993]], dtype=np.int64)),
        "bool": ("BOOL", np.array([True, False, True], dtype=np.bool_)),
        "fp16": ("FP16", np.array([0.5, -1.0, 65504.0], dtype=np.float16)),
        "bytes": ("BYTES", np.array([b"ab", b"xyz", b""], dtype=np.object_)),
        # Its JSON answer (~400 KB) is far over ferry's 64 KiB chunk, so a REST caller gets it
        # streamed (chunked, no Content-Length).
        "fp32_large": ("FP32", (np.arange(50_000, dtype=np.float32) * np.float32(-0.37))
                       .reshape(1, 50_000)),
    }


def normalise(result, names):
    out = {}
    for n in names:
        arr = result.as_numpy(n)
        if arr is None:
            out[n] = None
            continue
        if arr.dtype == np.object_:
            data = [x.decode() if isinstance(x, bytes) else str(x) for x in arr.flatten()]
        elif arr.dtype == np.float16:
            data = [float(x) for x in arr.flatten()]
        else:
            data = arr.flatten().tolist()
        out[n] = {"shape": list(arr.shape), "data": data}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--protocol", choices=["http", "grpc"], required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--binary", action="store_true", help="HTTP: send and ask for binary tensors")
    ap.add_argument("--json-content-type", action="store_true",
                    help="HTTP: add Content-Type: application/json (KServe needs it, pitfall 1)")
    ap.add_argument("--skip", nargs="*", default=[])
    a = ap.parse_args()
    if a.protocol == "http":
        import tritonclient.http as tc
        client = tc.InferenceServerClient(url=a.url, network_timeout=30.0)
    else:
        import tritonclient.grpc as tc
        client = tc.InferenceServerClient(url=a.url)
    from tritonclient.utils import InferenceServerException

    headers = {"Content-Type": "application/json"} if a.json_content_type and not a.binary else None
    results = {}

    def run(name, fn):
        if name in a.skip:
            return
        try:
            results[name] = fn()
        except InferenceServerException as e:
            results[name] = category(e)

    run("server_live", lambda: {"live": client.is_server_live()})
    run("server_ready", lambda: {"ready": client.is_server_ready()})
    run("model_ready", lambda: {"ready": client.is_model_ready("echo")})

    def metadata():
        m = client.get_model_metadata("echo")
        name = m["name"] if isinstance(m, dict) else m.name
        return {"name": name}

    run("model_metadata", metadata)
    run("unknown_model_metadata", lambda: client.get_model_metadata("nope") and {"found": True})

    def infer(model, items, req_id="req-1"):
        inputs, outputs = [], []
        for name, (dt, arr) in items:
            i = tc.InferInput(name, list(arr.shape), dt)
            if a.protocol == "http":
                i.set_data_from_numpy(arr, binary_data=a.binary or dt == "FP16")
                outputs.append(tc.InferRequestedOutput(name, binary_data=a.binary or dt == "FP16"))
            else:
                i.set_data_from_numpy(arr)
                outputs.append(tc.InferRequestedOutput(name))
            inputs.append(i)
        kwargs = {"headers": headers} if headers else {}
        r = client.infer(model, inputs, outputs=outputs, request_id=req_id, **kwargs)
        return normalise(r, [n for n, _ in items])

    t = tensors()
    for key in ["fp32", "int64", "bool", "fp16", "bytes", "fp32_large"]:
        run("infer_" + key, lambda key=key: infer("echo", [(key, t[key])]))
    run("infer_mixed", lambda: infer("echo", [("a", t["fp32"]), ("b", t["int64"]), ("c", t["bytes"])]))
    run("infer_unknown_model", lambda: infer("nope", [("a", t["fp32"])]))
    run("infer_model_raises", lambda: infer("echo", [("raise", t["fp32"])]))
    json.dump(results, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
