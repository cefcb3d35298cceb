//! ferry-init's generated rules in a real kernel: each test runs the script in a fresh network
//! namespace (`unshare --net`) with the pinned Debian iptables, and checks what the kernel
//! holds and where connections go.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should panic"
)]

mod support;

use std::{path::Path, process::Command, sync::Once};

use ferry_inject::RedirectRules;

/// Installs iptables once per process; a failure is a test failure, not a skip.
fn ensure_iptables() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let script = support::package_dir().join("tests/support/install-iptables.sh");
        let out = Command::new("bash").arg(&script).output().unwrap();
        assert!(
            out.status.success(),
            "installing iptables failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// Runs `body` with `sh` in a new network namespace; `$1` is the ferry-init script's path.
fn in_netns(dir: &Path, rules: &RedirectRules, body: &str) -> (String, String, bool) {
    ensure_iptables();
    let script = dir.join("ferry-init.sh");
    std::fs::write(&script, rules.script()).unwrap();
    let out = Command::new("timeout")
        .args(["60", "unshare", "--net", "sh", "-euc", body, "sh"])
        .arg(&script)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

#[test]
fn rules_load_and_a_rerun_leaves_one_copy() {
    let dir = support::scratch("iptables-load");
    let rules = RedirectRules::new(2102, &[22], &[5432]);
    let (out, err, ok) = in_netns(
        &dir,
        &rules,
        r#"sh "$1" >/dev/null; sh "$1" >/dev/null; iptables -t nat -S"#,
    );
    assert!(ok, "script failed:\n{err}");
    // What the kernel holds, in iptables -S form, must be exactly the generated rules: the
    // table text parsed, nothing dropped, nothing doubled by the second run.
    let mut expected: Vec<String> = vec![
        "-P PREROUTING ACCEPT".into(),
        "-P INPUT ACCEPT".into(),
        "-P OUTPUT ACCEPT".into(),
        "-P POSTROUTING ACCEPT".into(),
        "-N FERRY_INBOUND".into(),
        "-N FERRY_OUTPUT".into(),
    ];
    expected.extend(
        rules
            .nat_table()
            .lines()
            .filter(|l| l.starts_with("-A "))
            .map(|l| l.replace("-p tcp --dport", "-p tcp -m tcp --dport")),
    );
    let mut actual: Vec<String> = out.lines().map(str::to_owned).collect();
    expected.sort();
    actual.sort();
    assert_eq!(actual, expected, "kernel nat table:\n{out}");
}

/// A pod-like namespace: loopback up, one veth interface with 10.99.0.2/24, the rules loaded.
const POD: &str = r#"
ip link set lo up
ip link add eth0 type veth peer name peer0
ip addr add 10.99.0.2/24 dev eth0
ip link set eth0 up
ip link set peer0 up
sh "$1" >/dev/null
"#;

/// Stands in for ferry's outbound listener on 127.0.0.1:15001 and reports, per case, whether
/// a connection to a remote address arrived there. Cases not redirected go to 10.99.0.9,
/// which nobody answers, so their connect fails on its own timeout.
const PROBE: &str = r#"
import encodings.idna, os, socket, sys  # idna now: after setuid the child cannot import
ferry = socket.socket()
ferry.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ferry.bind(("127.0.0.1", 15001))
ferry.listen(8)
ferry.settimeout(0.2)

def dial(port, uid=None):
    pid = os.fork()
    if pid == 0:
        if uid is not None:
            os.setuid(uid)
        try:
            s = socket.socket()
            s.settimeout(2)
            s.connect(("10.99.0.9", port))
            s.close()
        except OSError:
            pass
        os._exit(0)
    os.waitpid(pid, 0)

def arrived():
    try:
        conn, _ = ferry.accept()
        conn.close()
        return True
    except socket.timeout:
        return False

for name, port, uid in [("app:80", 80, None), ("app:8080", 8080, 1000),
                        ("app:5432", 5432, None), ("app:53", 53, None),
                        ("ferry:80", 80, int(sys.argv[1]))]:
    dial(port, uid)
    print(name, "redirected" if arrived() else "direct")
"#;

#[test]
fn outbound_tcp_goes_to_ferry_except_ferry_itself_and_excluded_ports() {
    let dir = support::scratch("iptables-outbound");
    std::fs::write(dir.join("probe.py"), PROBE).unwrap();
    let rules = RedirectRules::new(2102, &[], &[5432]);
    let body = format!(
        "{POD}\npython3 {} 2102",
        dir.join("probe.py").to_str().unwrap()
    );
    let (out, err, ok) = in_netns(&dir, &rules, &body);
    assert!(ok, "probe failed:\n{out}\n{err}");
    assert_eq!(
        out,
        "app:80 redirected\napp:8080 redirected\napp:5432 direct\napp:53 direct\nferry:80 direct\n",
        "{err}"
    );
}
