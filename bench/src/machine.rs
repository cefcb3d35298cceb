//! The machine description stored beside every result: cores, CPU, kernel, memory, versions.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// What the results were measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// UTC date, YYYY-MM-DD.
    pub date: String,
    /// Online CPUs.
    pub cores: usize,
    /// CPU model name.
    pub cpu_model: String,
    /// Kernel release.
    pub kernel: String,
    /// Total memory.
    pub mem_total_mib: u64,
    /// (component, version line).
    pub versions: Vec<(String, String)>,
}

// === impl Machine ===

impl Machine {
    /// Reads /proc; `versions` come from the caller, who knows the binaries.
    pub fn describe(versions: Vec<(String, String)>) -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cores = cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|l| l.trim_start_matches([' ', '\t', ':']).trim().to_owned())
            .unwrap_or_else(|| "unknown".to_owned());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".to_owned());
        let mem_total_mib = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(0, |kib| kib / 1024);
        Self {
            date: today(),
            cores,
            cpu_model,
            kernel,
            mem_total_mib,
            versions,
        }
    }
}

/// Today's UTC date as YYYY-MM-DD (civil-from-days; no date crate needed for one string).
pub fn today() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn date_has_the_iso_shape() {
        let d = super::today();
        assert_eq!(d.len(), 10, "{d}");
        assert!(d.starts_with("20"), "{d}");
    }
}
