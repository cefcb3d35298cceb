//! Text → [`Config`]: YAML with positions, serde into raw types, then validation.

use serde_json::{Map, Value};
use serde_path_to_error::Segment;

use crate::effective::finish;
use crate::error::{ConfigError, ConfigErrors};
use crate::ir::Config;
use crate::raw::RawConfig;
use crate::validate::{self, Ctx};
use crate::yaml::{self, PosIndex, join_key};

/// What a caller adds to every file it loads.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The identity of a file that names none (`ferry run --identity-dir`); it then counts as
    /// the file's own (validation, `/config_dump`).
    pub identity: Option<crate::ir::Identity>,
}

/// Parses and validates one config file. `source_name` is used in error messages.
pub fn parse(source_name: &str, text: &str) -> Result<Config, ConfigErrors> {
    parse_with(source_name, text, &LoadOptions::default())
}

/// [`parse`] with `options`.
pub fn parse_with(
    source_name: &str,
    text: &str,
    options: &LoadOptions,
) -> Result<Config, ConfigErrors> {
    let (value, index) = yaml::load(text).map_err(|e| {
        ConfigErrors::single(ConfigError {
            file: source_name.to_owned(),
            line: e.pos.line,
            col: e.pos.col,
            path: String::new(),
            message: e.message,
        })
    })?;
    let (raw, mut errors) = deserialize(source_name, value, &index);
    let Some(raw) = raw else {
        return Err(ConfigErrors { errors });
    };
    let mut ctx = Ctx::new(source_name, &index);
    let parts = validate::config(&mut ctx, raw, options);
    errors.extend(ctx.into_errors());
    if errors.is_empty() {
        Ok(finish(parts))
    } else {
        errors.sort_by_key(|e| (e.line, e.col));
        Err(ConfigErrors { errors })
    }
}

/// Reads and parses a config file; an unreadable file is one error naming it.
pub fn load(path: &std::path::Path) -> Result<Config, ConfigErrors> {
    load_with(path, &LoadOptions::default())
}

/// [`load`] with `options`.
pub fn load_with(path: &std::path::Path, options: &LoadOptions) -> Result<Config, ConfigErrors> {
    let name = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => parse_with(&name, &text, options),
        Err(e) => Err(ConfigErrors::single(ConfigError {
            file: name,
            line: 0,
            col: 0,
            path: String::new(),
            message: format!("cannot read config file: {e}"),
        })),
    }
}

/// Serde stops at the first structural error (wrong type, unknown field); it is located
/// through the path serde_path_to_error tracked. Unknown fields are the common typo, so each
/// one is recorded, removed, and deserialization retried: a file with a misspelt key still gets
/// every other error reported in the same run. Any other structural error ends the attempt.
fn deserialize(
    file: &str,
    value: Value,
    index: &PosIndex,
) -> (Option<RawConfig>, Vec<ConfigError>) {
    // An empty file is an empty mapping, so it is reported as "missing apiVersion".
    let mut value = if value.is_null() {
        Value::Object(Map::new())
    } else {
        value
    };
    let mut errors = Vec::new();
    // Bounded: each round removes one key, and a file has finitely many.
    for _ in 0..1024 {
        let err = match serde_path_to_error::deserialize::<_, RawConfig>(&value) {
            Ok(raw) => return (Some(raw), errors),
            Err(err) => err,
        };
        let segments: Vec<Segment> = err.path().iter().cloned().collect();
        let path = path_text(err.path());
        let inner = err.inner().to_string();
        let unknown_field = inner
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(field, _)| field.to_owned());
        let (path, message, at_key) = describe(path, &inner);
        let pos = if at_key {
            index.key(&path)
        } else {
            index.value(&path)
        };
        errors.push(ConfigError {
            file: file.to_owned(),
            line: pos.line,
            col: pos.col,
            path,
            message,
        });
        match unknown_field {
            Some(field) if remove_field(&mut value, &segments, &field) => continue,
            _ => return (None, errors),
        }
    }
    (None, errors)
}

/// Removes `field` from the mapping that `segments` lead to (or its parent, when the path
/// already ends at the field). Returns whether something was removed.
fn remove_field(value: &mut Value, segments: &[Segment], field: &str) -> bool {
    let segments = match segments.last() {
        Some(Segment::Map { key }) if key == field => &segments[..segments.len() - 1],
        _ => segments,
    };
    let mut current = value;
    for segment in segments {
        let next = match (segment, current) {
            (Segment::Seq { index }, Value::Array(items)) => items.get_mut(*index),
            (Segment::Map { key }, Value::Object(map)) => map.get_mut(key.as_str()),
            _ => None,
        };
        match next {
            Some(v) => current = v,
            None => return false,
        }
    }
    match current {
        Value::Object(map) => map.shift_remove(field).is_some(),
        _ => false,
    }
}

fn path_text(path: &serde_path_to_error::Path) -> String {
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => out = join_key(&out, key),
            Segment::Enum { variant } => out = join_key(&out, variant),
            Segment::Unknown => out = join_key(&out, "?"),
        }
    }
    out
}

/// Rewords serde's message into `problem (expected …)`; returns the path (extended with the
/// offending field name where serde names one), the message, and whether the error sits on a
/// mapping key rather than a value.
fn describe(path: String, message: &str) -> (String, String, bool) {
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let (field, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let path = if path == field || path.ends_with(&format!(".{field}")) {
            path
        } else {
            join_key(&path, field)
        };
        let expected = expected
            .trim_start_matches(", ")
            .trim_start_matches("expected ")
            .replace("one of ", "one of: ")
            .replace('`', "");
        let expected = if expected == "there are no fields" {
            "no fields".to_owned()
        } else {
            expected
        };
        return (
            path,
            format!("unknown field {field:?} (expected {expected})"),
            true,
        );
    }
    if let Some(rest) = message.strip_prefix("missing field `") {
        let field = rest.trim_end_matches('`');
        return (
            join_key(&path, field),
            format!("missing field {field:?} (expected it to be set)"),
            false,
        );
    }
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        let (value, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let expected = expected
            .trim_start_matches(", ")
            .trim_start_matches("expected ")
            .replace("one of ", "one of: ")
            .replace('`', "");
        return (
            path,
            format!("unknown value {value:?} (expected {expected})"),
            false,
        );
    }
    let message = match message.rsplit_once(", expected ") {
        Some((problem, expected)) => {
            let expected = match expected {
                "u8" => "an integer from 0 to 255",
                "u16" => "an integer from 0 to 65535",
                "u32" => "an integer from 0 to 4294967295",
                "u64" => "a non-negative integer",
                "i64" => "an integer",
                "a boolean" => "true or false",
                other => other,
            };
            format!(
                "{} (expected {})",
                problem.replace('`', ""),
                expected.replace('`', "")
            )
        }
        None => message.to_owned(),
    };
    (path, message, false)
}
