"""A grpcio Open Inference Protocol v2 server for ferry's tracing tests: the model server behind
a REST -> gRPC translating sidecar, reporting the trace context each call arrived with.

Usage: oip_server.py --proto-dir DIR --out-dir DIR
Compiles DIR/inference.proto (the repository's `proto/`) with grpc_tools.protoc into OUT,
serves on 127.0.0.1:0 and prints `PORT <n>` once it is listening. Then, for every call, one
line `CALL {"method": ..., "metadata": {...}}` (JSON, invocation metadata by lower-case key)
before it answers, so the test knows what the server saw by the time its caller has an answer.

ModelInfer echoes every input back as an output of the same name, datatype, shape and contents;
a model named "missing" answers NOT_FOUND. The readiness calls answer true.
"""

import argparse
import json
import sys
from concurrent import futures

import grpc
from grpc_tools import protoc


def compile_protos(proto_dir, out_dir):
    rc = protoc.main(
        [
            "protoc",
            f"-I{proto_dir}",
            f"--python_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            "inference.proto",
        ]
    )
    if rc != 0:
        sys.exit(f"protoc failed with {rc}")
    sys.path.insert(0, out_dir)


def report(method, context):
    metadata = {}
    for key, value in context.invocation_metadata():
        metadata[key] = value if isinstance(value, str) else value.hex()
    line = json.dumps({"method": method, "metadata": metadata})
    print(f"CALL {line}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    compile_protos(args.proto_dir, args.out_dir)

    import inference_pb2 as pb
    import inference_pb2_grpc as pb_grpc

    class Inference(pb_grpc.GRPCInferenceServiceServicer):
        def ServerLive(self, request, context):
            report("ServerLive", context)
            return pb.ServerLiveResponse(live=True)

        def ServerReady(self, request, context):
            report("ServerReady", context)
            return pb.ServerReadyResponse(ready=True)

        def ModelReady(self, request, context):
            report("ModelReady", context)
            return pb.ModelReadyResponse(ready=True)

        def ModelInfer(self, request, context):
            report("ModelInfer", context)
            if request.model_name == "missing":
                context.abort(grpc.StatusCode.NOT_FOUND, "no model named missing")
            response = pb.ModelInferResponse(
                model_name=request.model_name,
                model_version=request.model_version,
                id=request.id,
            )
            for tensor in request.inputs:
                out = response.outputs.add()
                out.name = tensor.name
                out.datatype = tensor.datatype
                out.shape.extend(tensor.shape)
                out.contents.CopyFrom(tensor.contents)
            response.raw_output_contents.extend(request.raw_input_contents)
            return response

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    pb_grpc.add_GRPCInferenceServiceServicer_to_server(Inference(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"PORT {port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
