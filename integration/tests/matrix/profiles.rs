//! What each server's model is sent and must answer: one profile per model, its inputs, its
//! signature for the bridging routes, and its outputs computed here from the inputs (so every
//! cell is checked against the model's function, not only against another call).

use serde_json::{Value, json};

/// The elements of a tensor.
#[derive(Debug, Clone)]
pub enum Data {
    F32(Vec<f32>),
    I64(Vec<i64>),
    Str(Vec<String>),
}

/// A named tensor.
#[derive(Debug, Clone)]
pub struct Tensor {
    pub name: &'static str,
    pub shape: Vec<usize>,
    pub data: Data,
}

/// A model, what it is sent and what it answers.
#[derive(Debug, Clone)]
pub struct Profile {
    pub model: &'static str,
    pub inputs: Vec<Tensor>,
    pub outputs: Vec<Tensor>,
}

fn x() -> Vec<f32> {
    vec![1.5, -2.0, 3.25, 0.1, 1e-8, -1e30]
}

fn names() -> Vec<String> {
    vec!["a".to_owned(), "bé".to_owned()]
}

/// Python's `str.upper`.
fn upper(v: &[String]) -> Data {
    Data::Str(v.iter().map(|s| s.to_uppercase()).collect())
}

/// Python's `bytes.upper` (the TF peer upper-cases the DT_STRING bytes): ASCII only.
fn ascii_upper(v: &[String]) -> Data {
    Data::Str(v.iter().map(|s| s.to_ascii_uppercase()).collect())
}

fn t(name: &'static str, shape: &[usize], data: Data) -> Tensor {
    Tensor {
        name,
        shape: shape.to_vec(),
        data,
    }
}

// === impl Profile ===

impl Profile {
    /// MLServer's echo model: every input back as itself.
    pub fn echo() -> Profile {
        let inputs = vec![
            t("x", &[2, 3], Data::F32(x())),
            t("name", &[2], Data::Str(names())),
        ];
        Profile {
            model: "echo",
            outputs: inputs.clone(),
            inputs,
        }
    }

    /// KServe's V1 `scorer` (`peers/bridge/v1_models.py`): 2x, the positives per row, the tag
    /// upper-cased.
    pub fn scorer() -> Profile {
        let positives = x()
            .chunks(3)
            .map(|row| row.iter().filter(|v| **v > 0.0).count() as i64)
            .collect();
        Profile {
            model: "scorer",
            inputs: vec![
                t("x", &[2, 3], Data::F32(x())),
                t("tag", &[2], Data::Str(names())),
            ],
            outputs: vec![
                t(
                    "doubled",
                    &[2, 3],
                    Data::F32(x().iter().map(|v| 2.0 * v).collect()),
                ),
                t("positives", &[2], Data::I64(positives)),
                t("label", &[2], upper(&names())),
            ],
        }
    }

    /// TorchServe's `pair_json` (`peers/torchserve/handler.py`): y = x + 1, count = 10 n.
    pub fn pair() -> Profile {
        let n = vec![7, -(1_i64 << 40)];
        Profile {
            model: "pair_json",
            inputs: vec![
                t("x", &[2, 3], Data::F32(x())),
                t("n", &[2], Data::I64(n.clone())),
            ],
            outputs: vec![
                t(
                    "y",
                    &[2, 3],
                    Data::F32(x().iter().map(|v| v + 1.0).collect()),
                ),
                t("count", &[2], Data::I64(n.iter().map(|v| v * 10).collect())),
            ],
        }
    }

    /// The TF Serving peer's `affine` (`peers/tfserving/tf_server.py`): y = 2x + 1 computed in
    /// f64 and stored as f32, the name's bytes upper-cased.
    pub fn affine() -> Profile {
        let x = vec![1.5_f32, -2.25, 0.1, 3.0e30];
        let y = x
            .iter()
            .map(|v| (2.0 * f64::from(*v) + 1.0) as f32)
            .collect();
        Profile {
            model: "affine",
            inputs: vec![
                t("x", &[2, 2], Data::F32(x)),
                t("name", &[2], Data::Str(names())),
            ],
            outputs: vec![
                t("y", &[2, 2], Data::F32(y)),
                t("label", &[2], ascii_upper(&names())),
            ],
        }
    }

    /// The profile as a caller script's job reads it.
    pub fn job(&self) -> Value {
        json!({
            "model": self.model,
            "inputs": self.inputs.iter().map(Tensor::sent).collect::<Vec<_>>(),
            "outputs": self.outputs.iter().map(|o| json!({"name": o.name, "datatype": o.datatype()})).collect::<Vec<_>>(),
        })
    }

    /// The outputs as the caller scripts print them.
    pub fn expected(&self) -> Value {
        self.outputs
            .iter()
            .map(|o| (o.name.to_owned(), o.printed()))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    /// The route's `signature` (every size but the first fixed), with or without outputs.
    pub fn signature(&self, outputs: bool) -> String {
        let list = |ts: &[Tensor]| {
            ts.iter()
                .map(|t| {
                    let mut shape = vec!["-1".to_owned()];
                    shape.extend(t.shape.iter().skip(1).map(ToString::to_string));
                    format!(
                        "{{ name: {}, datatype: {}, shape: [{}] }}",
                        t.name,
                        t.datatype(),
                        shape.join(", ")
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut sig = format!("{{ inputs: [{}]", list(&self.inputs));
        if outputs {
            sig.push_str(&format!(", outputs: [{}]", list(&self.outputs)));
        }
        sig.push_str(" }");
        sig
    }
}

// === impl Tensor ===

impl Tensor {
    pub fn datatype(&self) -> &'static str {
        match self.data {
            Data::F32(_) => "FP32",
            Data::I64(_) => "INT64",
            Data::Str(_) => "BYTES",
        }
    }

    /// As a job sends it: the elements as JSON numbers or strings.
    fn sent(&self) -> Value {
        let data = match &self.data {
            Data::F32(v) => json!(v),
            Data::I64(v) => json!(v),
            Data::Str(v) => json!(v),
        };
        json!({"name": self.name, "datatype": self.datatype(), "shape": self.shape, "data": data})
    }

    /// As a caller prints it: FP32 as bit patterns.
    fn printed(&self) -> Value {
        let values = match &self.data {
            Data::F32(v) => json!(v.iter().map(|f| f.to_bits()).collect::<Vec<_>>()),
            Data::I64(v) => json!(v),
            Data::Str(v) => json!(v),
        };
        json!({"datatype": self.datatype(), "shape": self.shape, "values": values})
    }
}
