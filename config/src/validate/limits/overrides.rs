//! A rate limit's `overrides`: per-key amounts, each matching only parts of the limit's own
//! key (any other part could never be present in a bucket's key) and counting what the limit
//! counts.

use super::{key_part, key_part_text, positive};
use crate::ir::{KeyPart, Override};
use crate::raw::OverrideSpec;
use crate::validate::Ctx;

/// One override; `kind` is what the limit counts (`None` when its amount is invalid).
pub(super) fn entry(
    ctx: &mut Ctx<'_>,
    at: &str,
    spec: &OverrideSpec,
    kind: Option<&str>,
    key: &[KeyPart],
) -> Option<Override> {
    let match_at = format!("{at}.match");
    if spec.matches.0.is_empty() {
        ctx.error(
            &match_at,
            "empty match would apply to every key (expected at least one key part, e.g. {header:x-tenant: gold}; or change the limit's amount)",
        );
    }
    let mut matches: Vec<(KeyPart, String)> = Vec::with_capacity(spec.matches.0.len());
    let mut ok = true;
    for (text, value) in &spec.matches.0 {
        let part_at = format!("{match_at}.{}", text.0);
        let part = match key_part(&text.0) {
            Ok(part) => part,
            Err(message) => {
                ctx.error_at_key(&part_at, message);
                ok = false;
                continue;
            }
        };
        let shown = key_part_text(&part);
        if !key.contains(&part) {
            let expected = if key.is_empty() {
                format!("key: [{shown}] on the limit, which has no key")
            } else {
                let own: Vec<String> = key.iter().map(key_part_text).collect();
                format!("one of the limit's key parts: {}", own.join(", "))
            };
            ctx.error_at_key(
                &part_at,
                format!(
                    "key part {shown:?} is not in the limit's key, so this override could never apply (expected {expected})"
                ),
            );
            ok = false;
        } else if matches.iter().any(|(p, _)| *p == part) {
            ctx.error_at_key(
                &part_at,
                format!("duplicate key part {shown:?} (expected each part once)"),
            );
            ok = false;
        } else {
            matches.push((part, value.clone()));
        }
    }
    let amount = override_amount(ctx, at, spec, kind);
    if !ok || matches.is_empty() {
        return None;
    }
    Some(Override {
        matches,
        amount: amount?,
    })
}

/// An override's `requests` or `tokens`, the same kind as its limit's.
fn override_amount(
    ctx: &mut Ctx<'_>,
    at: &str,
    spec: &OverrideSpec,
    kind: Option<&str>,
) -> Option<u64> {
    let given = match (spec.requests, spec.tokens) {
        (Some(_), Some(_)) => {
            let expected = kind.map_or_else(
                || "exactly one".to_owned(),
                |kind| format!("only {kind}, as the limit counts"),
            );
            ctx.error(
                at,
                format!("both requests and tokens are set (expected {expected})"),
            );
            return None;
        }
        (None, None) => {
            let expected = kind.unwrap_or("requests or tokens");
            ctx.error(
                at,
                format!("neither requests nor tokens is set (expected {expected}: N)"),
            );
            return None;
        }
        (Some(n), None) => ("requests", n),
        (None, Some(n)) => ("tokens", n),
    };
    let field_at = format!("{at}.{}", given.0);
    match kind {
        Some(kind) if kind != given.0 => {
            ctx.error(
                &field_at,
                format!("the limit counts {kind}, so its overrides must too (expected {kind}: N)"),
            );
            None
        }
        _ => positive(ctx, &field_at, given.0, given.1),
    }
}
