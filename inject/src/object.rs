//! Finding the pod template(s) inside a Kubernetes object, by kind.

use serde_json::Value;

use crate::{
    annotations,
    error::ObjectError,
    pod::{self, PodOutcome, Selection},
    settings::SidecarArgs,
};

/// The result for one pod template, named for the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectReport {
    /// `Kind/namespace/name`, or `Kind/name` without a namespace; `List` items are prefixed with
    /// their index.
    pub object: String,
    /// What happened.
    pub result: Result<PodOutcome, ObjectError>,
}

/// Where the pod template lives in each supported kind.
fn template_path(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Pod" => Some(&[]),
        "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "ReplicaSet"
        | "ReplicationController"
        | "Job" => Some(&["spec", "template"]),
        "CronJob" => Some(&["spec", "jobTemplate", "spec", "template"]),
        _ => None,
    }
}

/// Injects into every pod template of `object` (recursing into `List` items). Objects without
/// a pod template pass through unreported, unless they ask for injection. A template that fails
/// is left exactly as it was.
pub fn inject_object(
    object: &mut Value,
    args: &SidecarArgs,
    selection: Selection,
) -> Vec<ObjectReport> {
    let mut reports = Vec::new();
    visit(object, args, selection, "", &mut reports);
    reports
}

fn visit(
    object: &mut Value,
    args: &SidecarArgs,
    selection: Selection,
    prefix: &str,
    reports: &mut Vec<ObjectReport>,
) {
    let Some(map) = object.as_object() else {
        if !object.is_null() {
            let what = format!(
                "expected a mapping with apiVersion and kind, found {}",
                type_name(object)
            );
            reports.push(ObjectReport {
                object: format!("{prefix}<document>"),
                result: Err(ObjectError::NotAnObject(what)),
            });
        }
        return;
    };
    let name = object_name(map);
    let object_label = format!("{prefix}{name}");
    let kind = map.get("kind").and_then(Value::as_str).map(str::to_owned);
    let Some(kind) = kind else {
        reports.push(ObjectReport {
            object: object_label,
            result: Err(ObjectError::NotAnObject("no kind".into())),
        });
        return;
    };
    if kind == "List" || (kind.ends_with("List") && map.get("items").is_some_and(Value::is_array)) {
        if let Some(items) = object.get_mut("items").and_then(Value::as_array_mut) {
            for (i, item) in items.iter_mut().enumerate() {
                visit(
                    item,
                    args,
                    selection,
                    &format!("{object_label}[{i}] "),
                    reports,
                );
            }
        }
        return;
    }
    let Some(path) = template_path(&kind) else {
        if asks_for_injection(object) {
            reports.push(ObjectReport {
                object: object_label,
                result: Err(ObjectError::UnsupportedKind { kind }),
            });
        }
        return;
    };
    let result = inject_template(object, path, args, selection);
    reports.push(ObjectReport {
        object: object_label,
        result,
    });
}

fn inject_template(
    object: &mut Value,
    path: &[&str],
    args: &SidecarArgs,
    selection: Selection,
) -> Result<PodOutcome, ObjectError> {
    let mut template = &mut *object;
    for (depth, key) in path.iter().enumerate() {
        template = template
            .get_mut(*key)
            .filter(|v| v.is_object())
            .ok_or_else(|| ObjectError::Malformed {
                path: path[..=depth].join("."),
                problem: "missing or not a mapping".into(),
            })?;
    }
    let template = template
        .as_object_mut()
        .ok_or_else(|| ObjectError::Malformed {
            path: path.join("."),
            problem: "not a mapping".into(),
        })?;
    let mut metadata = template.get("metadata").cloned().unwrap_or(Value::Null);
    let Some(mut spec) = template.get("spec").cloned() else {
        let at = if path.is_empty() {
            "spec".to_owned()
        } else {
            format!("{}.spec", path.join("."))
        };
        return Err(ObjectError::Malformed {
            path: at,
            problem: "missing pod spec".into(),
        });
    };
    // Work on copies so a failure leaves the object untouched.
    let outcome = pod::inject_pod(&mut metadata, &mut spec, args, selection)?;
    if matches!(outcome, PodOutcome::Injected { .. }) {
        template.insert("metadata".into(), metadata);
        template.insert("spec".into(), spec);
    }
    Ok(outcome)
}

/// An unknown kind with a pod template that opts in (e.g. an Argo Rollout) deserves an error
/// rather than silence; a labelled Namespace is only scope for the webhook.
fn asks_for_injection(object: &Value) -> bool {
    let enabled = |meta: Option<&Value>| {
        annotations::read(meta).is_ok_and(|a| a.opt_in == annotations::OptIn::Enabled)
    };
    object
        .pointer("/spec/template")
        .is_some_and(Value::is_object)
        && (enabled(object.get("metadata")) || enabled(object.pointer("/spec/template/metadata")))
}

fn object_name(map: &serde_json::Map<String, Value>) -> String {
    let kind = map
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("<no kind>");
    let meta = map.get("metadata");
    let field = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str);
    let name = field("name")
        .or_else(|| field("generateName"))
        .unwrap_or("<unnamed>");
    match field("namespace") {
        Some(ns) => format!("{kind}/{ns}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}
