"""Open Inference Protocol callers (tritonclient HTTP and gRPC) of the TF Serving gRPC model
"affine" behind ferry. Prints one JSON object per protocol: the tensors of each case (floats
as their bit patterns) or the error's status and message.
Usage: python oip_caller.py FERRY_HOST:PORT"""

import json
import sys

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException


def bits(a):
    return a.astype(np.float32).view(np.uint32).reshape(-1).tolist()


def tensors(result, names):
    out = {}
    for n in names:
        a = result.as_numpy(n)
        if a is None:
            continue
        values = bits(a) if a.dtype == np.float32 else [v.decode() for v in a.reshape(-1)]
        out[n] = {"dtype": str(a.dtype), "shape": list(a.shape), "values": values}
    return out


def error(fn):
    try:
        return {"ok": fn()}
    except InferenceServerException as e:
        return {"status": str(e.status()), "message": e.message()}


def cases(client, mod):
    x = np.array([[1.5, -2.25], [0.1, 3.0e30]], dtype=np.float32)
    names = np.array([b"a", "b\u00e9".encode()], dtype=np.object_)

    def inputs(x_arr, dtype="FP32"):
        a = mod.InferInput("x", list(x_arr.shape), dtype)
        a.set_data_from_numpy(x_arr)
        b = mod.InferInput("name", [2], "BYTES")
        b.set_data_from_numpy(names)
        return [a, b]

    def infer(model="affine", outputs=None, x_arr=x, dtype="FP32"):
        wanted = [mod.InferRequestedOutput(n) for n in outputs] if outputs else None
        r = client.infer(model, inputs(x_arr, dtype), outputs=wanted, request_id="req-7")
        return {"tensors": tensors(r, ["y", "label"]), "id": r.get_response(as_json=True)["id"]
                if mod is grpcclient else r.get_response()["id"]}

    def metadata():
        m = client.get_model_metadata("affine", as_json=True) if mod is grpcclient \
            else client.get_model_metadata("affine")
        ts = lambda l: [{"name": t["name"], "datatype": t["datatype"],
                         "shape": [int(d) for d in t["shape"]]} for t in l]
        return {"name": m["name"], "platform": m["platform"],
                "inputs": ts(m["inputs"]), "outputs": ts(m["outputs"])}

    return {
        "x_bits": bits(x),
        "infer": error(infer),
        "infer_one": error(lambda: infer(outputs=["y"])),
        "metadata": error(metadata),
        "ready": error(lambda: client.is_model_ready("affine")),
        "unknown_model": error(lambda: infer(model="nope")),
        "wrong_dtype": error(lambda: infer(x_arr=x.astype(np.int32), dtype="INT32")),
    }


def main():
    target = sys.argv[1]
    out = {
        "http": cases(httpclient.InferenceServerClient(target), httpclient),
        "grpc": cases(grpcclient.InferenceServerClient(target), grpcclient),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
