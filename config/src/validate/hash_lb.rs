//! `clusters[].lb` with `policy: hash`: key parts, `bounded_load`, `fallback`.

use std::num::NonZeroUsize;

use super::Ctx;
use super::values::header_name;
use crate::defaults;
use crate::ir::{HashKeyPart, HashLb, LbPolicy};
use crate::raw::{LbObjectSpec, LbSpec, RawLb};

const KEY_PARTS: &str = "header:NAME, cookie:NAME, model, client, prompt_prefix:N";

/// The hash settings of a cluster whose policy is `hash` (`None` otherwise), and errors for
/// hash-only fields written under another policy.
pub(super) fn hash_lb(ctx: &mut Ctx<'_>, path: &str, lb: Option<&LbSpec>) -> Option<HashLb> {
    let spec = match lb {
        Some(LbSpec::Spec(spec)) => spec,
        Some(LbSpec::Policy(RawLb::Hash)) => {
            ctx.error(
                path,
                "policy hash needs a key (expected e.g. lb: {policy: hash, key: [header:x-session-id]})",
            );
            return None;
        }
        _ => return None,
    };
    if spec.policy != Some(RawLb::Hash) {
        hash_only_fields(ctx, path, spec);
        return None;
    }
    if spec.load_report.is_some() {
        ctx.error(
            &format!("{path}.load_report"),
            "hash does not read load reports (expected policy: p2c-ewma, or no load_report)",
        );
    }
    let key = key(ctx, &format!("{path}.key"), spec);
    let bounded_load = bounded_load(ctx, &format!("{path}.bounded_load"), spec);
    let fallback = match spec.fallback {
        None => defaults::LB,
        Some(RawLb::RoundRobin) => LbPolicy::RoundRobin,
        Some(RawLb::P2cEwma) => LbPolicy::P2cEwma,
        Some(RawLb::Hash) => {
            ctx.error(
                &format!("{path}.fallback"),
                "hash cannot be its own fallback (expected p2c-ewma or round-robin)",
            );
            defaults::LB
        }
    };
    Some(HashLb {
        key: key?,
        bounded_load: bounded_load?,
        fallback,
    })
}

fn hash_only_fields(ctx: &mut Ctx<'_>, path: &str, spec: &LbObjectSpec) {
    let written = [
        ("key", spec.key.is_some()),
        ("bounded_load", spec.bounded_load.is_some()),
        ("fallback", spec.fallback.is_some()),
    ];
    for (field, _) in written.iter().filter(|(_, set)| *set) {
        ctx.error(
            &format!("{path}.{field}"),
            format!("{field} applies to policy hash only (expected policy: hash, or no {field})"),
        );
    }
}

fn key(ctx: &mut Ctx<'_>, path: &str, spec: &LbObjectSpec) -> Option<Vec<HashKeyPart>> {
    let Some(parts) = spec.key.as_ref().filter(|k| !k.is_empty()) else {
        ctx.error(
            path,
            format!("policy hash needs at least one key part (expected a list of {KEY_PARTS})"),
        );
        return None;
    };
    let parsed: Vec<Option<HashKeyPart>> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| ctx.check(&format!("{path}[{i}]"), key_part(p.as_str())))
        .collect();
    parsed.into_iter().collect()
}

/// One key part as the file spells it.
fn key_part(text: &str) -> Result<HashKeyPart, String> {
    let name = |kind: &str, name: &str| {
        header_name(name).map_err(|_| {
            format!(
                "invalid {kind} name {name:?} in key part {text:?} (expected {kind}:NAME with letters, digits and !#$%&'*+-.^_`|~)"
            )
        })
    };
    match text {
        "model" => Ok(HashKeyPart::Model),
        "client" => Ok(HashKeyPart::Client),
        _ => {
            if let Some(n) = text.strip_prefix("header:") {
                return name("header", n).map(HashKeyPart::Header);
            }
            if let Some(n) = text.strip_prefix("cookie:") {
                // Cookie names are case-sensitive: keep the spelling, check the characters.
                return name("cookie", n).map(|_| HashKeyPart::Cookie(n.to_owned()));
            }
            if let Some(n) = text.strip_prefix("prompt_prefix:") {
                return n
                    .parse::<usize>()
                    .ok()
                    .and_then(NonZeroUsize::new)
                    .map(HashKeyPart::PromptPrefix)
                    .ok_or_else(|| {
                        format!(
                            "invalid prompt_prefix length {n:?} (expected a byte count >= 1, e.g. prompt_prefix:512)"
                        )
                    });
            }
            Err(format!(
                "unknown key part {text:?} (expected one of: {KEY_PARTS})"
            ))
        }
    }
}

/// `bounded_load`: 0 = unbounded, else a factor >= 1 (below 1 no endpoint could ever take
/// its share: the mean itself would be over the bound).
fn bounded_load(ctx: &mut Ctx<'_>, path: &str, spec: &LbObjectSpec) -> Option<Option<f64>> {
    let Some(text) = &spec.bounded_load else {
        return Some(Some(defaults::HASH_BOUNDED_LOAD));
    };
    let text = text.as_str();
    let value = text.parse::<f64>().ok().filter(|v| v.is_finite());
    match value {
        Some(0.0) => Some(None),
        Some(v) if v >= 1.0 => Some(Some(v)),
        Some(v) if v > 0.0 => {
            ctx.error(
                path,
                format!(
                    "bounded_load {text} is below 1: the mean load itself would be over the bound (expected 0 for no bound, or a factor >= 1 such as 1.25)"
                ),
            );
            None
        }
        _ => {
            ctx.error(
                path,
                format!(
                    "invalid bounded_load {text:?} (expected 0 for no bound, or a factor >= 1 such as 1.25)"
                ),
            );
            None
        }
    }
}
