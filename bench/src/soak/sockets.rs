//! Which of ferry's open fds are TCP connections from the load generator (downstream), TCP
//! connections to the upstream, or anything else (listeners, epoll, eventfds, files). The
//! total alone mixes a fixed part with ferry's upstream pool, which grows to the peak number
//! of requests in flight and shrinks again once connections sit idle for the cluster's
//! `idle_timeout`; the split shows which part moved.

use std::collections::HashMap;

/// ferry's fds by what they are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FdSplit {
    /// Established connections on ferry's listener port.
    pub downstream: u64,
    /// Connections to the upstream's port.
    pub upstream: u64,
}

/// Splits `pid`'s fds; ports are ferry's listener and the upstream. Unreadable entries (an fd
/// closed between listing and reading) are skipped: the split is a sample, like the count.
pub(crate) fn split(pid: u32, listener_port: u16, upstream_port: u16) -> FdSplit {
    let mut ports = HashMap::new();
    for table in ["tcp", "tcp6"] {
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) {
            ports.extend(parse_tcp_table(&text));
        }
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return FdSplit::default();
    };
    let mut out = FdSplit::default();
    for fd in fds.flatten() {
        let Some(inode) = std::fs::read_link(fd.path())
            .ok()
            .and_then(|target| socket_inode(&target.to_string_lossy()))
        else {
            continue;
        };
        match ports.get(&inode) {
            Some(&(local, _)) if local == listener_port => out.downstream += 1,
            Some(&(_, remote)) if remote == upstream_port => out.upstream += 1,
            _ => {}
        }
    }
    out
}

/// The inode of an fd link such as `socket:[12345]`.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// inode → (local port, remote port) of every non-listening socket in a /proc/net/tcp table.
fn parse_tcp_table(text: &str) -> HashMap<u64, (u16, u16)> {
    const LISTEN: &str = "0A";
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (local, remote, state, inode) = (f.get(1)?, f.get(2)?, f.get(3)?, f.get(9)?);
            if *state == LISTEN {
                return None;
            }
            Some((inode.parse().ok()?, (port(local)?, port(remote)?)))
        })
        .collect()
}

/// The port of `ADDR:PORT` written in hex, as /proc/net/tcp does.
fn port(addr: &str) -> Option<u16> {
    u16::from_str_radix(addr.rsplit_once(':')?.1, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ports_by_inode_and_skips_listeners() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
           0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 100 1 0 100 0 0 10 0\n\
           1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 200 1 0 20 4 30 10 -1\n\
           2: 0100007F:D431 0100007F:2328 01 00000000:00000000 00:00000000 00000000     0        0 300 1 0 20 4 30 10 -1\n";
        let table = parse_tcp_table(text);
        assert_eq!(table.len(), 2);
        assert_eq!(table.get(&200), Some(&(8080, 50000)));
        assert_eq!(table.get(&300), Some(&(54321, 9000)));
        assert_eq!(socket_inode("socket:[300]"), Some(300));
        assert_eq!(socket_inode("anon_inode:[eventpoll]"), None);
    }
}
