//! `routes[].fault`: delays and aborts by percentage, optionally gated on a header.

use super::Ctx;
use super::values::{header_name, parse_duration};
use crate::ir::{Fault, FaultAbort, FaultDelay};
use crate::raw::{FaultSpec, PercentNumberText};

pub(super) fn fault(ctx: &mut Ctx<'_>, path: &str, spec: Option<&FaultSpec>) -> Option<Fault> {
    let spec = spec?;
    if spec.delay.is_none() && spec.abort.is_none() {
        ctx.error(
            path,
            "a fault needs a delay or an abort (expected e.g. delay: {fixed: 200ms, percent: 10})",
        );
        return None;
    }
    let delay = match &spec.delay {
        None => Some(None),
        Some(d) => {
            let p = format!("{path}.delay");
            let fixed = ctx
                .check(&format!("{p}.fixed"), parse_duration(d.fixed.as_str()))
                .and_then(|f| {
                    if f.is_zero() {
                        ctx.error(
                            &format!("{p}.fixed"),
                            "zero delay (expected e.g. \"200ms\")",
                        );
                        return None;
                    }
                    Some(f)
                });
            let ratio = percent(ctx, &format!("{p}.percent"), &d.percent);
            fixed
                .zip(ratio)
                .map(|(fixed, ratio)| Some(FaultDelay { fixed, ratio }))
        }
    };
    let abort = match &spec.abort {
        None => Some(None),
        Some(a) => {
            let p = format!("{path}.abort");
            let status = a.status.unwrap_or(503);
            let status = ctx.check(
                &format!("{p}.status"),
                (400..=599)
                    .contains(&status)
                    .then_some(status)
                    .ok_or_else(|| format!("invalid status {status} (expected 400 to 599)")),
            );
            let grpc_status = match a.grpc_status {
                None => status.map(grpc_code_for),
                Some(code) => ctx.check(
                    &format!("{p}.grpc_status"),
                    (1..=16).contains(&code).then_some(code).ok_or_else(|| {
                        format!(
                            "invalid grpc_status {code} (expected a gRPC status code from 1 to 16, e.g. 14 for UNAVAILABLE)"
                        )
                    }),
                ),
            };
            let ratio = percent(ctx, &format!("{p}.percent"), &a.percent);
            match (status, grpc_status, ratio) {
                (Some(status), Some(grpc_status), Some(ratio)) => Some(Some(FaultAbort {
                    status,
                    grpc_status,
                    ratio,
                })),
                _ => None,
            }
        }
    };
    let header = match &spec.header {
        None => Some(None),
        Some(h) => ctx
            .check(&format!("{path}.header"), header_name(h.as_str()))
            .map(Some),
    };
    Some(Fault {
        delay: delay?,
        abort: abort?,
        header: header?,
    })
}

fn percent(ctx: &mut Ctx<'_>, path: &str, text: &PercentNumberText) -> Option<f64> {
    let t = text.as_str();
    let value = t
        .parse::<f64>()
        .ok()
        .filter(|v| (0.0..=100.0).contains(v))
        .map(|v| v / 100.0);
    ctx.check(
        path,
        value.ok_or_else(|| format!("invalid percent {t:?} (expected a number from 0 to 100)")),
    )
}

/// The gRPC code an HTTP status maps to, as ferry's own failures do (503 → UNAVAILABLE,
/// 429 → RESOURCE_EXHAUSTED, 504 → DEADLINE_EXCEEDED), else gRPC's HTTP-to-gRPC table.
fn grpc_code_for(status: u16) -> u32 {
    match status {
        401 => 16,
        403 => 7,
        404 => 12,
        429 => 8,
        502 | 503 => 14,
        504 => 4,
        500..=599 => 13,
        _ => 2,
    }
}
