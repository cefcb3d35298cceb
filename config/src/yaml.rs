//! YAML text → a plain JSON value for serde plus an index of where every field sits.
//!
//! Parsing once into saphyr's marked tree and remembering each node's position under its
//! dotted field path lets both serde errors (which only know the path) and the later semantic
//! checks (which only know the path) point at `line:col` in the file.

use std::borrow::Cow;
use std::collections::HashMap;

use saphyr::{MarkedYaml, Marker, Scalar, ScalarStyle, Tag, YamlData, YamlLoader};
use saphyr_parser::Event;
use serde_json::{Map, Number, Value};

/// A 1-based position in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pos {
    pub(crate) line: usize,
    pub(crate) col: usize,
}

impl Pos {
    const START: Pos = Pos { line: 1, col: 1 };

    fn from_marker(m: &Marker) -> Self {
        // saphyr lines are 1-based already, columns 0-based.
        Pos {
            line: m.line().max(1),
            col: m.col() + 1,
        }
    }
}

/// Where each field path (`listeners[0].routes[2].timeout`) starts in the file.
#[derive(Debug, Default)]
pub(crate) struct PosIndex {
    values: HashMap<String, Pos>,
    keys: HashMap<String, Pos>,
}

impl PosIndex {
    /// Position of the value at `path`, or of the nearest enclosing value when the field is
    /// absent (a missing field is reported where its parent is).
    pub(crate) fn value(&self, path: &str) -> Pos {
        let mut p = path;
        loop {
            if let Some(pos) = self.values.get(p) {
                return *pos;
            }
            match parent(p) {
                Some(up) => p = up,
                None => return self.values.get("").copied().unwrap_or(Pos::START),
            }
        }
    }

    /// Position of the mapping key at `path` (used for unknown fields), falling back to
    /// [`Self::value`].
    pub(crate) fn key(&self, path: &str) -> Pos {
        self.keys
            .get(path)
            .copied()
            .unwrap_or_else(|| self.value(path))
    }
}

/// The path one level up: `a.b[2]` → `a.b`, `a.b` → `a`, `a` → ``.
pub(crate) fn parent(path: &str) -> Option<&str> {
    if path.is_empty() {
        return None;
    }
    if path.ends_with(']')
        && let Some(i) = path.rfind('[')
    {
        return Some(&path[..i]);
    }
    Some(path.rfind('.').map_or("", |i| &path[..i]))
}

/// Joins a mapping key onto a path.
pub(crate) fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// A YAML syntax problem.
#[derive(Debug)]
pub(crate) struct SyntaxError {
    pub(crate) pos: Pos,
    pub(crate) message: String,
}

/// Deepest nesting of lists and mappings accepted. The real format needs about 8 levels; the
/// cap keeps every later recursive step (tree building, serde, drop) far from the stack limit.
const MAX_DEPTH: usize = 64;

/// Parses `text` as a single YAML document.
pub(crate) fn load(text: &str) -> Result<(Value, PosIndex), SyntaxError> {
    check_depth(text)?;
    let scan_error = |e: &saphyr::ScanError| SyntaxError {
        pos: Pos::from_marker(e.marker()),
        message: format!("invalid YAML: {}", e.info()),
    };
    // Scalars are resolved here rather than by saphyr so the original text of plain scalars
    // survives: `version: 2.10` must stay "2.10", not become the float 2.1.
    let mut loader = YamlLoader::<MarkedYaml<'_>>::default();
    loader.early_parse(false);
    saphyr_parser::Parser::new_from_str(text)
        .load(&mut loader, true)
        .map_err(|e| scan_error(&e))?;
    if let Some(e) = loader.error() {
        return Err(scan_error(e));
    }
    let docs = loader.into_documents();
    let mut index = PosIndex::default();
    let mut docs = docs.into_iter();
    let Some(first) = docs.next() else {
        return Ok((Value::Null, index));
    };
    if let Some(second) = docs.next() {
        return Err(SyntaxError {
            pos: Pos::from_marker(&second.span.start),
            message: "a second YAML document (expected exactly one document per file)".into(),
        });
    }
    let value = convert(&first, String::new(), &mut index)?;
    Ok((value, index))
}

/// Streams the parser's events (no tree, no recursion) to reject absurd nesting before the
/// recursive tree builder sees it: saphyr bounds flow nesting but not block nesting.
fn check_depth(text: &str) -> Result<(), SyntaxError> {
    let mut depth = 0usize;
    for event in saphyr_parser::Parser::new_from_str(text) {
        match event {
            Ok((Event::SequenceStart(..) | Event::MappingStart(..), span)) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(SyntaxError {
                        pos: Pos::from_marker(&span.start),
                        message: format!(
                            "nesting deeper than {MAX_DEPTH} levels (expected a ferry config)"
                        ),
                    });
                }
            }
            Ok((Event::SequenceEnd | Event::MappingEnd, _)) => depth = depth.saturating_sub(1),
            Ok(_) => {}
            // The loader reports syntax errors with the same position and message.
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

fn convert(
    node: &MarkedYaml<'_>,
    path: String,
    index: &mut PosIndex,
) -> Result<Value, SyntaxError> {
    let pos = Pos::from_marker(&node.span.start);
    let value = match &node.data {
        YamlData::Value(s) => scalar(s),
        YamlData::Representation(text, style, tag) => representation(text, *style, tag.as_ref())
            .ok_or_else(|| SyntaxError {
                pos,
                message: format!("invalid value {text:?} for its tag"),
            })?,
        YamlData::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                out.push(convert(item, format!("{path}[{i}]"), index)?);
            }
            Value::Array(out)
        }
        YamlData::Mapping(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                let key = key_text(k)?;
                let child = join_key(&path, &key);
                index
                    .keys
                    .insert(child.clone(), Pos::from_marker(&k.span.start));
                let value = convert(v, child, index)?;
                out.insert(key, value);
            }
            Value::Object(out)
        }
        // Tags such as `!!str` have already shaped the scalar; the tag itself carries nothing.
        YamlData::Tagged(_, inner) => return convert(inner, path, index),
        YamlData::Alias(_) | YamlData::BadValue => {
            return Err(SyntaxError {
                pos,
                message: "invalid YAML value (expected a scalar, list or mapping)".into(),
            });
        }
    };
    index.values.insert(path, pos);
    Ok(value)
}

fn key_text(key: &MarkedYaml<'_>) -> Result<String, SyntaxError> {
    match &key.data {
        YamlData::Value(Scalar::String(s)) => Ok(s.to_string()),
        YamlData::Value(Scalar::Integer(i)) => Ok(i.to_string()),
        YamlData::Value(Scalar::FloatingPoint(f)) => Ok(f.to_string()),
        YamlData::Value(Scalar::Boolean(b)) => Ok(b.to_string()),
        YamlData::Value(Scalar::Null) => Ok("null".into()),
        YamlData::Representation(text, _, _) => Ok(text.to_string()),
        YamlData::Tagged(_, inner) => key_text(inner),
        _ => Err(SyntaxError {
            pos: Pos::from_marker(&key.span.start),
            message: "complex mapping key (expected a plain string key)".into(),
        }),
    }
}

/// Resolves a scalar the YAML 1.2 core schema way, except that numbers whose text would not
/// survive a round trip (`2.10`, `007`, `0x1F`, `1e3`) stay strings: the format has no
/// fractional numbers, and a model version or header value must keep its exact text.
fn representation(text: &str, style: ScalarStyle, tag: Option<&Cow<'_, Tag>>) -> Option<Value> {
    if tag.is_some() {
        let node = MarkedYaml::value_from_cow_and_metadata(Cow::Borrowed(text), style, tag);
        return match node.data {
            YamlData::Value(s) => Some(scalar(&s)),
            _ => None,
        };
    }
    if style != ScalarStyle::Plain {
        return Some(Value::String(text.to_string()));
    }
    Some(match Scalar::parse_from_cow(Cow::Borrowed(text)) {
        Scalar::Integer(i) if i.to_string() == text => Value::Number(i.into()),
        Scalar::Integer(_) | Scalar::FloatingPoint(_) => Value::String(text.to_string()),
        other => scalar(&other),
    })
}

fn scalar(s: &Scalar<'_>) -> Value {
    match s {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(i) => Value::Number((*i).into()),
        Scalar::FloatingPoint(f) => Number::from_f64(f.into_inner())
            .map_or_else(|| Value::String(f.to_string()), Value::Number),
        Scalar::String(text) => Value::String(text.to_string()),
    }
}
