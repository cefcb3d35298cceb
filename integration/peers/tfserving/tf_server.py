"""A TF Serving gRPC model server for ferry's tests, built from the field numbers (no
tensorflow): `tensorflow.serving.PredictionService` with Predict and GetModelMetadata for one
model, "affine", that computes y = 2x + 1 on the DT_FLOAT input "x" it decodes from the
TensorProto (tensor_content or float_val) and upper-cases the DT_STRING input "name" into
"label". Errors as TF Serving gives them: NOT_FOUND for another model, INVALID_ARGUMENT for
missing or mistyped inputs. Prints "ready <port>" once serving.
Usage: python tf_server.py PORT"""

import struct
import sys
from concurrent import futures

import grpc

import tfproto

pb, pb_grpc = tfproto.load()

SIGNATURE = {
    "inputs": {"x": (pb.DT_FLOAT, [-1, 2]), "name": (pb.DT_STRING, [-1])},
    "outputs": {"y": (pb.DT_FLOAT, [-1, 2]), "label": (pb.DT_STRING, [-1])},
}


def dims(t):
    return [d.size for d in t.tensor_shape.dim]


def count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def floats(t):
    n = count(dims(t))
    if t.tensor_content:
        if len(t.tensor_content) != 4 * n:
            raise ValueError(f"tensor_content of {len(t.tensor_content)} bytes for {n} floats")
        return list(struct.unpack(f"<{n}f", t.tensor_content))
    if len(t.float_val) == 1 and n > 1:
        return [t.float_val[0]] * n
    if len(t.float_val) != n:
        raise ValueError(f"{len(t.float_val)} float_val for {n} elements")
    return list(t.float_val)


def shape_proto(shape):
    return pb.TensorShapeProto(dim=[pb.TensorShapeProto.Dim(size=d) for d in shape])


class Service(pb_grpc.PredictionServiceServicer):
    def _model(self, spec, context):
        if spec.name != "affine":
            context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"Servable not found for request: Latest({spec.name})",
            )

    def Predict(self, request, context):
        self._model(request.model_spec, context)
        x = request.inputs.get("x")
        if x is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "input tensor alias not found: x")
        if x.dtype != pb.DT_FLOAT:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"Expects arg[0] to be float but {pb.DataType.Name(x.dtype)} is provided",
            )
        try:
            values = floats(x)
        except ValueError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        y = pb.TensorProto(dtype=pb.DT_FLOAT, tensor_shape=shape_proto(dims(x)))
        y.float_val.extend(2.0 * v + 1.0 for v in values)
        outputs = {"y": y}
        name = request.inputs.get("name")
        if name is not None:
            label = pb.TensorProto(dtype=pb.DT_STRING, tensor_shape=shape_proto(dims(name)))
            label.string_val.extend(s.upper() for s in name.string_val)
            outputs["label"] = label
        if request.output_filter:
            outputs = {k: v for k, v in outputs.items() if k in request.output_filter}
        spec = pb.ModelSpec(name="affine", signature_name="serving_default")
        spec.version.value = 7
        return pb.PredictResponse(outputs=outputs, model_spec=spec)

    def GetModelMetadata(self, request, context):
        self._model(request.model_spec, context)
        if list(request.metadata_field) != ["signature_def"]:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "only signature_def is served")

        def infos(ts):
            return {
                k: pb.TensorInfo(name=f"{k}:0", dtype=dt, tensor_shape=shape_proto(shape))
                for k, (dt, shape) in ts.items()
            }

        sig = pb.SignatureDef(
            inputs=infos(SIGNATURE["inputs"]),
            outputs=infos(SIGNATURE["outputs"]),
            method_name="tensorflow/serving/predict",
        )
        defs = pb.SignatureDefMap(signature_def={"serving_default": sig})
        resp = pb.GetModelMetadataResponse()
        resp.model_spec.name = "affine"
        resp.model_spec.version.value = 7
        resp.metadata["signature_def"].Pack(defs, type_url_prefix="type.googleapis.com/")
        return resp


def main():
    port = int(sys.argv[1])
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_PredictionServiceServicer_to_server(Service(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print(f"ready {port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
