//! The same hostile bodies against `validate_tensors` instead of translation: the check
//! reads a REST infer request's tensor names, datatypes and shapes with its own pass over the
//! JSON (or the binary extension's header) and forwards the body untouched when it matches.
//! Whatever it refuses reaches the upstream not at all; whatever it passes reaches it byte for
//! byte. It never parses tensor data, so a number out of range for its type and a binary
//! section shorter than its declared size go through as the caller wrote them, for the model
//! server to judge (translation, which must decode them, refuses both).

use serde_json::{Value, json};

use crate::harness::Suite;

use super::{Case, exchange};

/// Requests with this `Host` take the `validate_tensors` route.
pub(super) const AUTHORITY: &str = "check.test";
/// The one model the static metadata knows; every case calls it.
const PATH: &str = "/v2/models/m/infer";

/// Static metadata: model `m` takes one FP32 input `INPUT0` of any length.
pub(super) fn settings() -> Value {
    json!({
        "metadata": "static",
        "models": [{ "name": "m", "inputs": [
            { "name": "INPUT0", "datatype": "FP32", "shape": [-1] },
        ]}],
    })
}

/// Cases that are the data's fault, which the check does not read.
const IN_THE_DATA: [&str; 3] = [
    "fp32-100k-digits",
    "fp32-100k-digit-fraction",
    "binary-size-beyond-body",
];

pub(super) async fn run(suite: &mut Suite, c: &Case) -> anyhow::Result<()> {
    let status = if IN_THE_DATA.contains(&c.name) {
        200
    } else {
        c.status
    };
    let before = suite.recorder.under(PATH).len();
    exchange(suite, c, AUTHORITY, PATH, status).await?;
    let reached = suite.recorder.under(PATH);
    let new = &reached[before..];
    if status == 200 {
        let untouched = new.len() == 1 && new[0].body == c.body;
        suite.check(
            c.name,
            untouched,
            format_args!(
                "{} reached the upstream, want 1 with the body as sent",
                new.len()
            ),
        );
    } else {
        suite.check(
            c.name,
            new.is_empty(),
            format_args!("validate_tensors let {} through", new.len()),
        );
    }
    Ok(())
}
