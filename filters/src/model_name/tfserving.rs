//! The model a TF Serving gRPC call names: `tensorflow.serving.PredictionService` requests
//! (`PredictRequest`, `GetModelMetadataRequest`, `ClassificationRequest`, `RegressionRequest`)
//! carry a `ModelSpec` in field 1, whose `name` is field 1 and whose version is an
//! `Int64Value` in field 2 or a `version_label` string in field 4. Like [`from_grpc_frame`]
//! it reads only what it needs and stops at the end of the available bytes.
//!
//! [`from_grpc_frame`]: super::from_grpc_frame

use super::{ModelRef, grpc_frame_len, read_varint};

/// Path prefix of TF Serving's prediction service.
pub const TFSERVING_GRPC_SERVICE_PREFIX: &str = "/tensorflow.serving.PredictionService/";

/// True when `path` is a TF Serving gRPC method whose request names a model in field 1.
pub fn is_tfserving_grpc_model_method(path: &str) -> bool {
    matches!(
        path.strip_prefix(TFSERVING_GRPC_SERVICE_PREFIX),
        Some("Predict" | "GetModelMetadata" | "Classify" | "Regress")
    )
}

/// Reads `model_spec.name` and its version from the first gRPC message in `prefix`.
pub fn from_tfserving_grpc_frame(prefix: &[u8]) -> Option<ModelRef> {
    let (&flag, rest) = prefix.split_first()?;
    if flag != 0 {
        return None;
    }
    let declared = grpc_frame_len(prefix)?.saturating_sub(5);
    let body = rest.get(4..)?;
    let msg = body.get(..body.len().min(declared))?;
    // Field 1, length-delimited: the ModelSpec (encoders write it first).
    let (key, used) = read_varint(msg)?;
    if key != (1 << 3) | 2 {
        return None;
    }
    let msg = msg.get(used..)?;
    let (len, used) = read_varint(msg)?;
    let spec = msg.get(used..)?;
    let spec = spec.get(..spec.len().min(usize::try_from(len).ok()?))?;
    let mut name = None;
    let mut version = None;
    for (field, value) in fields(spec) {
        match (field, value) {
            (1, Value::Bytes(v)) => name = Some(std::str::from_utf8(v).ok()?.to_owned()),
            (4, Value::Bytes(v)) => version = Some(std::str::from_utf8(v).ok()?.to_owned()),
            (2, Value::Bytes(v)) => {
                version = fields(v)
                    .find_map(|f| match f {
                        (1, Value::Varint(n)) => Some((n as i64).to_string()),
                        _ => None,
                    })
                    .or(Some("0".to_owned()));
            }
            _ => {}
        }
    }
    Some(ModelRef {
        name: name.filter(|n| !n.is_empty())?,
        version,
    })
}

enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// The fields of a message, in wire order, until the bytes end or stop making sense.
fn fields(mut msg: &[u8]) -> impl Iterator<Item = (u64, Value<'_>)> {
    std::iter::from_fn(move || {
        let (key, used) = read_varint(msg)?;
        msg = msg.get(used..)?;
        let value = match key & 7 {
            0 => {
                let (v, used) = read_varint(msg)?;
                msg = msg.get(used..)?;
                Value::Varint(v)
            }
            1 => {
                msg = msg.get(8..)?;
                Value::Fixed
            }
            5 => {
                msg = msg.get(4..)?;
                Value::Fixed
            }
            2 => {
                let (len, used) = read_varint(msg)?;
                let rest = msg.get(used..)?;
                let len = usize::try_from(len).ok()?;
                let v = rest.get(..len)?;
                msg = rest.get(len..)?;
                Value::Bytes(v)
            }
            _ => return None,
        };
        Some((key >> 3, value))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(msg: &[u8]) -> Vec<u8> {
        let mut out = vec![0];
        out.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        out.extend_from_slice(msg);
        out
    }

    #[test]
    fn model_spec_name_and_either_version() {
        // PredictRequest { model_spec { name: "resnet", version { value: 7 } }, inputs {...} }
        let spec = [&[0x0a, 6][..], b"resnet", &[0x12, 2, 0x08, 7]].concat();
        let msg = [&[0x0a, spec.len() as u8][..], &spec, &[0x12, 3, 1, 2, 3]].concat();
        let got = from_tfserving_grpc_frame(&frame(&msg));
        assert_eq!(
            got,
            Some(ModelRef {
                name: "resnet".into(),
                version: Some("7".into())
            })
        );
        let spec = [
            &[0x0a, 1][..],
            b"m",
            &[0x22, 6],
            b"stable",
            &[0x1a, 1],
            b"s",
        ]
        .concat();
        let msg = [&[0x0a, spec.len() as u8][..], &spec].concat();
        let got = from_tfserving_grpc_frame(&frame(&msg)).unwrap();
        assert_eq!(
            (got.name.as_str(), got.version.as_deref()),
            ("m", Some("stable"))
        );
        // No spec first, an empty name, a compressed frame: nothing.
        assert_eq!(from_tfserving_grpc_frame(&frame(&[0x12, 0])), None);
        assert_eq!(from_tfserving_grpc_frame(&frame(&[0x0a, 2, 0x0a, 0])), None);
        assert_eq!(from_tfserving_grpc_frame(&[1, 0, 0, 0, 0]), None);
        assert!(is_tfserving_grpc_model_method(
            "/tensorflow.serving.PredictionService/Predict"
        ));
        assert!(!is_tfserving_grpc_model_method(
            "/tensorflow.serving.PredictionService/MultiInference"
        ));
    }
}
