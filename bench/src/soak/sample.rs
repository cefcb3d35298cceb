//! One sample every interval of the soak: ferry's VmRSS, open fds, OS threads and CPU from
//! /proc, the connection and in-flight gauges of its admin `/metrics`, and the requests
//! finished since the previous sample. Each row is appended to `samples.csv` and flushed at
//! once, so a run cut short still leaves its data.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use tokio::io::AsyncWriteExt;

use super::mix::Counters;
use super::sockets::{self, FdSplit};
use crate::error::{BenchError, IoContext, Result};
use crate::loadgen::{Conn, Proto, RequestSpec};
use crate::procfs;

/// The CSV header, one column per [`Sample`] field.
pub(crate) const CSV_HEADER: &str = "t_s,rss_kib,fds,fds_downstream,fds_upstream,threads,\
     active_connections,active_requests,alive_tasks,cpu_s,ok,failed";

/// One row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sample {
    /// Seconds since the load started.
    pub t_s: f64,
    /// VmRSS.
    pub rss_kib: u64,
    /// Entries of /proc/<pid>/fd.
    pub fds: u64,
    /// Of those, TCP connections from the load generator and to the upstream.
    pub split: FdSplit,
    /// `Threads` of /proc/<pid>/status (ferry's runtime workers plus its blocking pool).
    pub threads: u64,
    /// `ferry_active_connections`, summed over listeners (NaN when /metrics did not answer).
    pub active_connections: f64,
    /// `ferry_active_requests` (requests and open streams), summed over listeners.
    pub active_requests: f64,
    /// `ferry_runtime_alive_tasks`: ferry's tokio tasks (NaN from a ferry without it).
    pub alive_tasks: f64,
    /// utime + stime so far.
    pub cpu_s: f64,
    /// Requests answered in full since the previous sample.
    pub ok: u64,
    /// Requests failed since the previous sample.
    pub failed: u64,
}

/// Where and how to sample.
pub(crate) struct Sampler {
    /// ferry's pid.
    pub pid: u32,
    /// ferry's admin listener.
    pub admin: SocketAddr,
    /// ferry's listener port (downstream connections).
    pub listener_port: u16,
    /// The upstream's port.
    pub upstream_port: u16,
    /// Clock ticks per second, for CPU.
    pub ticks: f64,
    /// The mix's live counters.
    pub counters: Arc<Counters>,
}

// === impl Sample ===

impl Sample {
    /// The row as CSV.
    pub(crate) fn csv(&self) -> String {
        format!(
            "{:.1},{},{},{},{},{},{},{},{},{:.2},{},{}",
            self.t_s,
            self.rss_kib,
            self.fds,
            self.split.downstream,
            self.split.upstream,
            self.threads,
            self.active_connections,
            self.active_requests,
            self.alive_tasks,
            self.cpu_s,
            self.ok,
            self.failed
        )
    }
}

// === impl Sampler ===

impl Sampler {
    /// Samples at 0, `every`, 2 × `every`, … until a sample lands within half an interval of
    /// `duration`, writing each row to `csv` as it comes.
    pub(crate) async fn run(
        &self,
        every: Duration,
        duration: Duration,
        csv: &Path,
    ) -> Result<Vec<Sample>> {
        let mut file = tokio::fs::File::create(csv)
            .await
            .ctx(|| format!("creating {}", csv.display()))?;
        let write_err = || format!("writing {}", csv.display());
        file.write_all(format!("{CSV_HEADER}\n").as_bytes())
            .await
            .ctx(write_err)?;
        let started = tokio::time::Instant::now();
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut previous = (0, 0);
        let mut out = Vec::new();
        loop {
            ticker.tick().await;
            let t = started.elapsed();
            let sample = self.take(t, &mut previous).await?;
            file.write_all(format!("{}\n", sample.csv()).as_bytes())
                .await
                .ctx(write_err)?;
            file.flush().await.ctx(write_err)?;
            out.push(sample);
            if t + every / 2 >= duration {
                return Ok(out);
            }
        }
    }

    async fn take(&self, t: Duration, previous: &mut (u64, u64)) -> Result<Sample> {
        let (pid, ticks) = (self.pid, self.ticks);
        let ports = (self.listener_port, self.upstream_port);
        // /proc reads are quick but blocking; keep them off the load generator's thread.
        let proc = tokio::task::spawn_blocking(move || read_proc(pid, ticks, ports))
            .await
            .map_err(|e| BenchError::Process(format!("sampling /proc: {e}")))??;
        let metrics = scrape(self.admin).await.unwrap_or_default();
        let (ok, failed) = self.counters.totals();
        let sample = Sample {
            t_s: t.as_secs_f64(),
            rss_kib: proc.rss_kib,
            fds: proc.fds,
            split: proc.split,
            threads: proc.threads,
            active_connections: gauge_sum(&metrics, "ferry_active_connections"),
            active_requests: gauge_sum(&metrics, "ferry_active_requests"),
            alive_tasks: gauge_sum(&metrics, "ferry_runtime_alive_tasks"),
            cpu_s: proc.cpu_s,
            ok: ok - previous.0,
            failed: failed - previous.1,
        };
        *previous = (ok, failed);
        Ok(sample)
    }
}

/// What /proc says about one process.
struct ProcFacts {
    rss_kib: u64,
    threads: u64,
    fds: u64,
    split: FdSplit,
    cpu_s: f64,
}

fn read_proc(pid: u32, ticks: f64, (listener, upstream): (u16, u16)) -> Result<ProcFacts> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ctx(|| format!("ferry (pid {pid}) is gone: reading /proc/{pid}/status"))?;
    let (rss_kib, threads) = parse_status(&status)
        .ok_or_else(|| BenchError::Process(format!("no VmRSS/Threads in /proc/{pid}/status")))?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ctx(|| format!("listing /proc/{pid}/fd"))?
        .count() as u64;
    let cpu_s = procfs::cpu(pid, ticks)?.total();
    Ok(ProcFacts {
        rss_kib,
        threads,
        fds,
        split: sockets::split(pid, listener, upstream),
        cpu_s,
    })
}

/// (VmRSS in KiB, Threads) from the text of /proc/<pid>/status.
fn parse_status(text: &str) -> Option<(u64, u64)> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("Threads:")?))
}

/// The admin `/metrics` text (Prometheus exposition format).
async fn scrape(admin: SocketAddr) -> Result<String> {
    let mut conn = Conn::connect(admin, Proto::Http1).await?;
    let body = conn
        .send_streaming(&admin.to_string(), &RequestSpec::get("/metrics"))
        .await?;
    let bytes = body
        .collect()
        .await
        .map_err(|e| BenchError::Http(format!("reading /metrics: {e}")))?
        .to_bytes();
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The sum of every series of metric `name` (all label sets); NaN when there is none.
fn gauge_sum(text: &str, name: &str) -> f64 {
    let values: Vec<f64> = text
        .lines()
        .filter_map(|l| l.strip_prefix(name))
        .filter(|rest| rest.starts_with('{') || rest.starts_with(' '))
        .filter_map(|rest| rest.rsplit(' ').next()?.parse::<f64>().ok())
        .collect();
    if values.is_empty() {
        f64::NAN
    } else {
        values.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rss_and_threads_from_status() {
        let text = "Name:\tferry\nVmHWM:\t   9000 kB\nVmRSS:\t    8123 kB\nThreads:\t3\n";
        assert_eq!(parse_status(text), Some((8123, 3)));
        assert_eq!(parse_status("Name:\tferry\n"), None);
    }

    #[test]
    fn sums_a_gauge_over_label_sets_and_skips_longer_names() {
        let text = "# HELP ferry_active_connections Open downstream connections\n\
                    # TYPE ferry_active_connections gauge\n\
                    ferry_active_connections{listener=\"a\"} 3\n\
                    ferry_active_connections{listener=\"b\"} 4\n\
                    ferry_active_connections_peak 99\n";
        assert_eq!(gauge_sum(text, "ferry_active_connections"), 7.0);
        assert!(gauge_sum(text, "ferry_active_requests").is_nan());
    }
}
