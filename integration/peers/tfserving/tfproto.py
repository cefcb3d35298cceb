"""Compiles tfserving.proto (next to this file) with grpcio-tools into a scratch directory and
imports the generated modules: the TF Serving messages from their field numbers, no
tensorflow."""

import importlib
import os
import sys
import tempfile

import grpc_tools
from grpc_tools import protoc


def load():
    here = os.path.dirname(os.path.abspath(__file__))
    out = tempfile.mkdtemp(prefix="ferry-tfproto-")
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    rc = protoc.main([
        "grpc_tools.protoc",
        f"-I{here}",
        f"-I{include}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        os.path.join(here, "tfserving.proto"),
    ])
    if rc != 0:
        raise SystemExit(f"protoc failed with {rc}")
    sys.path.insert(0, out)
    return importlib.import_module("tfserving_pb2"), importlib.import_module("tfserving_pb2_grpc")
