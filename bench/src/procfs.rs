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

/// CPU seconds spent in user space and in the kernel on a process's behalf.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cpu {
    /// utime.
    pub user: f64,
    /// stime.
    pub sys: f64,
}

impl Cpu {
    /// user + sys.
    pub fn total(self) -> f64 {
        self.user + self.sys
    }
}

impl std::ops::Sub for Cpu {
    type Output = Cpu;

    fn sub(self, rhs: Cpu) -> Cpu {
        Cpu {
            user: self.user - rhs.user,
            sys: self.sys - rhs.sys,
        }
    }
}

/// utime and stime of `pid` in seconds.
pub fn cpu(pid: u32, ticks: f64) -> Result<Cpu> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat"))
        .ctx(|| format!("reading /proc/{pid}/stat"))?;
    parse_stat_cpu(&text, ticks).ok_or_else(|| BenchError::Process(format!("odd /proc/{pid}/stat")))
}

fn parse_stat_cpu(text: &str, ticks: f64) -> Option<Cpu> {
    // The command name may contain spaces; fields resume after the last ')'.
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    // After ')': state is field 3, so utime (14) and stime (15) sit at 11 and 12.
    let user: f64 = fields.nth(11)?.parse().ok()?;
    let sys: f64 = fields.next()?.parse().ok()?;
    Some(Cpu {
        user: user / ticks,
        sys: sys / ticks,
    })
}

/// CPU of the whole tree under `pid`.
pub fn tree_cpu(pid: u32, ticks: f64) -> Result<Cpu> {
    let mut sum = Cpu::default();
    for p in tree(pid) {
        // A child may exit between listing and reading; only the root must be readable.
        match cpu(p, ticks) {
            Ok(c) => {
                sum.user += c.user;
                sum.sys += c.sys;
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_utime_and_stime_after_a_command_name_with_spaces() {
        // Fields 1-17 of a real /proc/<pid>/stat line, with a command name holding ") (".
        let line = "4242 (a) (b c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20";
        let cpu = parse_stat_cpu(line, 100.0).unwrap();
        assert_eq!(
            cpu,
            Cpu {
                user: 2.5,
                sys: 0.75
            }
        );
        assert_eq!(cpu.total(), 3.25);
        assert!(parse_stat_cpu("4242 (truncated", 100.0).is_none());
    }
}
