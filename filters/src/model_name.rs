//! Which model a request addresses, found without parsing more than needed.
//!
//! Three sources, cheapest first:
//! - the Open Inference Protocol path `/v2/models/{name}[/versions/{version}][/...]`;
//! - the first message of an `inference.GRPCInferenceService` call, whose fields 1 and 2 are
//!   `model_name` and `model_version` in every message that names a model (`ModelInferRequest`,
//!   `ModelMetadataRequest`, `ModelReadyRequest`), or of a `tensorflow.serving.PredictionService`
//!   call, whose field 1 is the `ModelSpec` (`tfserving`);
//! - the top-level `"model"` string of an OpenAI-style JSON body, read from a bounded prefix.
//!
//! Each function borrows the bytes it is given and allocates only the returned strings; callers
//! keep the bytes they read and forward them unchanged.

mod tfserving;

pub use self::tfserving::{
    TFSERVING_GRPC_SERVICE_PREFIX, from_tfserving_grpc_frame, is_tfserving_grpc_model_method,
};

/// The model a request names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelRef {
    /// Model name.
    pub name: String,
    /// Model version, when the request gives one.
    pub version: Option<String>,
}

/// The gRPC service whose first message carries `model_name = 1`, `model_version = 2`.
pub const OIP_GRPC_SERVICE_PREFIX: &str = "/inference.GRPCInferenceService/";

/// Finds the model in an Open Inference Protocol REST path.
///
/// `/v2/models/resnet/versions/2/infer` → `resnet`, `2`; `/v2/models/resnet/infer` → `resnet`.
pub fn from_oip_path(path: &str) -> Option<ModelRef> {
    let rest = path.strip_prefix("/v2/models/")?;
    let mut segments = rest.split('/');
    let name = segments.next().filter(|s| !s.is_empty())?;
    let version = match (segments.next(), segments.next()) {
        (Some("versions"), Some(v)) if !v.is_empty() => Some(v.to_owned()),
        _ => None,
    };
    Some(ModelRef {
        name: name.to_owned(),
        version,
    })
}

/// Finds the model in a KServe V1 / TF Serving REST path.
///
/// `/v1/models/resnet:predict` → `resnet`; `/v1/models/resnet/versions/2:predict` → `resnet`,
/// `2`; `/v1/models/resnet` → `resnet`.
pub fn from_v1_path(path: &str) -> Option<ModelRef> {
    let rest = path.strip_prefix("/v1/models/")?;
    let target = rest.rsplit_once(':').map_or(rest, |(t, _)| t);
    let mut segments = target.split('/');
    let name = segments.next().filter(|s| !s.is_empty())?;
    let version = match (segments.next(), segments.next()) {
        (Some("versions"), Some(v)) if !v.is_empty() => Some(v.to_owned()),
        _ => None,
    };
    Some(ModelRef {
        name: name.to_owned(),
        version,
    })
}

/// True when `path` is an OIP gRPC method whose request message names a model.
pub fn is_oip_grpc_model_method(path: &str) -> bool {
    matches!(
        path.strip_prefix(OIP_GRPC_SERVICE_PREFIX),
        Some("ModelInfer" | "ModelStreamInfer" | "ModelMetadata" | "ModelReady" | "ModelConfig")
    )
}

/// How many bytes of a gRPC body are needed before [`from_grpc_frame`] can answer: the 5-byte
/// frame header plus the message length, or `None` if fewer than 5 bytes are available.
pub fn grpc_frame_len(prefix: &[u8]) -> Option<usize> {
    let header = prefix.get(..5)?;
    let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
    Some(5usize.saturating_add(len))
}

/// Reads `model_name` (field 1) and `model_version` (field 2) from the first length-prefixed
/// gRPC message in `prefix`.
///
/// Works on a truncated message too: fields are scanned in wire order and scanning stops at the
/// end of the available bytes, so a caller may pass only the first few KiB of a large
/// `ModelInferRequest` (protobuf encoders write fields in field-number order). Compressed frames
/// (flag 1) are not inspected.
pub fn from_grpc_frame(prefix: &[u8]) -> Option<ModelRef> {
    let (&flag, rest) = prefix.split_first()?;
    if flag != 0 {
        return None;
    }
    let declared = grpc_frame_len(prefix)?.saturating_sub(5);
    let body = rest.get(4..)?;
    let msg = &body[..body.len().min(declared)];
    let mut name = None;
    let mut version = None;
    let mut cursor = msg;
    while !cursor.is_empty() && (name.is_none() || version.is_none()) {
        let (key, used) = read_varint(cursor)?;
        cursor = &cursor[used..];
        let field = key >> 3;
        match key & 7 {
            0 => {
                let (_, used) = read_varint(cursor)?;
                cursor = &cursor[used..];
            }
            1 => cursor = cursor.get(8..)?,
            5 => cursor = cursor.get(4..)?,
            2 => {
                let (len, used) = read_varint(cursor)?;
                cursor = &cursor[used..];
                let len = usize::try_from(len).ok()?;
                let Some(value) = cursor.get(..len) else {
                    break;
                };
                match field {
                    1 => name = Some(std::str::from_utf8(value).ok()?.to_owned()),
                    2 => version = Some(std::str::from_utf8(value).ok()?.to_owned()),
                    _ => {}
                }
                cursor = &cursor[len..];
            }
            _ => return None,
        }
    }
    let name = name.filter(|n| !n.is_empty())?;
    Some(ModelRef {
        name,
        version: version.filter(|v| !v.is_empty()),
    })
}

fn read_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Finds the top-level `"model": "<string>"` member of a JSON object in `prefix`.
///
/// A small scanner instead of a JSON parser: it tracks nesting depth and strings so a `"model"`
/// key inside `messages` or a string value does not count, and it needs only the bytes up to the
/// value, so the rest of a large body is never looked at. Returns `None` when the prefix ends
/// first or the value is not a string.
pub fn from_json_prefix(prefix: &[u8]) -> Option<ModelRef> {
    let mut depth = 0usize;
    let mut i = 0usize;
    // Whether the string that just ended at depth 1 was an object key named "model".
    let mut expect_value_for_model = false;
    let mut after_key = false;
    while i < prefix.len() {
        let b = prefix[i];
        match b {
            b'"' => {
                let (end, is_model) = scan_string(prefix, i)?;
                if depth == 1 && after_key {
                    if expect_value_for_model {
                        return decode_json_string(&prefix[i + 1..end])
                            .filter(|name| !name.is_empty())
                            .map(|name| ModelRef {
                                name,
                                version: None,
                            });
                    }
                    after_key = false;
                } else if depth == 1 {
                    expect_value_for_model = is_model;
                    // A key is followed by ':'; remember we are between key and value.
                    let mut j = end + 1;
                    while j < prefix.len() && prefix[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if prefix.get(j) == Some(&b':') {
                        after_key = true;
                        i = j + 1;
                        continue;
                    }
                    expect_value_for_model = false;
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' => {
                if depth == 1 && after_key {
                    after_key = false;
                    expect_value_for_model = false;
                }
                depth += 1;
            }
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b',' if depth == 1 => {
                after_key = false;
                expect_value_for_model = false;
            }
            // A value that is not a string, object or array (a number, `true`, garbage): the
            // model's value is not a string, and no later string is its value.
            _ if depth == 1 && after_key && !b.is_ascii_whitespace() => {
                if expect_value_for_model {
                    return None;
                }
                after_key = false;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Returns the index of the closing quote of the string starting at `start`, and whether its
/// raw content is exactly `model`.
fn scan_string(bytes: &[u8], start: usize) -> Option<(usize, bool)> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some((i, &bytes[start + 1..i] == b"model")),
            _ => i += 1,
        }
    }
    None
}

fn decode_json_string(raw: &[u8]) -> Option<String> {
    if !raw.contains(&b'\\') {
        return std::str::from_utf8(raw).ok().map(str::to_owned);
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    decode_escaped(&quoted)
}

fn decode_escaped(quoted: &[u8]) -> Option<String> {
    // Escapes in model names are rare; a minimal decoder for the common escapes keeps this
    // crate free of a JSON dependency.
    let inner = quoted.get(1..quoted.len().checked_sub(1)?)?;
    let text = std::str::from_utf8(inner).ok()?;
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            '"' => out.push('"'),
            '\\' => out.push('\\'),
            '/' => out.push('/'),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16).ok()?;
                out.push(char::from_u32(code)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
