"""The TorchServe handler of the torchserve bridging tests (no torch: numpy only).

Models are named `<kind>_<payload>`; the payload (json, raw or npy) says how ferry wrote the
tensors, and the handler answers in the same encoding, so each test proves that numpy reads
what ferry writes and ferry reads what numpy writes:

* `double_<payload>`: INPUT0 (FP32) -> OUTPUT0 = 2 * INPUT0, same shape.
  A first element of 666 makes the handler raise (TorchServe then answers an error).
* `pair_json`: x (FP32 [-1, 3]) and n (INT64 [-1]) -> y = x + 1 (FP32) and count = n * 10
  (INT64), one JSON object keyed by output name.
* `sum_npy`: x and n as above, two npy inputs (REST: multipart parts) -> total (FP32 [-1]) =
  the sum of each row of x plus n.

A REST json request arrives decoded (`{"body": {name: nested}}`), a REST raw/npy one with a
single input as `{"body": bytes}`, several inputs as multipart parts `{name: bytes}`, and a
gRPC request as its `input` map `{name: bytes}`. Under TorchServe's kserve envelope
(`service_envelope=kserve`, KServe V1 `:predict`) each row of `instances` arrives as one item:
`{name: nested}` per row, or with one input the row's value itself; the json models serve it.
"""

import io
import json

import numpy as np


def _input(row, name, payload):
    if not isinstance(row, dict):
        # A V1 row of a one-input model: the value itself.
        value = row
    elif name in row:
        value = row[name]
    else:
        value = row.get("body")
        if isinstance(value, dict):
            value = value[name]
    if payload == "json":
        if isinstance(value, (bytes, bytearray)):
            value = json.loads(value)
        return np.asarray(value)
    if payload == "npy":
        return np.load(io.BytesIO(bytes(value)), allow_pickle=False)
    return np.frombuffer(bytes(value), dtype="<f4")


def _encode(arr, payload):
    if payload == "npy":
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        return buf.getvalue()
    if payload == "raw":
        return arr.astype("<f4").tobytes()
    return arr.tolist()


def _one(row, model):
    kind, payload = model.rsplit("_", 1)
    if kind == "double":
        x = _input(row, "INPUT0", payload).astype(np.float32)
        if x.size and x.flat[0] == 666:
            raise ValueError("the test's poison value")
        out = x * np.float32(2)
        if payload == "json":
            return {"OUTPUT0": out.tolist()}
        return _encode(out, payload)
    if kind == "pair":
        x = _input(row, "x", payload).astype(np.float32)
        n = _input(row, "n", payload).astype(np.int64)
        return {"y": (x + np.float32(1)).tolist(), "count": (n * 10).tolist()}
    if kind == "sum":
        x = _input(row, "x", payload).astype(np.float32)
        n = _input(row, "n", payload).astype(np.int64)
        return _encode(x.sum(axis=1, dtype=np.float32) + n.astype(np.float32), payload)
    raise ValueError(f"no such test model kind {kind!r}")


def handle(data, context):
    """TorchServe's entry point: one answer per request of the batch."""
    if data is None:
        return None
    return [_one(row, context.model_name) for row in data]
