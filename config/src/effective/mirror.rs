//! A route's mirrors in the effective config, every default spelled out.

use serde_json::{Value, json};

use crate::validate::format_duration;

pub(super) fn mirrors(list: &[crate::ir::Mirror]) -> Value {
    list.iter()
        .map(|m| {
            json!({
                "cluster": m.cluster,
                "fraction": m.fraction,
                "compare": m.compare.as_str(),
                "tolerance": { "abs": m.tolerance.abs, "rel": m.tolerance.rel },
                "max_body": m.max_body,
                "timeout": format_duration(m.timeout),
                "max_in_flight": m.max_in_flight,
            })
        })
        .collect::<Vec<_>>()
        .into()
}
