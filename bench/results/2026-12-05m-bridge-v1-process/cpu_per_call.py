"""ferry's CPU per call, bridged (OIP v2 REST -> kserve-v1) against the same exchange passed
through untranslated (the V1 body POSTed to /v1/models/echo:predict through a route without
translate), at 64 and 65,536 FP32 elements, in alternating rounds.

Starts KServe's ModelServer (the test set-up's venv) with echo_v1.py and the given ferry binary
on free loopback ports, reads ferry's utime+stime from /proc before and after each round.
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


def wait_http(port, path, patience=150):
    deadline = time.time() + patience
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", path)
            r = c.getresponse()
            r.read()
            if r.status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"127.0.0.1:{port}{path} never became ready")


def start_kserve(peers, scratch):
    http_port = free_port()
    p = subprocess.Popen([os.path.join(peers, "kserve", "bin", "python"),
                          os.path.join(HERE, "echo_v1.py"), "--http_port", str(http_port),
                          "--grpc_port", str(free_port())], cwd=scratch,
                         start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    wait_http(http_port, "/v1/models/echo")
    return p, http_port


def start_ferry(ferry, scratch, upstream):
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
          to: kserve-v1
          signature:
            inputs: [{{ name: INPUT0, datatype: FP32, shape: [-1, -1] }}]
            outputs: [{{ name: OUTPUT0, datatype: FP32, shape: [-1, -1] }}]
        to: kserve
      - name: pass-through
        to: kserve
clusters:
  - name: kserve
    endpoints: [127.0.0.1:{upstream}]
""")
    p = subprocess.Popen([ferry, "run", "--config", cfg], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    wait_http(admin, "/ready", patience=30)
    return p, port


def bodies(n):
    # The same activations as the criterion benches: varied, up to nine significant digits.
    vals = [f"{((i * 2654435761) % 1000003) / 1000003.0 - 0.5:.9g}" for i in range(n)]
    data = ",".join(vals)
    oip = f'{{"inputs":[{{"name":"INPUT0","shape":[1,{n}],"datatype":"FP32","data":[{data}]}}]}}'
    v1 = f'{{"instances":[[{data}]]}}'
    return oip.encode(), v1.encode()


def round_cpu(pid, port, path, body, calls, check):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    before = cpu_seconds(pid)
    for _ in range(calls):
        c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        answer = r.read()
        if r.status != 200:
            raise RuntimeError(f"{path}: {r.status} {answer[:200]!r}")
        check(answer)
    return (cpu_seconds(pid) - before) / calls


def main():
    peers, ferry = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    scratch = tempfile.mkdtemp(prefix="ferry-v1-bench-")
    ks, ks_port = start_kserve(peers, scratch)
    fp = None
    try:
        fp, port = start_ferry(ferry, scratch, ks_port)
        out = {}
        for n, calls in ((64, 2000), (65536, 40)):
            oip, v1 = bodies(n)

            def bridged_ok(answer, n=n):
                # The OIP answer carries the echoed tensor: n elements, shape [1, n].
                out0 = json.loads(answer)["outputs"][0]
                assert out0["shape"] == [1, n] and len(out0["data"]) == n, out0["shape"]

            def passed_ok(answer, n=n):
                assert len(json.loads(answer)["predictions"][0]) == n

            bridged, passed = [], []
            for _ in range(rounds):
                bridged.append(round_cpu(fp.pid, port, "/v2/models/echo/infer", oip, calls, bridged_ok))
                passed.append(round_cpu(fp.pid, port, "/v1/models/echo:predict", v1, calls, passed_ok))
            b, p = sorted(bridged)[rounds // 2], sorted(passed)[rounds // 2]
            out[f"fp32_{n}"] = {
                "calls_per_round": calls, "rounds": rounds,
                "oip_body_bytes": len(oip), "v1_body_bytes": len(v1),
                "bridged_cpu_ms_per_call": [round(x * 1e3, 4) for x in bridged],
                "pass_through_cpu_ms_per_call": [round(x * 1e3, 4) for x in passed],
                "median_ratio": round(b / p, 3) if p else None,
            }
        print(json.dumps(out, indent=1))
    finally:
        if fp:
            fp.terminate()
            fp.wait()
        os.killpg(ks.pid, signal.SIGTERM)
        ks.wait()


main()
