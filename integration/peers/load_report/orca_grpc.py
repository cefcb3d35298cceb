"""A grpcio server that reports its load the way gRPC servers do: the serialized
`xds.data.orca.v3.OrcaLoadReport` in the `endpoint-load-metrics-bin` trailer; and a grpcio
client that calls through ferry and counts who answered. For ferry's load-report tests.

The report is written by hand from the proto's field numbers (no generated code):
`named_metrics` is field 8, a `map<string, double>`, so each entry is a length-delimited
message of key (field 1, string) and value (field 2, double). grpcio base64-encodes `-bin`
metadata on the wire.

    orca_grpc.py serve --name a --kv 0.9     # prints PORT <n>, serves /load.Test/Call
    orca_grpc.py call --target HOST:PORT --n 300   # prints {"a": 12, "b": 288}
"""

import argparse
import json
import struct
import sys
import time
from concurrent import futures

import grpc

METHOD = "/load.Test/Call"


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, wire_type, payload):
    return varint((number << 3) | wire_type) + payload


def orca_report(named):
    out = b""
    for key, value in named.items():
        k = key.encode()
        entry = field(1, 2, varint(len(k)) + k) + field(2, 1, struct.pack("<d", value))
        out += field(8, 2, varint(len(entry)) + entry)
    return out


def serve(args):
    report = orca_report({"kv_cache_usage_perc": args.kv})

    def call(request, context):
        # A model server's answer takes milliseconds (see orca_http.py).
        time.sleep(0.005)
        context.set_trailing_metadata((("endpoint-load-metrics-bin", report),))
        return args.name.encode()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    handler = grpc.method_handlers_generic_handler(
        "load.Test", {"Call": grpc.unary_unary_rpc_method_handler(call)}
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"PORT {port}", flush=True)
    server.wait_for_termination()


def call(args):
    counts = {}
    with grpc.insecure_channel(args.target) as channel:
        stub = channel.unary_unary(METHOD)
        for _ in range(args.n):
            name = stub(b"x", timeout=10).decode()
            counts[name] = counts.get(name, 0) + 1
            if args.interval:
                time.sleep(args.interval)
    print(json.dumps(counts))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--name", required=True)
    s.add_argument("--kv", type=float, required=True)
    c = sub.add_parser("call")
    c.add_argument("--target", required=True)
    c.add_argument("--n", type=int, required=True)
    c.add_argument("--interval", type=float, default=0.0)
    args = p.parse_args()
    serve(args) if args.mode == "serve" else call(args)


if __name__ == "__main__":
    sys.exit(main())
