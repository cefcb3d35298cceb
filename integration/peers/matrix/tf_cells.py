"""A TF Serving gRPC caller (grpcio stubs from peers/tfserving/tfserving.proto's field numbers,
no tensorflow) of the interop matrix: for each job, `Predict` with the profile's inputs
(`tensor_content`, `string_val` for strings) and the bad-input cases. Prints {cell: {case:
result}} (see cells.py).
Usage: python tf_cells.py JOBS.json"""

import json
import os
import struct
import sys

import grpc

import cells

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tfserving"))
import tfproto  # noqa: E402 - found through the path above

pb, pb_grpc = tfproto.load()

TF = {"FP32": pb.DT_FLOAT, "FP64": pb.DT_DOUBLE, "INT64": pb.DT_INT64, "BYTES": pb.DT_STRING}
V2 = {v: k for k, v in TF.items()}
CODE = {pb.DT_FLOAT: ("f", 4), pb.DT_DOUBLE: ("d", 8), pb.DT_INT64: ("q", 8)}


def tensor_proto(t):
    shape = pb.TensorShapeProto(dim=[pb.TensorShapeProto.Dim(size=d) for d in t["shape"]])
    out = pb.TensorProto(dtype=TF[t["datatype"]], tensor_shape=shape)
    if t["datatype"] == "BYTES":
        out.string_val.extend(s.encode() for s in t["data"])
    else:
        code, _ = CODE[out.dtype]
        out.tensor_content = struct.pack(f"<{len(t['data'])}{code}", *t["data"])
    return out


def decode(t):
    """A TensorProto in the printed form of cells.tensor (FP32 as bit patterns)."""
    shape = [d.size for d in t.tensor_shape.dim]
    datatype = V2.get(t.dtype, pb.DataType.Name(t.dtype))
    if t.dtype == pb.DT_STRING:
        values = [s.decode("utf-8", "replace") for s in t.string_val]
        return {"datatype": "BYTES", "shape": shape, "values": values}
    code, size = CODE[t.dtype]
    if t.tensor_content:
        n = len(t.tensor_content) // size
        values = list(struct.unpack(f"<{n}{code}", t.tensor_content))
    else:
        values = list(t.float_val or t.double_val or t.int64_val)
    if t.dtype == pb.DT_FLOAT:
        values = [struct.unpack("<I", struct.pack("<f", v))[0] for v in values]
    return {"datatype": datatype, "shape": shape, "values": values}


def error(e):
    return {"error": e.code().name, "message": e.details() or ""}


def job_cases(job):
    stub = pb_grpc.PredictionServiceStub(grpc.insecure_channel(job["target"]))

    def predict(p):
        req = pb.PredictRequest(inputs={t["name"]: tensor_proto(t) for t in p["inputs"]},
                                output_filter=[o["name"] for o in p["outputs"]])
        req.model_spec.name = p["model"]
        resp = stub.Predict(req, timeout=30)
        return {"outputs": {k: decode(v) for k, v in sorted(resp.outputs.items())},
                "model": resp.model_spec.name}

    p = job["profile"]
    run = lambda f: cells.run(error, f, grpc.RpcError)  # noqa: E731
    return {
        "ok": run(lambda: predict(p)),
        "wrong_dtype": run(lambda: predict(cells.wrong_dtype(p))),
        "missing_input": run(lambda: predict(cells.missing_input(p))),
        "unknown_model": run(lambda: predict(cells.unknown_model(p))),
    }


print(json.dumps({job["cell"]: job_cases(job) for job in cells.jobs()}))
