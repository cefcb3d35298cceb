//! The mirror's metrics: what became of each mirrored request, how its answer compared, and
//! the largest numeric difference; and the admin's sample of recent mismatches.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::Name;

/// How many recent mismatches `/mirror` keeps (process-wide, newest last).
pub const MISMATCH_SAMPLES: usize = 64;

/// Labels of a mirror (a route and its candidate cluster).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct MirrorLabels {
    /// Listener name.
    pub listener: Name,
    /// Route name.
    pub route: Name,
    /// The candidate cluster.
    pub cluster: Name,
}

/// Labels of a mirrored request's fate.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct MirrorOutcomeLabels {
    /// Listener name.
    pub listener: Name,
    /// Route name.
    pub route: Name,
    /// The candidate cluster.
    pub cluster: Name,
    /// `answered`, `error_status`, `failed`, `timeout`, `overflow`, `too_large`, `cancelled`.
    pub outcome: &'static str,
}

/// Labels of a comparison's result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct MirrorCompareLabels {
    /// Listener name.
    pub listener: Name,
    /// Route name.
    pub route: Name,
    /// The candidate cluster.
    pub cluster: Name,
    /// `match`, `mismatch`, `error`, `skipped`.
    pub result: &'static str,
}

/// Labels of an argmax check.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct MirrorArgmaxLabels {
    /// Listener name.
    pub listener: Name,
    /// Route name.
    pub route: Name,
    /// The candidate cluster.
    pub cluster: Name,
    /// `agree` or `disagree`.
    pub result: &'static str,
}

/// One recent mismatch, as `/mirror` shows it.
#[derive(Debug, Clone)]
pub struct MismatchSample {
    /// Seconds since the Unix epoch.
    pub at: f64,
    /// Listener name.
    pub listener: String,
    /// Route name.
    pub route: String,
    /// The candidate cluster.
    pub cluster: String,
    /// The request's `x-request-id`.
    pub request_id: String,
    /// The output tensor (or JSON pointer, or `(status)`).
    pub tensor: String,
    /// The element's flat index, when the difference is in an element.
    pub index: Option<usize>,
    /// The primary's value.
    pub primary: String,
    /// The candidate's value.
    pub candidate: String,
    /// Elements that differed in this answer.
    pub count: usize,
}

/// The mirror's metric families and the mismatch sample.
#[derive(Debug)]
pub struct MirrorMetrics {
    /// `ferry_mirror_total`.
    pub total: Family<MirrorOutcomeLabels, Counter>,
    /// `ferry_mirror_compare_total`.
    pub compare: Family<MirrorCompareLabels, Counter>,
    /// `ferry_mirror_argmax_total`.
    pub argmax: Family<MirrorArgmaxLabels, Counter>,
    /// `ferry_mirror_max_abs_diff`.
    pub max_abs_diff: Family<MirrorLabels, Histogram, fn() -> Histogram>,
    /// Recent mismatches.
    pub samples: MismatchSamples,
}

/// Recent mismatches, newest last, at most [`MISMATCH_SAMPLES`]; shared by every mirror.
#[derive(Debug, Clone, Default)]
pub struct MismatchSamples(Arc<Mutex<VecDeque<MismatchSample>>>);

// === impl MirrorMetrics ===

impl Default for MirrorMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl MirrorMetrics {
    /// Empty families.
    pub fn new() -> Self {
        MirrorMetrics {
            total: Family::default(),
            compare: Family::default(),
            argmax: Family::default(),
            max_abs_diff: Family::new_with_constructor(diff_histogram),
            samples: MismatchSamples::default(),
        }
    }

    /// Registers the families.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "ferry_mirror",
            "Requests chosen for mirroring, by what became of the copy sent to the candidate",
            self.total.clone(),
        );
        registry.register(
            "ferry_mirror_compare",
            "Candidate answers compared with the primary's: match, mismatch, error (unreadable), skipped (an answer over max_body or unfinished)",
            self.compare.clone(),
        );
        registry.register(
            "ferry_mirror_argmax",
            "Classification outputs whose per-row argmax agreed or disagreed",
            self.argmax.clone(),
        );
        registry.register(
            "ferry_mirror_max_abs_diff",
            "Largest absolute difference between the candidate's and the primary's numeric elements, per compared answer",
            self.max_abs_diff.clone(),
        );
    }
}

// === impl MismatchSamples ===

impl MismatchSamples {
    /// Keeps `sample`, dropping the oldest beyond [`MISMATCH_SAMPLES`].
    pub fn keep(&self, sample: MismatchSample) {
        if let Ok(mut s) = self.0.lock() {
            if s.len() == MISMATCH_SAMPLES {
                s.pop_front();
            }
            s.push_back(sample);
        }
    }

    /// `/mirror`: the recent mismatches as JSON.
    pub fn json(&self) -> String {
        let list: Vec<serde_json::Value> = self
            .0
            .lock()
            .map(|s| s.iter().map(MismatchSample::json).collect())
            .unwrap_or_default();
        serde_json::json!({ "mismatches": list, "kept": MISMATCH_SAMPLES }).to_string()
    }
}

// === impl MismatchSample ===

impl MismatchSample {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "at": self.at,
            "listener": self.listener,
            "route": self.route,
            "cluster": self.cluster,
            "request_id": self.request_id,
            "tensor": self.tensor,
            "index": self.index,
            "primary": self.primary,
            "candidate": self.candidate,
            "count": self.count,
        })
    }
}

fn diff_histogram() -> Histogram {
    // 1e-9 .. 1e3 in decades: float noise, tolerances, real disagreements.
    Histogram::new(exponential_buckets(1e-9, 10.0, 13))
}
