"""An HTTP/1.1 model-server stand-in that reports its own load as vLLM does, for ferry's
load-report balancing tests.

Every answer carries `endpoint-load-metrics: TEXT named_metrics.kv_cache_usage_perc=<kv>`
(vLLM's header and metric) and the server's name as its body. Paths:

- `/hold?s=N`: answer after N seconds (a request that keeps a replica busy);
- `/control?fail=1|0`: from then on answer 503 (or 200) to every other request, so a test can
  have the replica ejected and let it come back;
- anything else: answer after `--delay` seconds (default 5 ms: a model server's answers take
  milliseconds, and a few-millisecond stall of this process on a shared machine is then a
  blip, not a peak twenty times its usual latency).

Prints `PORT <n>` when listening on 127.0.0.1 (port from the kernel), then serves until killed.
"""

import argparse
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

STATE = {"fail": False}
LOCK = threading.Lock()


def handler(name, kv, report, delay):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Head and body in one write, sent at once: otherwise Nagle's algorithm and the
        # client's delayed ACK hold every answer's body back ~40 ms.
        wbufsize = 1 << 16
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass

        def answer(self, status, body):
            data = body.encode()
            self.send_response(status)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(data)))
            if report:
                self.send_header(
                    "endpoint-load-metrics",
                    f"TEXT named_metrics.kv_cache_usage_perc={kv}, cpu_utilization=0.5",
                )
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            url = urlparse(self.path)
            query = parse_qs(url.query)
            if url.path == "/control":
                with LOCK:
                    STATE["fail"] = query.get("fail", ["0"])[0] == "1"
                self.answer(200, name)
                return
            if url.path == "/hold":
                time.sleep(float(query.get("s", ["10"])[0]))
            elif delay:
                time.sleep(delay)
            with LOCK:
                fail = STATE["fail"]
            self.answer(503 if fail else 200, name)

    return Handler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--name", required=True)
    p.add_argument("--kv", type=float, default=0.0)
    p.add_argument("--no-report", action="store_true")
    p.add_argument("--delay", type=float, default=0.005)
    args = p.parse_args()
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), handler(args.name, args.kv, not args.no_report, args.delay)
    )
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
