//! `google.api.http` path templates: parse once, match per request.
//!
//! Grammar (from the HttpRule documentation):
//! `Template = "/" Segments [ ":" Verb ]`, `Segment = "*" | "**" | LITERAL | Variable`,
//! `Variable = "{" FieldPath [ "=" Segments ] "}"`. A bare `{name}` is `{name=*}`. `**` matches
//! zero or more segments and, as in grpc-gateway, may only be the last segment, which keeps
//! matching linear.

use super::error::TemplateError;

/// One flattened path segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Matches exactly this text.
    Literal(String),
    /// `*`: one segment.
    Single,
    /// `**`: the rest of the path (zero or more segments).
    Multi,
}

/// A variable: the field path it sets and the flattened segments it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Variable {
    /// Field names, outermost first (`a.b` → `["a", "b"]`).
    pub(crate) field_path: Vec<String>,
    /// First covered segment.
    start: usize,
    /// One past the last covered segment.
    end: usize,
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    pub(crate) segments: Vec<Segment>,
    pub(crate) variables: Vec<Variable>,
    pub(crate) verb: Option<String>,
}

/// A variable's captured value, already percent-decoded.
pub(crate) type Captures = Vec<(Vec<String>, String)>;

// === impl Template ===

impl Template {
    /// Parses a template such as `/v1/{name=shelves/*/books/*}:get`.
    pub(crate) fn parse(text: &str) -> Result<Template, TemplateError> {
        let err = |why: &str| TemplateError {
            template: text.to_owned(),
            why: why.to_owned(),
        };
        let rest = text
            .strip_prefix('/')
            .ok_or_else(|| err("must start with '/'"))?;
        let (path, verb) = split_verb(rest);
        if verb.is_some_and(str::is_empty) {
            return Err(err("empty verb after ':'"));
        }
        let mut t = Template {
            segments: Vec::new(),
            variables: Vec::new(),
            verb: verb.map(str::to_owned),
        };
        let mut chars = path;
        loop {
            if let Some(inner) = chars.strip_prefix('{') {
                let close = inner.find('}').ok_or_else(|| err("unclosed '{'"))?;
                let (var, after) = (&inner[..close], &inner[close + 1..]);
                let (field, pattern) = var.split_once('=').unwrap_or((var, "*"));
                let field_path: Vec<String> = field.split('.').map(str::to_owned).collect();
                if field_path.iter().any(|f| !is_ident(f)) {
                    return Err(err("bad field path in variable"));
                }
                let start = t.segments.len();
                for seg in pattern.split('/') {
                    if seg.contains(['{', '}']) {
                        return Err(err("nested variable"));
                    }
                    t.segments
                        .push(segment(seg).ok_or_else(|| err("empty segment"))?);
                }
                t.variables.push(Variable {
                    field_path,
                    start,
                    end: t.segments.len(),
                });
                chars = after;
            } else {
                let end = chars.find('/').unwrap_or(chars.len());
                let seg = &chars[..end];
                if seg.contains(['{', '}']) {
                    return Err(err("variable must be a whole segment"));
                }
                t.segments
                    .push(segment(seg).ok_or_else(|| err("empty segment"))?);
                chars = &chars[end..];
            }
            match chars.strip_prefix('/') {
                Some(next) => chars = next,
                None if chars.is_empty() => break,
                None => return Err(err("variable must be a whole segment")),
            }
        }
        let last = t.segments.len().saturating_sub(1);
        if t.segments
            .iter()
            .enumerate()
            .any(|(i, s)| *s == Segment::Multi && i != last)
        {
            return Err(err("'**' must be the last segment"));
        }
        Ok(t)
    }

    /// The first segment when it is a literal (the matching index's key).
    pub(crate) fn first_literal(&self) -> Option<&str> {
        match self.segments.first() {
            Some(Segment::Literal(l)) => Some(l),
            _ => None,
        }
    }

    /// How many literal segments; more literals = more specific, tried first.
    pub(crate) fn literal_count(&self) -> usize {
        self.segments
            .iter()
            .filter(|s| matches!(s, Segment::Literal(_)))
            .count()
    }

    /// Matches request path segments (split on '/', without the leading '/'; the verb already
    /// split off). Returns the variables' values.
    pub(crate) fn matches(&self, path: &[&str], verb: Option<&str>) -> Option<Captures> {
        if self.verb.as_deref() != verb {
            return None;
        }
        let multi = self.segments.last() == Some(&Segment::Multi);
        let fixed = self.segments.len() - usize::from(multi);
        if path.len() < fixed || (!multi && path.len() != fixed) {
            return None;
        }
        for (seg, got) in self.segments.iter().zip(path) {
            match seg {
                Segment::Literal(l) if l != got => return None,
                Segment::Single if got.is_empty() => return None,
                _ => {}
            }
        }
        let mut captures = Vec::with_capacity(self.variables.len());
        for v in &self.variables {
            // A variable ending in `**` takes the rest of the path.
            let end = if v.end == self.segments.len() && multi {
                path.len()
            } else {
                v.end
            };
            let parts = path.get(v.start..end)?;
            // RFC 6570: a single-segment variable decodes everything; a multi-segment one
            // keeps an encoded '/' so the segment structure survives.
            let value = if end - v.start == 1 && self.segments.get(v.start) != Some(&Segment::Multi)
            {
                percent_decode(parts.first().copied().unwrap_or(""), false)
            } else {
                percent_decode(&parts.join("/"), true)
            };
            captures.push((v.field_path.clone(), value));
        }
        Some(captures)
    }
}

/// Splits a trailing `:verb` off the last segment (a ':' inside a variable is not a verb).
pub(crate) fn split_verb(path: &str) -> (&str, Option<&str>) {
    let last_start = path.rfind('/').map_or(0, |i| i + 1);
    let last = &path[last_start..];
    if last.contains('}') {
        // Verb after a variable: `{name}:verb`.
        if let Some(close) = path.rfind('}')
            && let Some(verb) = path[close + 1..].strip_prefix(':')
        {
            return (&path[..close + 1], Some(verb));
        }
        return (path, None);
    }
    match last.rfind(':') {
        Some(i) => (&path[..last_start + i], Some(&last[i + 1..])),
        None => (path, None),
    }
}

fn segment(text: &str) -> Option<Segment> {
    match text {
        "" => None,
        "*" => Some(Segment::Single),
        "**" => Some(Segment::Multi),
        lit => Some(Segment::Literal(lit.to_owned())),
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Percent-decodes `s`; with `keep_slash`, `%2F` stays encoded. Invalid escapes are kept as
/// text and invalid UTF-8 is replaced, so decoding never fails.
pub(crate) fn percent_decode(s: &str, keep_slash: bool) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(v)) if !(keep_slash && v == b'/') => {
                out.push(v);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
