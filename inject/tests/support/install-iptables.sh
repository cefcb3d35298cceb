#!/usr/bin/env bash
# Installs the pinned Debian iptables the redirect tests load ferry-init's rules with
# (iptables 1.8.9-2, Debian 12, nf_tables backend), and checks that this machine can make a
# network namespace (`unshare --net`) with a working nat table. Idempotent; guarded by flock
# because cargo runs test binaries in parallel. Non-zero exit with a message when anything is
# missing: the tests turn that into a failure, never a skip.
set -euo pipefail

IPTABLES_VERSION="1.8.9-2"

exec 9>/tmp/ferry-inject-iptables.lock
flock 9

installed="$(dpkg-query -W -f '${Version}' iptables 2>/dev/null || true)"
if [[ "$installed" != "$IPTABLES_VERSION" ]]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    "iptables=${IPTABLES_VERSION}" >/dev/null \
    || { echo "install-iptables: apt-get install iptables=${IPTABLES_VERSION} failed (needs root and Debian apt)" >&2; exit 1; }
fi
command -v iptables-restore >/dev/null \
  || { echo "install-iptables: iptables-restore not on PATH after install" >&2; exit 1; }
for tool in unshare ip python3; do
  command -v "$tool" >/dev/null || { echo "install-iptables: $tool missing" >&2; exit 1; }
done
unshare --net iptables -t nat -S >/dev/null \
  || { echo "install-iptables: cannot use a nat table in a new network namespace (needs CAP_SYS_ADMIN and CAP_NET_ADMIN)" >&2; exit 1; }
iptables-restore --version
