#!/usr/bin/env bash
# Regenerates hot-symbols.txt: the functions a release `ferry` executes while starting from a
# config file and serving HTTP/1.1, h2c and admin requests, as recorded by callgrind.
# A second listener runs strict mutual TLS with a throwaway identity (openssl), so the TLS
# handshake and record code a meshed sidecar runs is hot too.
# Needs valgrind, curl, openssl and python3. Run from anywhere; takes about a minute after the build.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
# Separately: built together, feature unification with the bench changes the proxy's code and
# so the names LLVM gives duplicated local functions (name.1234).
cargo build --release -p ferry --locked
cargo build --release -p ferry-bench --locked
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

sleep 100000 | "$target/release/ferry-bench" upstream --listen 127.0.0.1:0 > "$work/upstream" &
for _ in $(seq 50); do grep -q listening "$work/upstream" 2>/dev/null && break; sleep 0.1; done
up="$(awk '/listening/ {print $2}' "$work/upstream")"
sed -e "s/@ADMIN_PORT@/18990/; s/@H1_PORT@/18991/; s/@UP_PORT@/${up##*:}/; /@ROUTES@/d" \
    bench/configs/ferry.yaml > "$work/ferry.yaml"

# A CA and one workload certificate (ECDSA P-256, SPIFFE URI SAN) for both sides.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=hot-ca -days 1 \
    -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=hot \
    -keyout "$work/tls.key" -out "$work/tls.csr" 2>/dev/null
printf '[l]\nsubjectAltName=URI:spiffe://cluster.local/ns/bench/sa/hot\n' > "$work/ext.cnf"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
    -days 1 -extfile "$work/ext.cnf" -extensions l -out "$work/tls.crt" 2>/dev/null
python3 - "$work/ferry.yaml" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
text = text.replace("listeners:\n", """identity: { cert: tls.crt, key: tls.key, trust: [ca.crt] }
listeners:
  - name: mtls
    address: 127.0.0.1:18992
    tls: { mode: strict }
    routes: [{ name: all, to: upstream }]
""", 1)
open(path, "w").write(text)
PY

valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/cg.out" \
    "$target/release/ferry" run --config "$work/ferry.yaml" 2> "$work/valgrind.log" &
ferry=$!
for _ in $(seq 300); do curl -sf -o /dev/null http://127.0.0.1:18990/ready && break; sleep 0.1; done
for i in $(seq 20); do curl -sf -o /dev/null "http://127.0.0.1:18991/r$i"; done
curl -sf -o /dev/null --http2-prior-knowledge http://127.0.0.1:18991/h2
tls=(--cert "$work/tls.crt" --key "$work/tls.key" --cacert "$work/ca.crt" -k)
for i in $(seq 5); do curl -sf -o /dev/null "${tls[@]}" --http1.1 "https://127.0.0.1:18992/t$i"; done
curl -sf -o /dev/null "${tls[@]}" --http2 https://127.0.0.1:18992/t2
for p in live ready metrics config_dump; do curl -sf -o /dev/null "http://127.0.0.1:18990/$p"; done
kill -TERM "$ferry"
wait "$ferry" || true

python3 - "$work/cg.out" > "$here/hot-symbols.txt" <<'PY'
import re, sys
objects, names, cost = {}, {}, {}
ob = fn = None
after_call = False
for line in open(sys.argv[1], errors="replace"):
    line = line.rstrip("\n")
    m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
    if m:
        if m.group(3):
            objects[m.group(2)] = m.group(3)
        if m.group(1) == "ob":
            ob = m.group(2)
        continue
    m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
    if m:
        if m.group(3):
            names[m.group(2)] = m.group(3)
        if m.group(1) == "fn":
            # callgrind marks recursion depth as name'N; the symbol is the name.
            names[m.group(2)] = re.sub(r"'\d+$", "", names.get(m.group(2), ""))
            fn = m.group(2)
            cost.setdefault(fn, [ob, 0])
        continue
    if line.startswith("calls="):
        after_call = True
        continue
    if line[:1] in "0123456789+-*" and line:
        parts = line.split()
        if len(parts) >= 2 and not after_call:
            cost[fn][1] += int(parts[1])
        after_call = False
hot = sorted(set(
    names[f] for f, (o, c) in cost.items()
    if c > 0 and objects.get(o, "").endswith("/ferry") and re.match(r"^(_ZN|_R)", names[f])
))
print("\n".join(hot))
PY
echo "$(wc -l < "$here/hot-symbols.txt") symbols written to $here/hot-symbols.txt"
