//! Walking a `data` array, flat or nested, element by element into a [`Sink`]; FP32 in runs.

use super::super::reader::Reader;
use super::Sink;
use crate::translate::datatype::DataType;

/// Decodes `data`, flat or nested, into a [`Sink`].
pub(in crate::translate::json_in) fn data(
    r: &mut Reader<'_>,
    sink: &mut Sink<'_>,
) -> Result<(), String> {
    if sink.dt == Some(DataType::Fp32) {
        return data_fp32(r, sink);
    }
    r.array(|r| match r.peek() {
        Some(b'[') => data(r, sink),
        Some(b'"') => {
            let s = r.string()?;
            sink.push_str(&s).map_err(|e| r.error(e))
        }
        Some(b't') if r.literal(b"true") => sink.push_bool(true).map_err(|e| r.error(e)),
        Some(b'f') if r.literal(b"false") => sink.push_bool(false).map_err(|e| r.error(e)),
        Some(b'n') if r.literal(b"null") => Err(r.error("null is not a tensor element")),
        _ => {
            let n = r.number()?;
            sink.push_num(n).map_err(|e| r.error(e))
        }
    })
}

/// [`data`] for FP32, the bulk of model traffic: numbers go straight into the packed field's
/// bytes with no per-element dispatch on the datatype. A flat run of plain numbers goes through
/// [`Reader::fp32_run`]; an element it leaves (NaN, a long mantissa, the last bytes of the
/// document) is read here, exactly, and the run resumes after it.
fn data_fp32(r: &mut Reader<'_>, sink: &mut Sink<'_>) -> Result<(), String> {
    r.array(|r| {
        if r.peek() == Some(b'[') {
            return data_fp32(r, sink);
        }
        let ran = r.fp32_run(&mut sink.fp32);
        if ran > 0 {
            return sink.ran_fp32(ran).map_err(|e| r.error(e));
        }
        let v = match r.f32_fast() {
            Some(v) => v,
            None => {
                let n = r.number()?;
                let v = n
                    .to_f32()
                    .ok_or_else(|| r.error(format!("invalid number {n:?}")))?;
                sink.in_range(&n, v.is_finite(), v == 0.0, DataType::Fp32)
                    .map_err(|e| r.error(e))?;
                v
            }
        };
        sink.push_f32(v).map_err(|e| r.error(e))
    })
}
