//! Open Inference Protocol answers compared per output tensor: REST JSON and the binary
//! extension read by the translator's REST reader, gRPC by the generated messages.

use prost::Message;

use super::{Answer, CompareSettings, Comparison, Difference, Elements, Verdict};
use crate::translate::grpc_frame;
use crate::translate::grpc_to_rest::rest_outputs;
use crate::translate::pb;
use crate::translate::tensor_data::TensorData;
use crate::translate::{DataType, INFERENCE_HEADER_CONTENT_LENGTH};

/// One output tensor.
#[derive(Debug)]
pub(super) struct Output {
    pub(super) name: String,
    pub(super) datatype: DataType,
    pub(super) shape: Vec<i64>,
    pub(super) elements: Elements,
}

pub(super) fn compare(
    settings: &CompareSettings,
    primary: &Answer,
    candidate: &Answer,
    grpc: bool,
) -> Comparison {
    let read = |side: &str, a: &Answer| {
        read(a, grpc, settings.max_body).map_err(|e| format!("{side} answer: {e}"))
    };
    let (p, c) = match (read("primary", primary), read("candidate", candidate)) {
        (Ok(p), Ok(c)) => (p, c),
        (Err(e), _) | (_, Err(e)) => {
            return Comparison {
                verdict: Verdict::Error(e),
                max_abs_diff: None,
                argmax_agrees: None,
            };
        }
    };
    outputs(settings, &p, &c)
}

/// Reads an answer's output tensors.
pub(super) fn read(a: &Answer, grpc: bool, limit: u64) -> Result<Vec<Output>, String> {
    if grpc {
        return read_grpc(a);
    }
    let header_len = a
        .headers
        .get(INFERENCE_HEADER_CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok());
    let (_, tensors) =
        rest_outputs(header_len, a.body.clone(), limit).map_err(|e| e.to_string())?;
    tensors
        .into_iter()
        .map(|t| {
            let elements = match t.data {
                TensorData::Typed(c) => Elements::from_contents(t.dt, c),
                TensorData::Raw(r) | TensorData::Fp32Le(r) => {
                    Elements::from_raw(t.dt, &r).map_err(|e| format!("output {:?}: {e}", t.name))?
                }
                TensorData::Pending(_) => {
                    return Err(format!("output {:?}: binary section missing", t.name));
                }
            };
            Ok(Output {
                name: t.name,
                datatype: t.dt,
                shape: t.shape,
                elements,
            })
        })
        .collect()
}

fn read_grpc(a: &Answer) -> Result<Vec<Output>, String> {
    let msg = grpc_frame::unframe(&a.body)?;
    let resp =
        pb::ModelInferResponse::decode(msg).map_err(|e| format!("ModelInferResponse: {e}"))?;
    let mut raw = resp.raw_output_contents.into_iter();
    let use_raw = raw.len() > 0;
    resp.outputs
        .into_iter()
        .map(|o| {
            let datatype = DataType::parse(&o.datatype)
                .ok_or_else(|| format!("output {:?}: unknown datatype {:?}", o.name, o.datatype))?;
            let elements = if use_raw {
                let bytes = raw
                    .next()
                    .ok_or_else(|| format!("output {:?}: no raw_output_contents entry", o.name))?;
                Elements::from_raw(datatype, &bytes)
                    .map_err(|e| format!("output {:?}: {e}", o.name))?
            } else {
                Elements::from_contents(datatype, o.contents.unwrap_or_default())
            };
            Ok(Output {
                name: o.name,
                datatype,
                shape: o.shape,
                elements,
            })
        })
        .collect()
}

/// Compares two answers' outputs, matched by name.
pub(super) fn outputs(settings: &CompareSettings, p: &[Output], c: &[Output]) -> Comparison {
    let mut diff = Diff::default();
    for po in p {
        let Some(co) = c.iter().find(|co| co.name == po.name) else {
            diff.differ(&po.name, None, "present".into(), "missing".into());
            continue;
        };
        if po.datatype != co.datatype {
            let dt = |o: &Output| o.datatype.as_str().to_owned();
            diff.differ(&po.name, None, dt(po), dt(co));
            continue;
        }
        if po.shape != co.shape || po.elements.len() != co.elements.len() {
            diff.differ(
                &po.name,
                None,
                format!("shape {:?}", po.shape),
                format!("shape {:?}", co.shape),
            );
            continue;
        }
        diff.elements(settings, po, co);
    }
    for co in c {
        if !p.iter().any(|po| po.name == co.name) {
            diff.differ(&co.name, None, "missing".into(), "present".into());
        }
    }
    Comparison {
        verdict: match diff.first {
            None => Verdict::Match,
            Some(first) => Verdict::Mismatch {
                first,
                count: diff.count,
            },
        },
        max_abs_diff: diff.max_abs,
        argmax_agrees: diff.argmax,
    }
}

#[derive(Default)]
struct Diff {
    first: Option<Difference>,
    count: usize,
    max_abs: Option<f64>,
    argmax: Option<bool>,
}

impl Diff {
    fn differ(&mut self, tensor: &str, index: Option<usize>, primary: String, candidate: String) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(Difference {
                tensor: tensor.to_owned(),
                index,
                primary,
                candidate,
            });
        }
    }

    fn elements(&mut self, settings: &CompareSettings, p: &Output, c: &Output) {
        let (pe, ce) = (&p.elements, &c.elements);
        for i in 0..pe.len() {
            let agree = match (pe.number(i), ce.number(i)) {
                (Some(a), Some(b)) => {
                    let d = (b - a).abs();
                    if d.is_finite() {
                        self.max_abs = Some(self.max_abs.map_or(d, |m: f64| m.max(d)));
                    }
                    settings.tolerance.agrees(a, b)
                }
                _ => pe.bytes(i) == ce.bytes(i),
            };
            if !agree {
                let (a, b) = (pe.text(i), ce.text(i));
                self.differ(&p.name, Some(i), a, b);
            }
        }
        if let Some(same) = argmax_agrees(p, c) {
            self.argmax = Some(self.argmax.unwrap_or(true) && same);
        }
    }
}

/// For a classification output (floating point, 1-D or 2-D: one row, or a batch of rows),
/// whether each row's argmax is the same in both; `None` for other outputs.
fn argmax_agrees(p: &Output, c: &Output) -> Option<bool> {
    if !p.elements.is_float() || !(1..=2).contains(&p.shape.len()) || p.elements.is_empty() {
        return None;
    }
    let cols = usize::try_from(*p.shape.last()?).ok().filter(|&n| n > 0)?;
    let rows = p.elements.len() / cols;
    Some(
        (0..rows)
            .all(|r| argmax(&p.elements, r * cols, cols) == argmax(&c.elements, r * cols, cols)),
    )
}

/// Index of the largest of `len` elements from `start` (the first on ties; NaN never wins).
fn argmax(e: &Elements, start: usize, len: usize) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for i in 0..len {
        let Some(v) = e.number(start + i).filter(|v| !v.is_nan()) else {
            continue;
        };
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}
