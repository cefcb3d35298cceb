//! Path templates: `/v2/models/{model}/versions/{version}/infer`, `/files/{rest=**}`.

use std::collections::HashSet;

use crate::ir::{PathTemplate, TemplateSegment};

/// Parses a path template; `{name}` must fill a whole segment and `{name=**}` may only be last.
pub(crate) fn parse_template(text: &str) -> Result<PathTemplate, String> {
    let bad = |problem: &str| {
        format!(
            "invalid path template {text:?}: {problem} (expected e.g. \"/v2/models/{{model}}/infer\" or a final \"{{rest=**}}\")"
        )
    };
    let rest = text
        .strip_prefix('/')
        .ok_or_else(|| bad("must start with \"/\""))?;
    let parts: Vec<&str> = rest.split('/').collect();
    let mut seen = HashSet::new();
    let mut segments = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let segment = segment(part).map_err(|p| bad(&p))?;
        if let TemplateSegment::Var(name) | TemplateSegment::Rest(name) = &segment
            && !seen.insert(name.clone())
        {
            return Err(bad(&format!("variable {name:?} is used twice")));
        }
        if matches!(segment, TemplateSegment::Rest(_)) && i + 1 != parts.len() {
            return Err(bad("\"{name=**}\" is only allowed as the last segment"));
        }
        segments.push(segment);
    }
    Ok(PathTemplate {
        source: text.to_owned(),
        segments,
    })
}

fn segment(part: &str) -> Result<TemplateSegment, String> {
    let Some(inner) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) else {
        if part.contains(['{', '}']) {
            return Err(format!(
                "{part:?} mixes text and a variable; \"{{name}}\" must be a whole segment"
            ));
        }
        return Ok(TemplateSegment::Literal(part.to_owned()));
    };
    let (name, rest) = match inner.split_once('=') {
        Some((name, "**")) => (name, true),
        Some((_, pattern)) => {
            return Err(format!(
                "unsupported variable pattern {pattern:?}; only \"**\" is allowed"
            ));
        }
        None => (inner, false),
    };
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!("invalid variable name {name:?}"));
    }
    Ok(if rest {
        TemplateSegment::Rest(name.to_owned())
    } else {
        TemplateSegment::Var(name.to_owned())
    })
}
