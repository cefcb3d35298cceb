"""A TF Serving gRPC caller (grpcio stubs from tfserving.proto's field numbers, no
tensorflow) of the model "echo" behind ferry. Prints one JSON object: each case's outputs
(decoded from tensor_content or the typed *_val fields, floats as their bit patterns) or its
gRPC status code and message.
Usage: python tf_caller.py FERRY_HOST:PORT"""

import json
import struct
import sys

import grpc

import tfproto

pb, pb_grpc = tfproto.load()

WIDTH = {pb.DT_FLOAT: ("f", 4), pb.DT_DOUBLE: ("d", 8), pb.DT_INT64: ("q", 8),
         pb.DT_HALF: ("H", 2), pb.DT_BOOL: ("?", 1), pb.DT_INT32: ("i", 4)}


def shape_proto(shape):
    return pb.TensorShapeProto(dim=[pb.TensorShapeProto.Dim(size=d) for d in shape])


def decode(t):
    shape = [d.size for d in t.tensor_shape.dim]
    out = {"dtype": pb.DataType.Name(t.dtype), "shape": shape}
    if t.dtype == pb.DT_STRING:
        out["values"] = [s.decode("utf-8", "replace") for s in t.string_val]
        return out
    if t.tensor_content:
        code, size = WIDTH[t.dtype]
        n = len(t.tensor_content) // size
        values = list(struct.unpack(f"<{n}{code}", t.tensor_content))
        out["form"] = "tensor_content"
    else:
        values = list(t.float_val or t.double_val or t.int_val or t.int64_val or t.bool_val
                      or t.half_val)
        out["form"] = "values"
    if t.dtype == pb.DT_FLOAT:
        values = [struct.unpack("<I", struct.pack("<f", v))[0] for v in values]
    out["values"] = values
    return out


def x_tensor(values, shape, packed):
    t = pb.TensorProto(dtype=pb.DT_FLOAT, tensor_shape=shape_proto(shape))
    if packed:
        t.tensor_content = struct.pack(f"<{len(values)}f", *values)
    else:
        t.float_val.extend(values)
    return t


def strings(values):
    t = pb.TensorProto(dtype=pb.DT_STRING, tensor_shape=shape_proto([len(values)]))
    t.string_val.extend(v.encode() for v in values)
    return t


def call(fn):
    try:
        return fn()
    except grpc.RpcError as e:
        return {"code": e.code().name, "message": e.details() or ""}


def main():
    channel = grpc.insecure_channel(sys.argv[1])
    stub = pb_grpc.PredictionServiceStub(channel)
    model = sys.argv[2] if len(sys.argv) > 2 else "echo"
    x = [1.5, -2.25, 0.1, 3.4028234663852886e38]

    def predict(inputs, output_filter=(), name=model, version=None):
        req = pb.PredictRequest(inputs=inputs, output_filter=list(output_filter))
        req.model_spec.name = name
        if version is not None:
            req.model_spec.version.value = version
        resp = stub.Predict(req, timeout=30)
        spec = resp.model_spec
        return {
            "outputs": {k: decode(v) for k, v in resp.outputs.items()},
            "model_spec": {"name": spec.name, "signature_name": spec.signature_name,
                           "version": spec.version.value if spec.HasField("version") else None},
        }

    def metadata(name=model):
        req = pb.GetModelMetadataRequest(metadata_field=["signature_def"])
        req.model_spec.name = name
        resp = stub.GetModelMetadata(req, timeout=30)
        defs = pb.SignatureDefMap()
        resp.metadata["signature_def"].Unpack(defs)
        sig = defs.signature_def["serving_default"]
        tensors = lambda m: {k: {"dtype": pb.DataType.Name(v.dtype),
                                 "shape": [d.size for d in v.tensor_shape.dim]}
                             for k, v in m.items()}
        return {"type_url": resp.metadata["signature_def"].type_url,
                "name": resp.model_spec.name,
                "inputs": tensors(sig.inputs), "outputs": tensors(sig.outputs)}

    half = pb.TensorProto(dtype=pb.DT_HALF, tensor_shape=shape_proto([3]))
    half.half_val.extend([0x3C00, 0xC000, 0x7BFF])  # 1.0, -2.0, 65504
    double = pb.TensorProto(dtype=pb.DT_DOUBLE, tensor_shape=shape_proto([2, 2]))
    double.double_val.extend([1.0, 2.0, 3.0, 4.0])
    out = {
        "packed": call(lambda: predict({"x": x_tensor(x, [2, 2], True),
                                        "name": strings(["a", "b\u00e9"])})),
        "values": call(lambda: predict({"x": x_tensor(x, [2, 2], False),
                                        "name": strings(["a", "b\u00e9"])}, ["x"])),
        "fp16": call(lambda: predict({"x": x_tensor(x, [2, 2], True), "h": half})),
        "metadata": call(metadata),
        "unknown_model": call(lambda: predict({"x": x_tensor(x, [2, 2], True),
                                               "name": strings(["a", "b"])}, name="nope")),
        "unknown_model_metadata": call(lambda: metadata("nope")),
        "wrong_dtype": call(lambda: predict({"x": double, "name": strings(["a", "b"])})),
        "raise": call(lambda: predict({"raise": x_tensor(x, [4], True)})),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
