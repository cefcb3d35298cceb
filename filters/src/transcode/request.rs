//! Builds the gRPC request message from the body, path variables and query parameters.
//!
//! Precedence, lowest first: body, query, path. With `body: "*"` query parameters only fill
//! fields the body left unset (every field may travel in the body, so the body wins); with
//! `body: "field"` a parameter naming that field is refused, since it belongs in the body.

use base64::Engine as _;
use prost::Message as _;
use prost_reflect::{
    DeserializeOptions, DynamicMessage, FieldDescriptor, Kind, ReflectMessage, Value,
};

use super::error::TranscodeError;
use super::rules::{Binding, BodyTarget, resolve_path};
use super::template::Captures;

/// Most query parameters one request may carry (bounds the work on hostile URLs).
const MAX_QUERY_PARAMS: usize = 1024;

/// The encoded request message.
pub(crate) fn build(
    binding: &Binding,
    captures: Captures,
    query: Option<&str>,
    body: &[u8],
    deny_unknown: bool,
) -> Result<Vec<u8>, TranscodeError> {
    let input = binding.method.input();
    let options = DeserializeOptions::new().deny_unknown_fields(deny_unknown);
    let mut msg = match &binding.body {
        BodyTarget::None => DynamicMessage::new(input),
        BodyTarget::Whole if body.iter().all(u8::is_ascii_whitespace) => DynamicMessage::new(input),
        BodyTarget::Whole => from_json(input, body, &options)?,
        BodyTarget::Field(field) => {
            let mut msg = DynamicMessage::new(input);
            if !body.iter().all(u8::is_ascii_whitespace) {
                set_from_json(&mut msg, field, body, &options)?;
            }
            msg
        }
    };
    if let Some(query) = query {
        apply_query(&mut msg, binding, query, deny_unknown)?;
    }
    for (path, value) in captures {
        set_path(&mut msg, &path, &value, true)?;
    }
    Ok(msg.encode_to_vec())
}

fn from_json(
    desc: prost_reflect::MessageDescriptor,
    body: &[u8],
    options: &DeserializeOptions,
) -> Result<DynamicMessage, TranscodeError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let msg = DynamicMessage::deserialize_with_options(desc, &mut de, options)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| TranscodeError::BadRequest(format!("request body: {e}")))?;
    Ok(msg)
}

/// `body: "field"`: the body is that field's JSON value. It is parsed as one JSON value first,
/// then wrapped as `{"field": value}` for the message deserializer (which knows every type's
/// mapping), so a body cannot reach other fields.
fn set_from_json(
    msg: &mut DynamicMessage,
    field: &FieldDescriptor,
    body: &[u8],
    options: &DeserializeOptions,
) -> Result<(), TranscodeError> {
    let raw: &serde_json::value::RawValue = serde_json::from_slice(body)
        .map_err(|e| TranscodeError::BadRequest(format!("request body: {e}")))?;
    let wrapped = format!("{{\"{}\":{}}}", field.name(), raw.get());
    let partial = from_json(msg.descriptor(), wrapped.as_bytes(), options)?;
    msg.set_field(field, partial.get_field(field).into_owned());
    Ok(())
}

fn apply_query(
    msg: &mut DynamicMessage,
    binding: &Binding,
    query: &str,
    deny_unknown: bool,
) -> Result<(), TranscodeError> {
    let input = binding.method.input();
    for pair in query
        .split('&')
        .filter(|p| !p.is_empty())
        .take(MAX_QUERY_PARAMS)
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = form_decode(key);
        let value = form_decode(value);
        let path: Vec<String> = key.split('.').map(str::to_owned).collect();
        let fields = match resolve_path(&input, &path) {
            Ok(f) => f,
            Err(why) if deny_unknown => {
                return Err(TranscodeError::BadRequest(format!(
                    "query parameter {key:?}: {why}"
                )));
            }
            Err(_) => continue,
        };
        let Some(top) = fields.first() else { continue };
        match &binding.body {
            BodyTarget::Field(body) if body == top => {
                return Err(TranscodeError::BadRequest(format!(
                    "query parameter {key:?}: the field travels in the request body"
                )));
            }
            BodyTarget::Whole if is_set(msg, &fields) => continue,
            _ => {}
        }
        set_path(msg, &path, &value, false)?;
    }
    Ok(())
}

/// Whether the body already set the field at `fields` (a scalar field at any depth).
fn is_set(msg: &DynamicMessage, fields: &[FieldDescriptor]) -> bool {
    match fields {
        [] => true,
        [f, rest @ ..] => {
            msg.has_field(f)
                && match msg.get_field(f).as_message() {
                    Some(inner) if !rest.is_empty() => is_set(inner, rest),
                    _ => true,
                }
        }
    }
}

/// Sets the field at `path` from its text form. Path variables replace; query parameters
/// append to repeated fields (`?tag=a&tag=b`).
fn set_path(
    msg: &mut DynamicMessage,
    path: &[String],
    text: &str,
    replace: bool,
) -> Result<(), TranscodeError> {
    let fields = resolve_path(&msg.descriptor(), path).map_err(TranscodeError::BadRequest)?;
    let name = path.join(".");
    let mut current = msg;
    let last = fields.len().saturating_sub(1);
    for (i, field) in fields.iter().enumerate() {
        if i == last {
            let value = parse_value(field, text)
                .map_err(|why| TranscodeError::BadRequest(format!("field {name:?}: {why}")))?;
            if field.is_list() {
                if replace {
                    current.set_field(field, Value::List(vec![value]));
                } else if let Some(list) = current.get_field_mut(field).as_list_mut() {
                    list.push(value);
                }
            } else if field.is_map() {
                return Err(TranscodeError::BadRequest(format!(
                    "field {name:?}: map fields cannot be set from the URL"
                )));
            } else {
                current.set_field(field, value);
            }
            return Ok(());
        }
        current = current
            .get_field_mut(field)
            .as_message_mut()
            .ok_or_else(|| TranscodeError::BadRequest(format!("field {name:?}: not a message")))?;
    }
    Ok(())
}

/// A scalar, enum or well-known-type value from its URL text.
fn parse_value(field: &FieldDescriptor, text: &str) -> Result<Value, String> {
    let bad = |what: &str| format!("invalid {what} {text:?}");
    Ok(match field.kind() {
        Kind::Double => Value::F64(text.parse().map_err(|_| bad("number"))?),
        Kind::Float => Value::F32(text.parse().map_err(|_| bad("number"))?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            Value::I32(text.parse().map_err(|_| bad("int32"))?)
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            Value::I64(text.parse().map_err(|_| bad("int64"))?)
        }
        Kind::Uint32 | Kind::Fixed32 => Value::U32(text.parse().map_err(|_| bad("uint32"))?),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(text.parse().map_err(|_| bad("uint64"))?),
        Kind::Bool => Value::Bool(text.parse().map_err(|_| bad("bool"))?),
        Kind::String => Value::String(text.to_owned()),
        Kind::Bytes => Value::Bytes(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(text))
                .map_err(|_| bad("base64 bytes"))?
                .into(),
        ),
        Kind::Enum(e) => match e.get_value_by_name(text) {
            Some(v) => Value::EnumNumber(v.number()),
            None => Value::EnumNumber(text.parse().map_err(|_| bad(e.name()))?),
        },
        Kind::Message(m) => {
            // Wrappers hold their value in field 1; every other message (Timestamp,
            // Duration, FieldMask, ...) takes its JSON string form.
            let wrapper = m.package_name() == "google.protobuf"
                && m.name().ends_with("Value")
                && !matches!(m.name(), "Value" | "ListValue");
            if wrapper && let Some(inner) = m.get_field(1) {
                let mut w = DynamicMessage::new(m);
                w.set_field(&inner, parse_value(&inner, text)?);
                Value::Message(w)
            } else {
                let json = serde_json::Value::String(text.to_owned());
                Value::Message(
                    DynamicMessage::deserialize(m.clone(), json)
                        .map_err(|e| format!("invalid {} {text:?}: {e}", m.full_name()))?,
                )
            }
        }
    })
}

/// `application/x-www-form-urlencoded` decoding of a query key or value ('+' is a space).
fn form_decode(s: &str) -> String {
    super::template::percent_decode(&s.replace('+', " "), false)
}
