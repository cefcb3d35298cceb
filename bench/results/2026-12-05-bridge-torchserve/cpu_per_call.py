"""ferry's CPU per call, bridged (OIP v2 REST -> torchserve-rest, payload json) against the
same call passed through untranslated (the TorchServe body POSTed to /predictions/{m} through
a route without translate), at 64 and 65,536 FP32 elements, in alternating rounds.

Starts TorchServe (the test set-up's venv and handler) and the given ferry binary on free
loopback ports, reads ferry's utime+stime from /proc before and after each round, stops both.
Usage: python cpu_per_call.py PEERS_DIR FERRY_BIN [ROUNDS]   (prints one JSON document)"""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS_SCRIPTS = os.path.join(HERE, "..", "..", "..", "integration", "peers", "torchserve")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_http(port, path, ok=lambda status, body: status == 200, patience=150):
    deadline = time.time() + patience
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", path)
            r = c.getresponse()
            if ok(r.status, r.read()):
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"127.0.0.1:{port}{path} never became ready")


def start_torchserve(peers, scratch):
    binp = os.path.join(peers, "torchserve", "bin")
    store = os.path.join(scratch, "store")
    os.makedirs(store)
    subprocess.run([os.path.join(binp, "torch-model-archiver"), "--model-name", "double_json",
                    "--version", "1.0", "--handler", os.path.join(PEERS_SCRIPTS, "handler.py"),
                    "--export-path", store, "--archive-format", "no-archive"], check=True)
    rest, mgmt, metrics = free_port(), free_port(), free_port()
    with open(os.path.join(scratch, "config.properties"), "w") as f:
        f.write(f"inference_address=http://127.0.0.1:{rest}\nmanagement_address=http://127.0.0.1:{mgmt}\n"
                f"metrics_address=http://127.0.0.1:{metrics}\ngrpc_inference_address=127.0.0.1\n"
                f"grpc_management_address=127.0.0.1\ngrpc_inference_port={free_port()}\n"
                f"grpc_management_port={free_port()}\ndisable_token_authorization=true\n"
                f"default_workers_per_model=1\nmodel_store={store}\nload_models=double_json\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(PEERS_SCRIPTS, "stand_in"),
               PATH=binp + ":" + os.environ.get("PATH", ""), LOG_LOCATION=scratch,
               METRICS_LOCATION=scratch, TMPDIR=scratch)
    p = subprocess.Popen([os.path.join(binp, "torchserve"), "--start", "--foreground", "--ncs",
                          "--ts-config", os.path.join(scratch, "config.properties"),
                          "--model-store", store], env=env, cwd=scratch, start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_http(mgmt, "/models/double_json", lambda s, b: s == 200 and b"READY" in b)
    return p, rest


def start_ferry(ferry, scratch, ts_rest):
    port, admin = free_port(), free_port()
    cfg = os.path.join(scratch, "ferry.yaml")
    with open(cfg, "w") as f:
        f.write(f"""apiVersion: ferry/v1
admin: {{ address: 127.0.0.1:{admin} }}
listeners:
  - name: main
    address: 127.0.0.1:{port}
    routes:
      - name: bridged
        match: {{ path: {{ prefix: /v2/ }} }}
        translate:
          from: oip-v2-rest
          to: torchserve-rest
          payload: json
          signature:
            inputs: [{{ name: INPUT0, datatype: FP32, shape: [-1, -1] }}]
            outputs: [{{ name: OUTPUT0, datatype: FP32, shape: [-1, -1] }}]
        to: ts
      - name: pass-through
        to: ts
clusters:
  - name: ts
    endpoints: [127.0.0.1:{ts_rest}]
""")
    p = subprocess.Popen([ferry, "run", "--config", cfg], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    wait_http(admin, "/ready", lambda s, b: s == 200, patience=30)
    return p, port


def bodies(n):
    # The same activations as the criterion benches: varied, up to nine significant digits.
    vals = [f"{((i * 2654435761) % 1000003) / 1000003.0 - 0.5:.9g}" for i in range(n)]
    data = ",".join(vals)
    oip = f'{{"inputs":[{{"name":"INPUT0","shape":[1,{n}],"datatype":"FP32","data":[{data}]}}]}}'
    ts = f'{{"INPUT0":[[{data}]]}}'
    return oip.encode(), ts.encode()


def round_cpu(pid, port, path, body, calls):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    before = cpu_seconds(pid)
    for _ in range(calls):
        c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        if r.status != 200:
            raise RuntimeError(f"{path}: {r.status}")
    return (cpu_seconds(pid) - before) / calls


def main():
    peers, ferry = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    scratch = tempfile.mkdtemp(prefix="ferry-ts-bench-")
    ts, ts_rest = start_torchserve(peers, scratch)
    fp = None
    try:
        fp, port = start_ferry(ferry, scratch, ts_rest)
        out = {}
        for n, calls in ((64, 400), (65536, 20)):
            oip, ts_body = bodies(n)
            bridged, passed = [], []
            for _ in range(rounds):
                bridged.append(round_cpu(fp.pid, port, "/v2/models/double_json/infer", oip, calls))
                passed.append(round_cpu(fp.pid, port, "/predictions/double_json", ts_body, calls))
            b, p = sorted(bridged)[rounds // 2], sorted(passed)[rounds // 2]
            out[f"fp32_{n}"] = {
                "calls_per_round": calls, "rounds": rounds,
                "oip_body_bytes": len(oip), "torchserve_body_bytes": len(ts_body),
                "bridged_cpu_ms_per_call": [round(x * 1e3, 4) for x in bridged],
                "pass_through_cpu_ms_per_call": [round(x * 1e3, 4) for x in passed],
                "median_ratio": round(b / p, 3) if p else None,
            }
        print(json.dumps(out, indent=1))
    finally:
        if fp:
            fp.terminate()
            fp.wait()
        os.killpg(ts.pid, signal.SIGTERM)
        ts.wait()


main()
