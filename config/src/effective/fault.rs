//! A route's fault injection in the effective config.

use serde_json::{Map, Value, json};

use crate::validate::format_duration;

pub(super) fn fault(f: &crate::ir::Fault) -> Value {
    let mut out = Map::new();
    if let Some(d) = &f.delay {
        out.insert(
            "delay".into(),
            json!({ "fixed": format_duration(d.fixed), "percent": d.ratio * 100.0 }),
        );
    }
    if let Some(a) = &f.abort {
        out.insert(
            "abort".into(),
            json!({ "status": a.status, "grpc_status": a.grpc_status, "percent": a.ratio * 100.0 }),
        );
    }
    if let Some(h) = &f.header {
        out.insert("header".into(), h.clone().into());
    }
    Value::Object(out)
}
