//! Injection into one pod template: the single code path behind both the CLI and the webhook.

use serde_json::{Map, Value, json};

use crate::{
    annotations::{self, OptIn, PodAnnotations},
    error::ObjectError,
    redirect::{self, RedirectMode, RedirectRules},
    settings::{SidecarArgs, ports},
    sidecar::{self, Sidecar},
};

/// Whether pods that say nothing get injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// Only pods with `ferry.dev/inject: enabled` (the CLI default).
    OptedIn,
    /// Every pod not opted out: a namespace labelled `ferry.dev/inject=enabled`, or the webhook,
    /// whose selectors already decided the pod is in scope.
    AllButOptedOut,
}

/// Why a pod template was left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// No opt-in annotation or label.
    NotOptedIn,
    /// `ferry.dev/inject: disabled`.
    OptedOut,
    /// Carries `ferry.dev/injected` or already has a `ferry` container.
    AlreadyInjected,
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::NotOptedIn => "not opted in (no ferry.dev/inject: enabled)",
            Self::OptedOut => "opted out (ferry.dev/inject: disabled)",
            Self::AlreadyInjected => "already injected",
        })
    }
}

/// What happened to one pod template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodOutcome {
    /// The sidecar was added.
    Injected {
        /// Native sidecar (init container) or legacy container.
        native: bool,
        /// How traffic reaches the sidecar.
        redirect: RedirectMode,
        /// Ports ferry forwards to.
        model_ports: Vec<u16>,
        /// Things worth telling the operator that did not stop injection.
        warnings: Vec<String>,
    },
    /// Nothing was changed.
    Skipped(SkipReason),
}

/// Injects the sidecar into a pod template given as its `metadata` and `spec` (either may be
/// absent in a template; `metadata` is created when injecting). On error nothing is changed.
pub fn inject_pod(
    metadata: &mut Value,
    spec: &mut Value,
    args: &SidecarArgs,
    selection: Selection,
) -> Result<PodOutcome, ObjectError> {
    let ann = annotations::read(Some(&*metadata))?;
    match (ann.opt_in, selection) {
        (OptIn::Disabled, _) => return Ok(PodOutcome::Skipped(SkipReason::OptedOut)),
        (OptIn::Unset, Selection::OptedIn) => {
            return Ok(PodOutcome::Skipped(SkipReason::NotOptedIn));
        }
        _ => {}
    }
    let spec_obj = spec
        .as_object_mut()
        .ok_or_else(|| malformed("spec", "not a mapping"))?;
    if ann.injected || has_ferry_container(spec_obj) {
        return Ok(PodOutcome::Skipped(SkipReason::AlreadyInjected));
    }
    if spec_obj.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        return Err(malformed(
            "spec.hostNetwork",
            "pods on the host network cannot be injected: ferry's ports would collide on the node",
        ));
    }
    check_port_conflicts(spec_obj, &ann)?;
    check_volume_names(spec_obj)?;
    let model_ports = ann
        .ports
        .clone()
        .unwrap_or_else(|| container_ports(spec_obj));
    let mut warnings: Vec<String> = ann
        .unknown
        .iter()
        .map(|k| format!("unknown annotation {k} ignored"))
        .collect();
    if model_ports.is_empty() {
        warnings.push(
            "no model server port found (no containerPort, no ferry.dev/ports): ferry handles outbound traffic only"
                .into(),
        );
    }

    let redirect = ann.redirect.unwrap_or(args.redirect);
    warnings.extend(redirect_warnings(spec_obj, &ann, args, redirect));

    let sidecar = Sidecar {
        args,
        annotations: &ann,
        model_ports: model_ports.clone(),
    };
    let first_app_container = first_container_name(spec_obj);
    let list = if ann.native_sidecar {
        "initContainers"
    } else {
        "containers"
    };
    array_field(spec_obj, list)?.insert(0, sidecar.container());
    if redirect == RedirectMode::Iptables {
        // First of all: the rules must be in place before ferry or anything else opens a
        // connection, and they need nothing from ferry.
        let rules = RedirectRules::new(
            args.proxy_uid,
            &ann.exclude_inbound_ports,
            &ann.exclude_outbound_ports,
        );
        array_field(spec_obj, "initContainers")?.insert(0, rules.init_container(args));
    }
    array_field(spec_obj, "volumes")?.extend(sidecar.volumes());

    mark_injected(metadata, &ann, first_app_container)?;
    Ok(PodOutcome::Injected {
        native: ann.native_sidecar,
        redirect,
        model_ports,
        warnings,
    })
}

fn malformed(path: &str, problem: &str) -> ObjectError {
    ObjectError::Malformed {
        path: path.to_owned(),
        problem: problem.to_owned(),
    }
}

fn containers(spec: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers"]
        .into_iter()
        .filter_map(|k| spec.get(k).and_then(Value::as_array))
        .flatten()
}

fn has_ferry_container(spec: &Map<String, Value>) -> bool {
    containers(spec).any(|c| {
        let name = c.get("name").and_then(Value::as_str);
        name == Some(sidecar::CONTAINER_NAME) || name == Some(redirect::INIT_CONTAINER_NAME)
    })
}

/// Things that make a redirect setting do less than the pod probably expects.
fn redirect_warnings(
    spec: &Map<String, Value>,
    ann: &PodAnnotations,
    args: &SidecarArgs,
    mode: RedirectMode,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if mode == RedirectMode::Ports {
        for (key, ports) in [
            (
                annotations::REDIRECT_EXCLUDE_INBOUND,
                &ann.exclude_inbound_ports,
            ),
            (
                annotations::REDIRECT_EXCLUDE_OUTBOUND,
                &ann.exclude_outbound_ports,
            ),
        ] {
            if !ports.is_empty() {
                warnings.push(format!("{key} ignored: the redirect mode is ports"));
            }
        }
        return warnings;
    }
    // The outbound rules exempt ferry's UID; an app running as that UID would bypass ferry.
    let uid = |sc: Option<&Value>| sc?.get("runAsUser")?.as_i64();
    let pod_uid = uid(spec.get("securityContext"));
    let app = spec
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for c in app {
        if uid(c.get("securityContext")).or(pod_uid) == Some(args.proxy_uid) {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("<unnamed>");
            warnings.push(format!(
                "container {name:?} runs as UID {}, ferry's UID: its outbound traffic is not redirected",
                args.proxy_uid
            ));
        }
    }
    let has_init = spec
        .get("initContainers")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if !ann.native_sidecar && has_init {
        warnings.push(
            "init containers run after ferry-init but before the legacy sidecar starts: their outbound TCP is redirected to a proxy that is not there yet"
                .into(),
        );
    }
    warnings
}

fn first_container_name(spec: &Map<String, Value>) -> Option<String> {
    spec.get("containers")?
        .as_array()?
        .first()?
        .get("name")?
        .as_str()
        .map(str::to_owned)
}

fn check_volume_names(spec: &Map<String, Value>) -> Result<(), ObjectError> {
    let volumes = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for name in volumes.filter_map(|v| v.get("name").and_then(Value::as_str)) {
        if name == sidecar::CONFIG_VOLUME || name == sidecar::CERTS_VOLUME {
            return Err(malformed(
                "spec.volumes",
                &format!("volume name {name:?} is reserved for the ferry sidecar"),
            ));
        }
    }
    Ok(())
}

fn check_port_conflicts(
    spec: &Map<String, Value>,
    ann: &PodAnnotations,
) -> Result<(), ObjectError> {
    let role = |port: u16| {
        ports::RESERVED
            .iter()
            .find(|(p, _)| *p == port)
            .map(|(_, r)| *r)
    };
    for c in containers(spec) {
        let name = c.get("name").and_then(Value::as_str).unwrap_or("<unnamed>");
        for p in c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for key in ["containerPort", "hostPort"] {
                let port = p
                    .get(key)
                    .and_then(Value::as_u64)
                    .and_then(|n| u16::try_from(n).ok());
                if let Some((port, role)) = port.and_then(|port| role(port).map(|r| (port, r))) {
                    return Err(ObjectError::PortConflict {
                        container: name.to_owned(),
                        port,
                        role,
                    });
                }
            }
        }
    }
    for port in ann.ports.iter().flatten() {
        if let Some(role) = role(*port) {
            return Err(ObjectError::PortConflict {
                container: annotations::PORTS.to_owned(),
                port: *port,
                role,
            });
        }
    }
    Ok(())
}

/// TCP container ports of the app containers, in order, without duplicates.
fn container_ports(spec: &Map<String, Value>) -> Vec<u16> {
    let mut out = Vec::new();
    let app = spec
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for p in app
        .filter_map(|c| c.get("ports").and_then(Value::as_array))
        .flatten()
    {
        let tcp = p
            .get("protocol")
            .and_then(Value::as_str)
            .is_none_or(|proto| proto == "TCP");
        let port = p
            .get("containerPort")
            .and_then(Value::as_u64)
            .and_then(|n| u16::try_from(n).ok());
        if let (true, Some(port)) = (tcp, port)
            && !out.contains(&port)
        {
            out.push(port);
        }
    }
    out
}

fn array_field<'a>(
    spec: &'a mut Map<String, Value>,
    key: &str,
) -> Result<&'a mut Vec<Value>, ObjectError> {
    let slot = spec.entry(key).or_insert_with(|| json!([]));
    if slot.is_null() {
        *slot = json!([]);
    }
    slot.as_array_mut()
        .ok_or_else(|| malformed(&format!("spec.{key}"), "not a list"))
}

fn mark_injected(
    metadata: &mut Value,
    ann: &PodAnnotations,
    first_app_container: Option<String>,
) -> Result<(), ObjectError> {
    if metadata.is_null() {
        *metadata = json!({});
    }
    let meta = metadata
        .as_object_mut()
        .ok_or_else(|| malformed("metadata", "not a mapping"))?;
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if annotations.is_null() {
        *annotations = json!({});
    }
    let annotations = annotations
        .as_object_mut()
        .ok_or_else(|| malformed("metadata.annotations", "not a mapping"))?;
    let mode = if ann.native_sidecar {
        "native-sidecar"
    } else {
        "container"
    };
    annotations.insert(annotations::INJECTED.into(), json!(mode));
    // With a legacy sidecar ferry is the first container, which `kubectl logs/exec` would pick
    // by default; point them at the model instead.
    if let Some(name) = first_app_container {
        annotations
            .entry("kubectl.kubernetes.io/default-container")
            .or_insert_with(|| json!(name));
    }
    Ok(())
}
