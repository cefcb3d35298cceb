"""A small grpcio Library server for ferry's REST -> gRPC transcoding tests.

Usage: library_server.py --proto-dir DIR --out-dir DIR
Compiles DIR/library.proto with grpc_tools.protoc (Python modules and, for the test, the
descriptor set OUT/library.pb with --include_imports), serves on 127.0.0.1:0 and prints
`PORT <n>` once it is listening.

Behaviour the tests rely on:
- GetBook: NOT_FOUND when the name contains "missing"; else a Book echoing the request.
- DeleteBook: ALREADY_EXISTS for id 409.
- WatchBooks: sends Book "first", then waits until ListBooks is called for the same shelf with
  page_size -1 (the test's explicit "go on" signal), sends Book "second", then ends OK — or
  UNAVAILABLE "shelf closed" when the shelf is "fail".
"""

import argparse
import os
import sys
import threading
from concurrent import futures

import grpc
from grpc_tools import protoc


def compile_protos(proto_dir, out_dir):
    import grpc_tools

    wkt = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    files = ["library.proto", "google/api/annotations.proto", "google/api/http.proto"]
    rc = protoc.main(
        [
            "protoc",
            f"-I{proto_dir}",
            f"-I{wkt}",
            f"--python_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            "--include_imports",
            f"--descriptor_set_out={os.path.join(out_dir, 'library.pb')}",
        ]
        + files
    )
    if rc != 0:
        sys.exit(f"protoc failed with {rc}")
    sys.path.insert(0, out_dir)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    compile_protos(args.proto_dir, args.out_dir)

    import library_pb2 as pb
    import library_pb2_grpc as pb_grpc

    gates = {}
    gates_lock = threading.Lock()

    def gate(shelf):
        with gates_lock:
            return gates.setdefault(shelf, threading.Event())

    class Library(pb_grpc.LibraryServicer):
        def GetBook(self, request, context):
            if "missing" in request.name:
                context.abort(grpc.StatusCode.NOT_FOUND, f"no book {request.name}")
            book = pb.Book(id=request.book_id, title=f"name={request.name}", genre=pb.FICTION)
            book.published.FromJsonString("2024-05-06T07:08:09Z")
            book.pages = 2**64 - 1
            return book

        def ListBooks(self, request, context):
            if request.page_size == -1:
                gate(request.shelf).set()
                return pb.ListBooksResponse(next_page_token="released")
            books = [
                pb.Book(
                    title=f"{request.shelf}:{tag}",
                    genre=request.genre,
                    tags=[request.filter.author],
                    id=request.count,
                )
                for tag in request.tags
            ]
            return pb.ListBooksResponse(books=books, next_page_token=str(request.page_size))

        def CreateBook(self, request, context):
            book = pb.Book()
            book.CopyFrom(request.book)
            book.shelf_name = request.shelf
            return book

        def UpdateBook(self, request, context):
            return request

        def PatchBook(self, request, context):
            book = pb.Book()
            book.CopyFrom(request)
            book.title = "patched " + request.title
            return book

        def DeleteBook(self, request, context):
            if request.id == 409:
                context.abort(grpc.StatusCode.ALREADY_EXISTS, "book 409 is back")
            return pb.DeleteBookResponse()

        def ArchiveBook(self, request, context):
            return pb.Book(id=request.id, title=f"archived {request.id}")

        def CountBooks(self, request, context):
            return pb.ListBooksResponse(next_page_token=request.shelf)

        def WatchBooks(self, request, context):
            yield pb.Book(title="first", id=1)
            if not gate(request.shelf).wait(timeout=60):
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "never released")
            yield pb.Book(title="second", id=2)
            if request.shelf == "fail":
                context.abort(grpc.StatusCode.UNAVAILABLE, "shelf closed")

        def ImportBooks(self, request_iterator, context):
            return pb.ListBooksResponse(books=list(request_iterator))

        def Files(self, request, context):
            return pb.Book(title=request.name)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    pb_grpc.add_LibraryServicer_to_server(Library(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"PORT {port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
