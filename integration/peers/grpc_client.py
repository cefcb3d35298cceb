"""A real grpcio client for ferry's end-to-end tests.

Compiles the test proto with grpcio-tools at run time, calls ferry.test.v1.Echo through the
given target (plaintext, or mutual TLS with --ca/--cert/--key), and prints one JSON object
with what came back. Exits non-zero on any RPC error so the calling Rust test fails with
grpcio's own message.

With --unary-calls N it instead makes N unary calls one after another and reports each one's
status code, details and metadata, errors included: how a test sees what grpcio makes of a
refusal (a rate limit's RESOURCE_EXHAUSTED, say).
"""

import argparse
import importlib
import json
import sys
import tempfile

import grpc
from grpc_tools import protoc


def compile_protos(proto_dir, out_dir):
    rc = protoc.main([
        "grpc_tools.protoc",
        f"-I{proto_dir}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"{proto_dir}/echo.proto",
    ])
    if rc != 0:
        raise SystemExit(f"protoc failed with {rc}")
    sys.path.insert(0, out_dir)
    return importlib.import_module("echo_pb2"), importlib.import_module("echo_pb2_grpc")


def open_channel(args):
    if not args.ca:
        return grpc.insecure_channel(args.target)

    def read(path):
        with open(path, "rb") as f:
            return f.read()

    creds = grpc.ssl_channel_credentials(
        root_certificates=read(args.ca),
        private_key=read(args.key),
        certificate_chain=read(args.cert),
    )
    options = []
    if args.server_name:
        options.append(("grpc.ssl_target_name_override", args.server_name))
    return grpc.secure_channel(args.target, creds, options=options)


def metadata_dict(md):
    return {k: v if isinstance(v, str) else v.hex() for k, v in (md or ())}


def unary_calls(stub, pb2, args):
    calls = []
    for i in range(args.unary_calls):
        try:
            _, call = stub.Unary.with_call(
                pb2.EchoRequest(message=f"{args.message} {i}"), timeout=args.timeout
            )
            calls.append({
                "code": call.code().name,
                "value": call.code().value[0],
                "details": call.details() or "",
                "initial_metadata": metadata_dict(call.initial_metadata()),
                "trailing_metadata": metadata_dict(call.trailing_metadata()),
            })
        except grpc.RpcError as e:
            calls.append({
                "code": e.code().name,
                "value": e.code().value[0],
                "details": e.details() or "",
                "initial_metadata": metadata_dict(e.initial_metadata()),
                "trailing_metadata": metadata_dict(e.trailing_metadata()),
            })
    return {"grpcio": grpc.__version__, "calls": calls}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--proto-dir", required=True)
    parser.add_argument("--message", default="hello from grpcio")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--unary-calls", type=int, default=0,
                        help="make this many unary calls and report every status, errors too")
    # Mutual TLS: all three files, or none for a plaintext (h2c) channel.
    parser.add_argument("--ca", help="PEM CA bundle that verifies the server")
    parser.add_argument("--cert", help="PEM client certificate chain")
    parser.add_argument("--key", help="PEM client private key")
    parser.add_argument("--server-name", help="name to verify the server certificate against")
    args = parser.parse_args()
    tls = [args.ca, args.cert, args.key]
    if any(tls) and not all(tls):
        raise SystemExit("--ca, --cert and --key go together")

    with tempfile.TemporaryDirectory() as out_dir:
        pb2, pb2_grpc = compile_protos(args.proto_dir, out_dir)
        with open_channel(args) as channel:
            stub = pb2_grpc.EchoStub(channel)
            if args.unary_calls > 0:
                print(json.dumps(unary_calls(stub, pb2, args)))
                return
            reply, call = stub.Unary.with_call(
                pb2.EchoRequest(message=args.message),
                timeout=args.timeout,
                metadata=[("x-request-id", "grpcio-test-1")],
            )
            streamed = [
                r.message
                for r in stub.ServerStream(
                    pb2.EchoRequest(message=args.message, repeat=args.repeat),
                    timeout=args.timeout,
                )
            ]
            result = {
                "grpcio": grpc.__version__,
                "unary": {
                    "message": reply.message,
                    "instance": reply.instance,
                    "code": call.code().name,
                    "initial_metadata": {k: v for k, v in call.initial_metadata()},
                },
                "server_stream": streamed,
            }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
