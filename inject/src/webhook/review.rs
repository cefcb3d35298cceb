//! AdmissionReview `admission.k8s.io/v1` handling, independent of HTTP.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::{
    object::inject_object,
    pod::{PodOutcome, Selection},
    settings::SidecarArgs,
};

/// The only AdmissionReview version Kubernetes ≥ 1.22 sends and ferry accepts.
pub const API_VERSION: &str = "admission.k8s.io/v1";

/// How one review ended, for metrics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewResult {
    /// A patch adding the sidecar was returned.
    Injected,
    /// The object did not need injection (opted out, already injected, not a workload, not a
    /// CREATE).
    Skipped,
    /// Injection was refused for this object (e.g. a port conflict); allowed with a warning.
    Failed,
    /// The review itself was unusable; allowed with a warning.
    Malformed,
}

impl ReviewResult {
    /// Metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Injected => "injected",
            Self::Skipped => "skipped",
            Self::Failed => "failed",
            Self::Malformed => "malformed",
        }
    }
}

/// Answers one AdmissionReview body. Returns the response review and how it ended.
pub fn review(body: &[u8], sidecar: &SidecarArgs) -> (Value, ReviewResult) {
    let request: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return malformed("", &format!("body is not JSON: {e}")),
    };
    let uid = request
        .pointer("/request/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let api_version = request
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    if api_version != API_VERSION
        || request.get("kind").and_then(Value::as_str) != Some("AdmissionReview")
    {
        return malformed(
            uid,
            &format!(
                "unsupported review {api_version:?} (expected kind AdmissionReview, apiVersion {API_VERSION})"
            ),
        );
    }
    if uid.is_empty() {
        return malformed(uid, "request.uid is missing");
    }
    let operation = request
        .pointer("/request/operation")
        .and_then(Value::as_str);
    if operation != Some("CREATE") {
        return (respond(uid, None, &[]), ReviewResult::Skipped);
    }
    let Some(original) = request.pointer("/request/object").filter(|o| o.is_object()) else {
        return malformed(uid, "request.object is missing or not an object");
    };

    let mut object = original.clone();
    // The webhook's selectors already chose this pod, so only an explicit opt-out skips it.
    let reports = inject_object(&mut object, sidecar, Selection::AllButOptedOut);
    let mut warnings = Vec::new();
    let mut result = ReviewResult::Skipped;
    for report in &reports {
        match &report.result {
            Ok(PodOutcome::Injected { warnings: w, .. }) => {
                result = ReviewResult::Injected;
                warnings.extend(w.iter().map(|w| format!("ferry: {}: {w}", report.object)));
            }
            Ok(PodOutcome::Skipped(_)) => {}
            Err(e) => warnings.push(format!(
                "ferry: sidecar not injected into {}: {e}",
                report.object
            )),
        }
    }
    if reports.iter().any(|r| r.result.is_err()) && result != ReviewResult::Injected {
        result = ReviewResult::Failed;
    }
    let patch = (result == ReviewResult::Injected).then(|| json_patch::diff(original, &object));
    (respond(uid, patch.as_ref(), &warnings), result)
}

fn malformed(uid: &str, problem: &str) -> (Value, ReviewResult) {
    let warning =
        format!("ferry injector: malformed admission review, allowed unchanged: {problem}");
    (respond(uid, None, &[warning]), ReviewResult::Malformed)
}

fn respond(uid: &str, patch: Option<&json_patch::Patch>, warnings: &[String]) -> Value {
    let mut response = json!({"uid": uid, "allowed": true});
    if let (Some(patch), Some(obj)) = (patch, response.as_object_mut()) {
        let bytes = serde_json::to_vec(patch).unwrap_or_default();
        obj.insert("patchType".into(), json!("JSONPatch"));
        obj.insert(
            "patch".into(),
            json!(base64::engine::general_purpose::STANDARD.encode(bytes)),
        );
    }
    if let (false, Some(obj)) = (warnings.is_empty(), response.as_object_mut()) {
        obj.insert("warnings".into(), json!(warnings));
    }
    json!({"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response})
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        sidecar: SidecarArgs,
    }

    fn sidecar() -> SidecarArgs {
        Cli::parse_from(["x"]).sidecar
    }

    #[test]
    fn garbage_is_allowed_with_warning() {
        let (resp, result) = review(b"{not json", &sidecar());
        assert_eq!(result, ReviewResult::Malformed);
        assert_eq!(resp["response"]["allowed"], true);
        assert!(
            resp["response"]["warnings"][0]
                .as_str()
                .unwrap()
                .contains("not JSON")
        );
    }

    #[test]
    fn old_version_is_allowed_with_warning() {
        let body = json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                          "request": {"uid": "u1"}});
        let (resp, result) = review(body.to_string().as_bytes(), &sidecar());
        assert_eq!(result, ReviewResult::Malformed);
        assert_eq!(resp["response"]["uid"], "u1");
        assert!(resp["response"].get("patch").is_none());
    }

    #[test]
    fn update_is_not_patched() {
        let body = json!({"apiVersion": API_VERSION, "kind": "AdmissionReview",
                          "request": {"uid": "u2", "operation": "UPDATE", "object": {"kind": "Pod"}}});
        let (resp, result) = review(body.to_string().as_bytes(), &sidecar());
        assert_eq!(result, ReviewResult::Skipped);
        assert_eq!(resp["response"], json!({"uid": "u2", "allowed": true}));
    }
}
