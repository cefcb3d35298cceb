//! Where a bench command's results go: results.json and results.md in its directory.

use std::path::Path;

use serde::Serialize;

use super::{Report, markdown};
use crate::error::{BenchError, IoContext, Result};

/// Writes results.json and results.md into `dir`.
pub fn write(dir: &Path, report: &Report) -> Result<()> {
    write_files(dir, report, &markdown(report))
}

/// Writes `json` as results.json and `md` as results.md into `dir` (every bench command's
/// output).
pub fn write_files(dir: &Path, json: &impl Serialize, md: &str) -> Result<()> {
    std::fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
    let text = serde_json::to_string_pretty(json)
        .map_err(|e| BenchError::Report(format!("serialising results: {e}")))?;
    for (name, body) in [("results.json", text.as_str()), ("results.md", md)] {
        let path = dir.join(name);
        std::fs::write(&path, body).ctx(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
