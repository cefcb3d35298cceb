//! The objects injected into a pod: the ferry container and its volumes.
//!
//! Built as JSON values so the same bytes come out of the CLI (YAML) and the webhook (JSONPatch).

use serde_json::{Value, json};

use crate::{
    annotations::{PodAnnotations, Protocol},
    settings::{SidecarArgs, WorkloadCerts, ports},
};

/// Name of the injected container.
pub const CONTAINER_NAME: &str = "ferry";
/// Volume carrying the route config.
pub const CONFIG_VOLUME: &str = "ferry-config";
/// Volume carrying the workload certificate.
pub const CERTS_VOLUME: &str = "ferry-certs";
/// Where the route config is mounted; ferry reads `config.yaml` there.
pub const CONFIG_DIR: &str = "/etc/ferry";
/// Where the workload certificate is mounted (`tls.crt`, `tls.key`, `ca.crt`).
pub const CERTS_DIR: &str = "/var/run/ferry";

/// Resolved choices for one pod: flags overridden by the pod's annotations.
#[derive(Debug)]
pub(crate) struct Sidecar<'a> {
    pub(crate) args: &'a SidecarArgs,
    pub(crate) annotations: &'a PodAnnotations,
    pub(crate) model_ports: Vec<u16>,
}

// === impl Sidecar ===

impl Sidecar<'_> {
    /// The ferry container. `native` adds `restartPolicy: Always` (it goes into
    /// `initContainers`); otherwise lifecycle hooks order start-up and shutdown.
    pub(crate) fn container(&self) -> Value {
        let native = self.annotations.native_sidecar;
        let mut c = json!({
            "name": CONTAINER_NAME,
            "image": self.args.image,
            "imagePullPolicy": self.args.image_pull_policy,
            "args": ["run", "--config", format!("{CONFIG_DIR}/config.yaml")],
        });
        let obj = c.as_object_mut();
        let Some(obj) = obj else { return c };
        if native {
            obj.insert("restartPolicy".into(), json!("Always"));
        }
        obj.insert(
            "ports".into(),
            json!([
                {"name": "ferry-inbound", "containerPort": ports::INBOUND, "protocol": "TCP"},
                {"name": "ferry-admin", "containerPort": ports::ADMIN, "protocol": "TCP"},
            ]),
        );
        obj.insert("env".into(), Value::Array(self.env()));
        obj.insert("resources".into(), self.resources());
        obj.insert("volumeMounts".into(), self.volume_mounts());
        // Startup probe gates the other probes; it allows a slow first config load without a
        // long liveness delay.
        obj.insert("startupProbe".into(), probe("/ready", 1, 120));
        obj.insert("readinessProbe".into(), probe("/ready", 5, 3));
        obj.insert("livenessProbe".into(), probe("/live", 10, 3));
        if !native {
            obj.insert("lifecycle".into(), self.legacy_lifecycle());
        }
        obj.insert(
            "securityContext".into(),
            json!({
                "runAsUser": self.args.proxy_uid,
                "runAsGroup": self.args.proxy_uid,
                "runAsNonRoot": true,
                "allowPrivilegeEscalation": false,
                "readOnlyRootFilesystem": true,
                "capabilities": {"drop": ["ALL"]},
            }),
        );
        c
    }

    /// Volumes the container mounts.
    pub(crate) fn volumes(&self) -> Vec<Value> {
        let config_map = self
            .annotations
            .config_map
            .as_deref()
            .unwrap_or(&self.args.config_map);
        let mut volumes = vec![json!({"name": CONFIG_VOLUME, "configMap": {"name": config_map}})];
        if self.args.workload_certs == WorkloadCerts::CertManagerCsi {
            // The CSI driver substitutes ${...} per pod, so each pod gets its own SPIFFE ID.
            let spiffe = format!(
                "spiffe://{}/ns/${{POD_NAMESPACE}}/sa/${{SERVICE_ACCOUNT_NAME}}",
                self.args.trust_domain
            );
            volumes.push(json!({
                "name": CERTS_VOLUME,
                "csi": {
                    "driver": "csi.cert-manager.io",
                    "readOnly": true,
                    "volumeAttributes": {
                        "csi.cert-manager.io/issuer-name": self.args.cert_issuer,
                        "csi.cert-manager.io/issuer-kind": self.args.cert_issuer_kind,
                        "csi.cert-manager.io/uri-sans": spiffe,
                        "csi.cert-manager.io/common-name": "${SERVICE_ACCOUNT_NAME}.${POD_NAMESPACE}",
                        "csi.cert-manager.io/fs-group": self.args.proxy_uid.to_string(),
                    },
                },
            }));
        }
        volumes
    }

    fn volume_mounts(&self) -> Value {
        let mut mounts =
            vec![json!({"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR, "readOnly": true})];
        if self.args.workload_certs == WorkloadCerts::CertManagerCsi {
            mounts.push(json!({"name": CERTS_VOLUME, "mountPath": CERTS_DIR, "readOnly": true}));
        }
        Value::Array(mounts)
    }

    fn env(&self) -> Vec<Value> {
        let field = |name: &str, path: &str| json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}});
        let mut env = vec![
            field("POD_NAME", "metadata.name"),
            field("POD_NAMESPACE", "metadata.namespace"),
            field("SERVICE_ACCOUNT", "spec.serviceAccountName"),
            json!({"name": "FERRY_TRUST_DOMAIN", "value": self.args.trust_domain}),
            json!({"name": "FERRY_LOG_LEVEL", "value": self.annotations.log_level.as_deref().unwrap_or(&self.args.log_level)}),
        ];
        if !self.model_ports.is_empty() {
            let list: Vec<String> = self.model_ports.iter().map(u16::to_string).collect();
            env.push(json!({"name": "FERRY_MODEL_PORTS", "value": list.join(",")}));
        }
        let protocol = self.annotations.protocol.map(Protocol::as_str);
        if let Some(p) = protocol {
            env.push(json!({"name": "FERRY_MODEL_PROTOCOL", "value": p}));
        }
        let tracing = self
            .annotations
            .tracing_endpoint
            .as_deref()
            .or(self.args.tracing_endpoint.as_deref());
        if let Some(endpoint) = tracing {
            env.push(json!({"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": endpoint}));
            // The workload's name, so a trace reads "caller -> model" rather than
            // "ferry -> ferry"; without an app label ferry names itself "ferry" and the pod
            // attributes below still tell the sidecars apart.
            if let Some(app) = &self.annotations.app_name {
                env.push(json!({"name": "OTEL_SERVICE_NAME", "value": app}));
            }
            // $(VAR) is expanded by the kubelet from the variables defined above. The
            // container name tells the sidecar's spans from the app's when both report under
            // the app's service name.
            env.push(json!({
                "name": "OTEL_RESOURCE_ATTRIBUTES",
                "value": format!(
                    "k8s.pod.name=$(POD_NAME),k8s.namespace.name=$(POD_NAMESPACE),k8s.container.name={CONTAINER_NAME}"
                ),
            }));
        }
        env
    }

    fn resources(&self) -> Value {
        let a = self.annotations;
        let cpu_request = a.cpu_request.as_deref().unwrap_or(&self.args.cpu_request);
        let memory_request = a
            .memory_request
            .as_deref()
            .unwrap_or(&self.args.memory_request);
        let memory_limit = a.memory_limit.as_deref().unwrap_or(&self.args.memory_limit);
        let cpu_limit = a.cpu_limit.as_deref().or(self.args.cpu_limit.as_deref());
        let mut limits = json!({"memory": memory_limit});
        if let (Some(cpu), Some(l)) = (cpu_limit, limits.as_object_mut()) {
            l.insert("cpu".into(), json!(cpu));
        }
        json!({"requests": {"cpu": cpu_request, "memory": memory_request}, "limits": limits})
    }

    /// Legacy ordering: the kubelet runs a container's postStart to completion before starting
    /// the next container, so `ferry wait-ready` in the first container holds the model back
    /// until ferry serves. On shutdown every container gets SIGTERM at once; the preStop sleep
    /// keeps ferry up while the model finishes its in-flight requests.
    fn legacy_lifecycle(&self) -> Value {
        let drain = self.args.drain.as_secs().max(1);
        json!({
            "postStart": {"exec": {"command": [
                "ferry", "wait-ready", "--admin", format!("127.0.0.1:{}", ports::ADMIN), "--timeout", "120s"
            ]}},
            "preStop": {"sleep": {"seconds": drain}},
        })
    }
}

fn probe(path: &str, period: u32, failures: u32) -> Value {
    json!({
        "httpGet": {"path": path, "port": ports::ADMIN},
        "periodSeconds": period,
        "failureThreshold": failures,
    })
}
