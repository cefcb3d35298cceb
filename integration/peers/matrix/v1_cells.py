"""python requests as the KServe V1 (TF Serving REST) caller of the interop matrix: for each
job, `POST /v1/models/{m}:predict` in row (`instances`) or columnar (`inputs`) form, the model
status, and the bad-input cases. Answers are read with the profile's output datatypes (V1
carries none). Prints {cell: {case: result}} (see cells.py).
Usage: python v1_cells.py JOBS.json"""

import copy
import json

import numpy as np
import requests

import cells


class Refused(Exception):
    pass


def nested(t):
    """A profile tensor as nested JSON lists, elements as JSON numbers or strings."""
    return np.array(t["data"], dtype=object).reshape(t["shape"]).tolist()


def body(profile, form):
    if form == "columnar":
        return {"inputs": {t["name"]: nested(t) for t in profile["inputs"]}}
    batch = profile["inputs"][0]["shape"][0]
    return {"instances": [{t["name"]: nested(t)[i] for t in profile["inputs"]}
                          for i in range(batch)]}


def call(method, url, payload=None):
    r = requests.request(method, url, json=payload, timeout=30)
    try:
        parsed = r.json()
    except ValueError:
        parsed = r.text
    if r.status_code != 200:
        message = parsed.get("error", parsed) if isinstance(parsed, dict) else parsed
        raise Refused({"error": str(r.status_code), "message": str(message)})
    return parsed


def answer(parsed, profile):
    outputs = {}
    for o in profile["outputs"]:
        if "predictions" in parsed:
            column = [row[o["name"]] for row in parsed["predictions"] if o["name"] in row]
        else:
            column = parsed.get("outputs", {}).get(o["name"])
        if not column:
            continue
        try:
            outputs[o["name"]] = cells.tensor(column, o["datatype"])
        except ValueError as e:
            outputs[o["name"]] = {"unreadable": str(e), "json": column}
    return {"outputs": outputs}


def job_cases(job):
    p, form, base = job["profile"], job["form"], f"http://{job['target']}/v1/models/"
    run = lambda f: cells.run(lambda e: e.args[0], f, Refused)  # noqa: E731
    predict = lambda b, model=p["model"]: answer(call("POST", f"{base}{model}:predict", b), p)  # noqa: E731
    good = body(p, form)
    # A string where the first input's first number is due.
    wrong = copy.deepcopy(good)
    first = p["inputs"][0]["name"]
    if form == "columnar":
        wrong["inputs"][first][0][0] = "1"
    else:
        wrong["instances"][0][first][0] = "1"
    out = {
        "ok": run(lambda: predict(good)),
        "status": run(lambda: call("GET", base + p["model"])),
        "wrong_dtype": run(lambda: predict(wrong)),
        "missing_input": run(lambda: predict(body(cells.missing_input(p), form))),
        "unknown_model": run(lambda: predict(good, "nope")),
    }
    if form == "row":
        ragged = copy.deepcopy(good)
        ragged["instances"][0][first] = ragged["instances"][0][first][:-1]
        out["ragged"] = run(lambda: predict(ragged))
    return out


print(json.dumps({job["cell"]: job_cases(job) for job in cells.jobs()}))
