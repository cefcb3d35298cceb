"""A KServe V1 / TF Serving REST caller (python requests) of a v2 server behind ferry, and the
same tensors sent straight to the v2 server, for comparison. Prints one JSON object: each
case's status and body.
Usage: python v1_caller.py FERRY_HOST:PORT V2_HOST:PORT"""

import json
import sys

import requests


def call(method, url, body=None):
    r = requests.request(method, url, json=body, timeout=30)
    try:
        parsed = r.json()
    except ValueError:
        parsed = r.text
    return {"status": r.status_code, "body": parsed}


def main():
    ferry, v2 = sys.argv[1], sys.argv[2]
    predict = f"http://{ferry}/v1/models/echo:predict"
    rows = [
        {"x": [1.5, -2.25], "flag": True, "name": "a"},
        {"x": [0.1, 3.4028234663852886e38], "flag": False, "name": "b\u00e9"},
        {"x": [-0.0, 7], "flag": True, "name": ""},
    ]
    direct = {
        "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [3, 2], "data": [r["x"] for r in rows]},
            {"name": "flag", "datatype": "BOOL", "shape": [3], "data": [r["flag"] for r in rows]},
            {"name": "name", "datatype": "BYTES", "shape": [3], "data": [r["name"] for r in rows]},
        ]
    }
    out = {
        "direct": call("POST", f"http://{v2}/v2/models/echo/infer", direct),
        "row": call("POST", predict, {"instances": rows}),
        "columnar": call(
            "POST",
            predict,
            {"inputs": {k: [r[k] for r in rows] for k in ("x", "flag", "name")}},
        ),
        "status": call("GET", f"http://{ferry}/v1/models/echo"),
        "ragged": call("POST", predict, {"instances": [{"x": [1, 2], "flag": True, "name": "a"},
                                                       {"x": [1], "flag": True, "name": "b"}]}),
        "wrong_dtype": call("POST", predict, {"instances": [{"x": ["1", 2], "flag": True, "name": "a"}]}),
        "missing_input": call("POST", predict, {"instances": [{"x": [1, 2], "flag": True}]}),
        "unknown_model": call("POST", f"http://{ferry}/v1/models/nope:predict",
                              {"instances": rows}),
        "unknown_model_status": call("GET", f"http://{ferry}/v1/models/nope"),
    }
    print(json.dumps(out))


main()
