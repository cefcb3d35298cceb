{{/*
The default route config every injected sidecar loads from /etc/ferry/config.yaml, in the
ferry route config format (examples/full.yaml). Admin listens on all addresses because the
kubelet's probes come from outside the pod's loopback.

Tracing (docs/tracing.md): a non-empty mesh.tracingEndpoint adds the `tracing` block with the
protocol, propagation and sampling ratio. The block names no endpoint and no service name: the
sidecar takes them from OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_SERVICE_NAME, which the injector
sets (the endpoint from mesh.tracingEndpoint, or a pod's ferry.dev/tracing-endpoint
annotation; the name from the pod's app label), together with OTEL_RESOURCE_ATTRIBUTES (pod,
namespace, container), so one ConfigMap serves every pod and the annotation keeps working.

Mutual TLS (docs/security.md) needs the per-pod certificate the injector mounts at
/var/run/ferry (inject/src/sidecar.rs CERTS_DIR) only in mesh.workloadCerts.mode
cert-manager-csi; without it the config has no identity and no TLS at all, whatever mesh.mtls
says (ferry refuses TLS listeners and mesh clusters without an identity).

Outbound: authorities listed in mesh.meshedHosts go to the `meshed` cluster, which opens mutual
TLS to the destination's inbound listener (the Service targets 15006, or iptables redirects to
it) and checks its SPIFFE ID is in the trust domain. Everything else keeps the plaintext
`by-authority` passthrough, so non-mesh destinations work as before.
*/}}
{{- define "ferry.meshTls" -}}
{{- if eq .Values.mesh.workloadCerts.mode "cert-manager-csi" -}}
{{- .Values.mesh.mtls -}}
{{- else -}}
disabled
{{- end -}}
{{- end -}}

{{/*
Value combinations that would render a mesh that cannot work; checked wherever the mesh config
is rendered, so `helm template`, `helm install` and `helm lint` all stop with the reason.
*/}}
{{- define "ferry.meshChecks" -}}
{{- $certs := eq .Values.mesh.workloadCerts.mode "cert-manager-csi" -}}
{{- if and (not $certs) (eq .Values.mesh.mtls "strict") -}}
{{- fail "mesh.mtls: strict needs workload certificates (mesh.workloadCerts.mode: cert-manager-csi); with mode none the sidecars have no identity and speak plaintext only" -}}
{{- end -}}
{{- if and (not $certs) .Values.mesh.meshedHosts -}}
{{- fail "mesh.meshedHosts needs workload certificates (mesh.workloadCerts.mode: cert-manager-csi); with mode none the sidecars have no identity to present" -}}
{{- end -}}
{{- if and (eq .Values.mesh.mtls "disabled") .Values.mesh.meshedHosts -}}
{{- fail "mesh.meshedHosts needs mesh.mtls permissive or strict: with disabled the destinations' inbound listeners refuse the TLS the callers would open" -}}
{{- end -}}
{{- if and (eq .Values.mesh.tracingProtocol "grpc") (regexMatch "^https?://[^/]+/[^/]" .Values.mesh.tracingEndpoint) -}}
{{- fail "mesh.tracingEndpoint: with mesh.tracingProtocol grpc the endpoint has no path (e.g. http://otel-collector.observability:4317)" -}}
{{- end -}}
{{- end -}}

{{/*
mesh.tracingSamplingRatio as a plain decimal: helm prints a small float as 1e-05, which YAML 1.1
readers take for a string; `--set` passes the value as a string, which float64 parses.
*/}}
{{- define "ferry.tracingRatio" -}}
{{- regexReplaceAll "\\.?0+$" (printf "%.12f" (float64 .Values.mesh.tracingSamplingRatio)) "" -}}
{{- end -}}

{{- define "ferry.meshConfig" -}}
{{- $tls := include "ferry.meshTls" . -}}
apiVersion: ferry/v1
admin:
  address: 0.0.0.0:15000
{{- if ne $tls "disabled" }}
identity:
  cert: /var/run/ferry/tls.crt
  key: /var/run/ferry/tls.key
  trust: [/var/run/ferry/ca.crt]
{{- end }}
{{- if .Values.mesh.tracingEndpoint }}
tracing:
  otlp: { protocol: {{ .Values.mesh.tracingProtocol }} }
  propagation: {{ toJson .Values.mesh.tracingPropagation }}
  sampling: { ratio: {{ include "ferry.tracingRatio" . }} }
{{- end }}
listeners:
  - name: inbound
    address: 0.0.0.0:15006
    {{- if ne $tls "disabled" }}
    tls:
      mode: {{ $tls }}
      peers: { trust_domain: {{ .Values.mesh.trustDomain | quote }} }
    {{- end }}
    routes:
      - name: local-model
        to: local-model
        timeout: {{ .Values.meshConfig.requestTimeout }}
  - name: outbound
    address: 127.0.0.1:15001
    routes:
      {{- range $i, $host := .Values.mesh.meshedHosts }}
      - name: meshed-{{ $i }}
        {{- if kindIs "map" $host }}
        {{- range $form, $pattern := $host }}
        match: { authority: { {{ $form }}: {{ toJson $pattern }} } }
        {{- end }}
        {{- else }}
        match: { authority: {{ toJson $host }} }
        {{- end }}
        to: meshed
      {{- end }}
      - name: by-authority
        to: passthrough
clusters:
  - name: local-model
    endpoints: [127.0.0.1:{{ .Values.meshConfig.modelPort }}]
    protocol: auto
  {{- if .Values.mesh.meshedHosts }}
  - name: meshed
    original_authority: { default_port: 80 }
    tls:
      mode: mesh
      server: { trust_domain: {{ .Values.mesh.trustDomain | quote }} }
  {{- end }}
  - name: passthrough
    original_authority: { default_port: 80 }
{{- end -}}
