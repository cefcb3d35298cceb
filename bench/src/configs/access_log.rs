//! The `access_log` scenario's config (ferry only): `configs/ferry-access-log.yaml` with the
//! lines marked `# access log` kept (a JSON sink at 100 % in the work directory) or dropped,
//! so the two runs differ in the access log alone.

use std::path::{Path, PathBuf};

use super::{Ports, fill};
use crate::targets::Kind;

const FERRY_ACCESS_LOG: &str = include_str!("../../configs/ferry-access-log.yaml");

/// The file the sink writes, inside the run's work directory.
pub fn access_log_file(workdir: &Path) -> PathBuf {
    workdir.join("access.log")
}

/// The config with (`on`) or without the sink; `None` for proxies other than ferry.
pub fn render_access_log(kind: Kind, ports: Ports, workdir: &Path, on: bool) -> Option<String> {
    if !kind.is_ferry() {
        return None;
    }
    let text: String = FERRY_ACCESS_LOG
        .lines()
        .filter_map(|line| match line.strip_suffix(" # access log") {
            None => Some(line),
            Some(kept) => on.then_some(kept),
        })
        .fold(String::new(), |mut out, line| {
            out.push_str(line);
            out.push('\n');
            out
        });
    Some(fill(&text, ports, workdir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runs_differ_in_the_sink_alone() {
        let ports = Ports {
            h1: 1,
            h2: 1,
            admin: 3,
            upstream: 4,
        };
        let dir = Path::new("/tmp/x");
        let off = render_access_log(Kind::Ferry, ports, dir, false).unwrap();
        let on = render_access_log(Kind::Ferry, ports, dir, true).unwrap();
        assert!(
            !off.contains("access_log:") && !off.contains("access.log"),
            "{off}"
        );
        assert!(on.contains("access_log:") && on.contains("path: \"/tmp/x/access.log\""));
        let config = |text: &str| ferry_config::parse("bench.yaml", text).unwrap();
        let (off, on) = (config(&off), config(&on));
        assert!(off.access_log.is_empty());
        assert_eq!(on.access_log.len(), 1);
        assert_eq!(on.access_log[0].path, access_log_file(dir));
        assert_eq!(off.listeners[0].routes.len(), on.listeners[0].routes.len());
        assert!(render_access_log(Kind::Envoy, ports, dir, true).is_none());
    }
}
