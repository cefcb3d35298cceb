//! Screenshots of three of the dashboard's panels as Prometheus's own graph page draws their
//! queries (the classic UI Debian's package serves; Grafana is not part of the test set-up),
//! from the live test's real traffic. `FERRY_DASHBOARD_SCREENSHOTS=DIR` keeps them (docs/img
//! has them from such a run); otherwise they go to a temporary directory and are only checked.

use std::path::PathBuf;

use anyhow::Context as _;
use ferry_integration::chromium;
use ferry_integration::prometheus::{Prometheus, encode};

use crate::panels::{PanelQuery, substitute};

/// Panel title → file name.
const DRAWN: [(&str, &str); 3] = [
    (
        "Requests per second by route",
        "dashboard-requests-by-route.png",
    ),
    ("Success rate by model", "dashboard-success-by-model.png"),
    (
        "ferry's own time beside the upstream's (p50, p99)",
        "dashboard-ferry-vs-upstream.png",
    ),
];

/// Draws each panel's first query over the last 10 s (the test's live traffic) and checks a picture came out.
pub async fn take(
    prom: &Prometheus,
    queries: &[PanelQuery],
    values: &[(&str, &str)],
) -> anyhow::Result<()> {
    chromium::install().await?;
    let tmp = tempfile::tempdir()?;
    let dir = std::env::var_os("FERRY_DASHBOARD_SCREENSHOTS")
        .map_or_else(|| tmp.path().to_path_buf(), PathBuf::from);
    std::fs::create_dir_all(&dir)?;
    for (panel, file) in DRAWN {
        let q = queries
            .iter()
            .find(|q| q.panel == panel)
            .with_context(|| format!("no panel {panel:?}"))?;
        let expr = substitute(&q.expr, values);
        let url = format!(
            "http://{}/classic/graph?g0.expr={}&g0.tab=0&g0.range_input=10s",
            prom.addr(),
            encode(&expr)
        );
        let png = dir.join(file);
        chromium::screenshot(&url, 5000, &png).await?;
        let bytes = std::fs::read(&png)?;
        assert!(
            bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
            "{panel}: not a screenshot ({} bytes)",
            bytes.len()
        );
    }
    Ok(())
}
