//! The injector's Prometheus metrics, served as text on `/metrics`.

use prometheus_client::{
    encoding::text::encode,
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::Registry,
};

use super::review::ReviewResult;

type ResultLabel = [(&'static str, &'static str); 1];

/// Counters and histograms of the injector; cheap to clone handles live inside.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reviews: Family<ResultLabel, Counter>,
    review_seconds: Histogram,
    cert_reloads: Family<ResultLabel, Counter>,
}

// === impl Metrics ===

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("ferry_injector");
        let reviews = Family::<ResultLabel, Counter>::default();
        registry.register(
            "admission_reviews",
            "AdmissionReviews answered, by result",
            reviews.clone(),
        );
        let review_seconds = Histogram::new([0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0]);
        registry.register(
            "admission_review_duration_seconds",
            "Time to answer an AdmissionReview",
            review_seconds.clone(),
        );
        let cert_reloads = Family::<ResultLabel, Counter>::default();
        registry.register(
            "certificate_reloads",
            "Serving certificate reloads after the files changed, by result",
            cert_reloads.clone(),
        );
        // Pre-create every label set so dashboards see zeros, not gaps.
        for r in [
            ReviewResult::Injected,
            ReviewResult::Skipped,
            ReviewResult::Failed,
            ReviewResult::Malformed,
        ] {
            let _ = reviews.get_or_create(&[("result", r.as_str())]);
        }
        for r in ["ok", "error"] {
            let _ = cert_reloads.get_or_create(&[("result", r)]);
        }
        Self {
            registry,
            reviews,
            review_seconds,
            cert_reloads,
        }
    }

    /// Counts one answered review.
    pub fn review(&self, result: ReviewResult, seconds: f64) {
        self.reviews
            .get_or_create(&[("result", result.as_str())])
            .inc();
        self.review_seconds.observe(seconds);
    }

    /// Counts one certificate reload attempt.
    pub fn cert_reload(&self, ok: bool) {
        let result = if ok { "ok" } else { "error" };
        self.cert_reloads.get_or_create(&[("result", result)]).inc();
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}
