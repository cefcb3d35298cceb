"""Sends spans with the real OpenTelemetry Python SDK and OTLP exporters (pinned in
install-phoenix.sh), so the Phoenix harness is proven against a sender that is not ferry.

Reads a JSON plan on stdin:
  {"grpc": "http://127.0.0.1:P",        OTLP gRPC endpoint
   "http": "http://127.0.0.1:Q",        OTLP/HTTP base; traces go to <base>/v1/traces
   "spans": [{"transport": "grpc"|"http", "name": ..., "attributes": {...},
              "events": [{"name": ..., "attributes": {...}}],
              "status": "OK"|"ERROR", "status_message": ..., "children": [<span>, ...]}]}
Children go over their root's transport. Resource attributes come from the environment
(OTEL_RESOURCE_ATTRIBUTES), as they would for ferry. Prints the spans sent as a JSON list of
{"name", "transport", "trace_id", "span_id", "parent_id"}; exits 1 if any export failed, which
the SDK would otherwise only log.
"""

import json
import sys

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import Status, StatusCode


class Checked(SpanExporter):
    def __init__(self, inner):
        self.inner = inner
        self.failed = 0

    def export(self, spans):
        result = self.inner.export(spans)
        if result != SpanExportResult.SUCCESS:
            self.failed += len(spans)
        return result

    def shutdown(self):
        self.inner.shutdown()

    def force_flush(self, timeout_millis=30000):
        return self.inner.force_flush(timeout_millis)


def exporter(transport, plan):
    if transport == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=plan["grpc"], insecure=True, timeout=10)
    if transport == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=plan["http"].rstrip("/") + "/v1/traces", timeout=10)
    raise SystemExit(f"unknown transport {transport!r}")


def emit(tracer, transport, spec, sent, parent_id):
    with tracer.start_as_current_span(spec["name"], attributes=spec.get("attributes")) as span:
        for event in spec.get("events", []):
            span.add_event(event["name"], event.get("attributes"))
        status = spec.get("status")
        if status == "ERROR":
            span.set_status(Status(StatusCode.ERROR, spec.get("status_message")))
        elif status is not None:
            span.set_status(Status(StatusCode[status]))
        ctx = span.get_span_context()
        span_id = format(ctx.span_id, "016x")
        sent.append(
            {
                "name": spec["name"],
                "transport": transport,
                "trace_id": format(ctx.trace_id, "032x"),
                "span_id": span_id,
                "parent_id": parent_id,
            }
        )
        for child in spec.get("children", []):
            emit(tracer, transport, child, sent, span_id)


def main():
    plan = json.load(sys.stdin)
    resource = Resource.create()
    providers, exporters, sent = {}, [], []
    for spec in plan["spans"]:
        transport = spec["transport"]
        if transport not in providers:
            checked = Checked(exporter(transport, plan))
            exporters.append(checked)
            # Simple (synchronous) export: each span is delivered before the script goes on,
            # and the exit code covers every one.
            provider = TracerProvider(resource=resource)
            provider.add_span_processor(SimpleSpanProcessor(checked))
            providers[transport] = provider
        emit(providers[transport].get_tracer("ferry-phoenix-selftest"), transport, spec, sent, None)
    for provider in providers.values():
        provider.shutdown()
    json.dump(sent, sys.stdout)
    failed = sum(e.failed for e in exporters)
    if failed:
        print(f"\n{failed} spans failed to export", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
