//! The effective form of `access_log`, with every default spelled out.

use serde_json::{Map, Value};

use crate::ir::{AccessLog, AccessLogFormat};
use crate::validate::format_duration;

pub(super) fn access_log(sinks: &[AccessLog]) -> Value {
    sinks
        .iter()
        .map(|s| {
            let mut out = Map::new();
            out.insert("path".into(), s.path.display().to_string().into());
            let format = match s.format {
                AccessLogFormat::Json => "json",
                AccessLogFormat::Text => "text",
            };
            out.insert("format".into(), format.into());
            out.insert("sample".into(), s.sample.into());
            if let Some(d) = s.slower_than {
                out.insert("slower_than".into(), format_duration(d).into());
            }
            Value::Object(out)
        })
        .collect::<Vec<_>>()
        .into()
}
