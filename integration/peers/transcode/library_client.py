"""A plain grpcio client of the Library service, for checking that gRPC callers still reach it
through a transcoding route. Usage: library_client.py --proto-dir DIR --out-dir DIR --target
HOST:PORT NAME; prints the GetBook answer as proto3 JSON."""

import argparse
import json
import sys

import grpc
from google.protobuf import json_format

from library_server import compile_protos


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("name")
    args = ap.parse_args()
    compile_protos(args.proto_dir, args.out_dir)
    import library_pb2 as pb
    import library_pb2_grpc as pb_grpc

    with grpc.insecure_channel(args.target) as channel:
        stub = pb_grpc.LibraryStub(channel)
        try:
            book = stub.GetBook(pb.GetBookRequest(name=args.name), timeout=30)
            print(json_format.MessageToJson(book, indent=None))
        except grpc.RpcError as e:
            print(json.dumps({"code": e.code().name, "message": e.details()}))
    sys.exit(0)


if __name__ == "__main__":
    main()
