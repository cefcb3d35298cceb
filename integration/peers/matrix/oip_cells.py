"""tritonclient (HTTP in JSON mode, or gRPC) as the Open Inference Protocol caller of the
interop matrix: for each job, the profile's inference, model readiness and the bad-input cases.
Prints {cell: {case: result}} (see cells.py).
Usage: python oip_cells.py JOBS.json http|grpc"""

import json
import sys

from tritonclient.utils import InferenceServerException

import cells

GRPC = sys.argv[2] == "grpc"
if GRPC:
    import tritonclient.grpc as tc
else:
    import tritonclient.http as tc


def error(e):
    return {"error": str(e.status()), "message": e.message()}


def infer(client, profile):
    inputs = []
    for t in profile["inputs"]:
        i = tc.InferInput(t["name"], list(t["shape"]), t["datatype"])
        a = cells.array(t)
        if GRPC:
            i.set_data_from_numpy(a)
        else:
            i.set_data_from_numpy(a, binary_data=False)
        inputs.append(i)
    names = [o["name"] for o in profile["outputs"]]
    if GRPC:
        requested = [tc.InferRequestedOutput(n) for n in names]
    else:
        requested = [tc.InferRequestedOutput(n, binary_data=False) for n in names]
    r = client.infer(profile["model"], inputs, outputs=requested, request_id="matrix-7")
    response = r.get_response(as_json=True) if GRPC else r.get_response()
    outputs = {}
    for n in names:
        a = r.as_numpy(n)
        if a is not None:
            outputs[n] = cells.tensor(a)
    return {"id": response.get("id"), "outputs": outputs}


def job_cases(job):
    client = tc.InferenceServerClient(job["target"])
    p = job["profile"]
    run = lambda f: cells.run(error, f, InferenceServerException)  # noqa: E731
    return {
        "ok": run(lambda: infer(client, p)),
        "ready": run(lambda: {"ready": client.is_model_ready(p["model"])}),
        "wrong_dtype": run(lambda: infer(client, cells.wrong_dtype(p))),
        "missing_input": run(lambda: infer(client, cells.missing_input(p))),
        "unknown_model": run(lambda: infer(client, cells.unknown_model(p))),
    }


print(json.dumps({job["cell"]: job_cases(job) for job in cells.jobs()}))
