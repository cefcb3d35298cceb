//! `routes[].mirror`: candidate clusters, the mirrored share, the comparison and its bounds.

use super::Ctx;
use super::values::parse_duration;
use crate::defaults;
use crate::ir::{Compare, Mirror, Tolerance};
use crate::raw::{ByteSizeText, CompareSpec, MirrorSpec, NonNegativeText, RawRoute};

pub(super) fn mirrors(
    ctx: &mut Ctx<'_>,
    path: &str,
    r: &RawRoute,
    clusters: &[&str],
) -> Vec<Mirror> {
    if !r.mirror.is_empty() && r.direct_response.is_some() {
        ctx.error(
            path,
            "a direct_response route has no upstream answer to mirror (expected mirror only with to)",
        );
    }
    let mut out = Vec::with_capacity(r.mirror.len());
    for (i, m) in r.mirror.iter().enumerate() {
        let p = format!("{path}[{i}]");
        if r.mirror[..i].iter().any(|o| o.cluster == m.cluster) {
            ctx.error(
                &format!("{p}.cluster"),
                format!(
                    "cluster {:?} is mirrored twice (expected each candidate once per route)",
                    m.cluster.as_str()
                ),
            );
        }
        if let Some(m) = mirror(ctx, &p, m, clusters) {
            out.push(m);
        }
    }
    out
}

fn mirror(ctx: &mut Ctx<'_>, p: &str, m: &MirrorSpec, clusters: &[&str]) -> Option<Mirror> {
    let name = m.cluster.as_str();
    let cluster = ctx.check(
        &format!("{p}.cluster"),
        if clusters.contains(&name) {
            Ok(name.to_owned())
        } else {
            Err(format!(
                "unknown cluster {name:?} (expected one of: {})",
                clusters.join(", ")
            ))
        },
    );
    let f = m.fraction.as_str();
    let fraction = ctx.check(
        &format!("{p}.fraction"),
        f.parse::<f64>()
            .ok()
            .filter(|v| (0.0..=1.0).contains(v))
            .ok_or_else(|| format!("invalid fraction {f:?} (expected a number from 0 to 1)")),
    );
    let tolerance = m.tolerance.as_ref();
    let abs = tolerance.and_then(|t| t.abs.as_ref());
    let rel = tolerance.and_then(|t| t.rel.as_ref());
    let abs = non_negative(ctx, &format!("{p}.tolerance.abs"), abs);
    let rel = non_negative(ctx, &format!("{p}.tolerance.rel"), rel);
    let max_body = match &m.max_body {
        None => Some(defaults::MIRROR_MAX_BODY),
        Some(s) => ctx.check(&format!("{p}.max_body"), parse_size(s)),
    };
    let timeout = match &m.timeout {
        None => Some(defaults::MIRROR_TIMEOUT),
        Some(t) => ctx
            .check(&format!("{p}.timeout"), parse_duration(t.as_str()))
            .and_then(|d| {
                if d.is_zero() {
                    ctx.error(
                        &format!("{p}.timeout"),
                        "zero timeout (expected e.g. \"5s\": a mirror must end)",
                    );
                    return None;
                }
                Some(d)
            }),
    };
    let max_in_flight = match m.max_in_flight {
        None => Some(defaults::MIRROR_MAX_IN_FLIGHT),
        Some(0) => {
            ctx.error(
                &format!("{p}.max_in_flight"),
                "0 mirrors in flight (expected >= 1; remove the mirror to turn it off)",
            );
            None
        }
        Some(n) => Some(n),
    };
    let compare = match m.compare {
        None => defaults::MIRROR_COMPARE,
        Some(CompareSpec::None) => Compare::None,
        Some(CompareSpec::Oip) => Compare::Oip,
        Some(CompareSpec::Json) => Compare::Json,
    };
    Some(Mirror {
        cluster: cluster?,
        fraction: fraction?,
        compare,
        tolerance: Tolerance {
            abs: abs?,
            rel: rel?,
        },
        max_body: max_body?,
        timeout: timeout?,
        max_in_flight: max_in_flight?,
    })
}

fn non_negative(ctx: &mut Ctx<'_>, path: &str, text: Option<&NonNegativeText>) -> Option<f64> {
    let Some(text) = text else {
        return Some(if path.ends_with("abs") {
            defaults::MIRROR_TOLERANCE_ABS
        } else {
            defaults::MIRROR_TOLERANCE_REL
        });
    };
    let t = text.as_str();
    ctx.check(
        path,
        t.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                format!("invalid tolerance {t:?} (expected a number >= 0 such as 1e-4)")
            }),
    )
}

/// Parses `65536`, `512B`, `64KiB`, `16MiB` or `1GiB` into bytes.
pub(super) fn parse_size(text: &ByteSizeText) -> Result<u64, String> {
    let t = text.as_str().trim();
    let bad = || {
        format!(
            "invalid size {t:?} (expected bytes, or a number with B, KiB, MiB or GiB, e.g. \"16MiB\")"
        )
    };
    let (number, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let scale: u64 = match unit {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return Err(bad()),
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(bad)
}
