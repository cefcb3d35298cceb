//! What a process tree costs, read from /proc: CPU seconds (utime + stime) and memory
//! (VmRSS, VmHWM). A tree, because nginx runs a master beside its worker.

use std::fs;
use std::process::Command;

use crate::error::{BenchError, IoContext, Result};

/// Clock ticks per second for /proc/<pid>/stat (sysconf needs unsafe libc; ask getconf once).
pub fn clock_ticks() -> Result<f64> {
    let out = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ctx(|| "running getconf CLK_TCK".into())?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse::<f64>()
        .map_err(|e| BenchError::Process(format!("getconf CLK_TCK: {e}")))
}

/// `pid` and all its descendants.
pub fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut i = 0;
    // Bounded: a process tree on this machine is small, and each pid is visited once.
    while i < all.len() && i < 4096 {
        let p = all[i];
        all.extend(children(p));
        i += 1;
    }
    all
}

fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        let path = task.path().join("children");
        if let Ok(text) = fs::read_to_string(path) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|s| s.parse::<u32>().ok()),
            );
        }
    }
    out
}

/// utime + stime of `pid` in seconds.
pub fn cpu_seconds(pid: u32, ticks: f64) -> Result<f64> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat"))
        .ctx(|| format!("reading /proc/{pid}/stat"))?;
    // The command name may contain spaces; fields resume after the last ')'.
    let rest = text
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| BenchError::Process(format!("odd /proc/{pid}/stat")))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state is field 3, so utime (14) and stime (15) sit at 11 and 12.
    let num = |i: usize| -> Result<f64> {
        fields
            .get(i)
            .and_then(|s| s.parse::<f64>().ok())
            .ok_or_else(|| BenchError::Process(format!("no field {i} in /proc/{pid}/stat")))
    };
    Ok((num(11)? + num(12)?) / ticks)
}

/// CPU seconds of the whole tree under `pid`.
pub fn tree_cpu_seconds(pid: u32, ticks: f64) -> Result<f64> {
    let mut sum = 0.0;
    for p in tree(pid) {
        // A child may exit between listing and reading; only the root must be readable.
        match cpu_seconds(p, ticks) {
            Ok(s) => sum += s,
            Err(e) if p == pid => return Err(e),
            Err(_) => {}
        }
    }
    Ok(sum)
}

/// Memory of a process tree in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    /// Resident set now.
    pub rss_kib: u64,
    /// Peak resident set.
    pub hwm_kib: u64,
}

/// Summed VmRSS and VmHWM of the tree under `pid`.
pub fn tree_memory(pid: u32) -> Result<Memory> {
    let mut total = Memory::default();
    for p in tree(pid) {
        let Ok(text) = fs::read_to_string(format!("/proc/{p}/status")) else {
            if p == pid {
                return Err(BenchError::Process(format!("process {pid} is gone")));
            }
            continue;
        };
        for line in text.lines() {
            let value = |prefix: &str| {
                line.strip_prefix(prefix)
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            };
            if let Some(v) = value("VmRSS:") {
                total.rss_kib += v;
            }
            if let Some(v) = value("VmHWM:") {
                total.hwm_kib += v;
            }
        }
    }
    Ok(total)
}
