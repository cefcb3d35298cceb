{{/*
The default route config every injected sidecar loads from /etc/ferry/config.yaml, in the
ferry route config format (examples/full.yaml). Admin listens on all addresses because the
kubelet's probes come from outside the pod's loopback. Tracing reaches the sidecar through
OTEL_EXPORTER_OTLP_ENDPOINT, which the injector sets from mesh.tracingEndpoint.
*/}}
{{- define "ferry.meshConfig" -}}
apiVersion: ferry/v1
admin:
  address: 0.0.0.0:15000
listeners:
  - name: inbound
    address: 0.0.0.0:15006
    routes:
      - name: local-model
        to: local-model
        timeout: {{ .Values.meshConfig.requestTimeout }}
  - name: outbound
    address: 127.0.0.1:15001
    routes:
      - name: by-authority
        to: passthrough
clusters:
  - name: local-model
    endpoints: [127.0.0.1:{{ .Values.meshConfig.modelPort }}]
    protocol: auto
  - name: passthrough
    original_authority: { default_port: 80 }
{{- end -}}
