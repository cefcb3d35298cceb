//! The top-level `access_log`: each sink's path, format, sample and `slower_than`.
//!
//! Only the path's shape is checked here (not empty, unique); whether its directory exists
//! and is writable is the proxy's check when it loads the config, reported at the recorded
//! position (this crate reads no files).

use std::path::PathBuf;

use super::Ctx;
use super::tracing::{parse_ratio, positive_duration};
use crate::defaults;
use crate::ir::{AccessLog, AccessLogFormat};
use crate::raw::{AccessLogFormatSpec, AccessLogSpec};

/// `access_log`; empty when absent. Problems are recorded in `ctx`.
pub(super) fn access_log(ctx: &mut Ctx<'_>, spec: Option<&[AccessLogSpec]>) -> Vec<AccessLog> {
    let Some(list) = spec else {
        return Vec::new();
    };
    if list.is_empty() {
        ctx.error(
            "access_log",
            "empty list (expected at least one sink such as {path: /dev/stdout}; omit \
             access_log for none)",
        );
    }
    let mut out: Vec<AccessLog> = Vec::with_capacity(list.len());
    for (i, s) in list.iter().enumerate() {
        let at = format!("access_log[{i}]");
        let sample = s
            .sample
            .as_ref()
            .and_then(|r| ctx.check(&format!("{at}.sample"), sample(r.as_str())))
            .unwrap_or(defaults::ACCESS_LOG_SAMPLE);
        let slower_than = positive_duration(
            ctx,
            &format!("{at}.slower_than"),
            s.slower_than.as_ref(),
            "1s",
        );
        let format = match s.format {
            None | Some(AccessLogFormatSpec::Json) => AccessLogFormat::Json,
            Some(AccessLogFormatSpec::Text) => AccessLogFormat::Text,
        };
        let Some(path) = path(ctx, &format!("{at}.path"), s.path.as_str()) else {
            continue;
        };
        if let Some(first) = out.iter().position(|o| o.path == path) {
            ctx.error(
                &format!("{at}.path"),
                format!(
                    "duplicate path {:?} (expected each file once; also used by \
                     access_log[{first}])",
                    s.path.as_str()
                ),
            );
            continue;
        }
        out.push(AccessLog {
            path,
            path_at: ctx.locate(&format!("{at}.path")),
            format,
            sample,
            slower_than,
        });
    }
    out
}

fn path(ctx: &mut Ctx<'_>, at: &str, text: &str) -> Option<PathBuf> {
    if text.trim().is_empty() || text.ends_with('/') {
        ctx.error(
            at,
            format!("invalid path {text:?} (expected a file such as \"/dev/stdout\")"),
        );
        return None;
    }
    Some(ctx.base_dir().join(text))
}

/// The tracing ratio's rules, in the words of this field.
fn sample(text: &str) -> Result<f64, String> {
    parse_ratio(text)
        .map_err(|_| format!("invalid sample {text:?} (expected a number from 0 to 1, e.g. 0.1)"))
}
