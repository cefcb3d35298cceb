//! The numeric fast path against the generic element walk: the same tensors, the same bytes
//! written, the same errors, on random FP32 / INT64 tensors, shapes and whitespace.

use proptest::prelude::*;

use super::super::mapping::{oip_request_to_v1, v1_answer_to_oip};
use super::super::nested::{Elem, Nest, Tensor, write_tensor};
use super::super::{OipCall, Signature, TensorSig};
use super::write_list;
use crate::translate::DataType;
use crate::translate::json_in::reader::Reader;

const LIMIT: u64 = 1 << 30;

/// Whitespace JSON allows between tokens, picked by `seed`'s bits.
fn ws(seed: &mut u64) -> &'static str {
    const WS: [&str; 6] = ["", "", " ", "\n  ", "\t", "\r\n "];
    *seed = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    WS[(*seed >> 33) as usize % WS.len()]
}

/// `tokens` as nested arrays of `shape`, with whitespace from `seed` around every token.
fn nested_text(shape: &[usize], tokens: &[String], seed: &mut u64) -> String {
    let Some((&n, inner)) = shape.split_first() else {
        return tokens.first().cloned().unwrap_or_default();
    };
    let step = inner.iter().product::<usize>();
    let mut out = format!("[{}", ws(seed));
    for i in 0..n {
        if i > 0 {
            out.push_str(&format!("{},{}", ws(seed), ws(seed)));
        }
        out.push_str(&nested_text(inner, &tokens[i * step..(i + 1) * step], seed));
    }
    out.push_str(&format!("{}]", ws(seed)));
    out
}

/// A tensor as read: its shape, its elements, and its nested JSON as written back.
type Read<'a> = (Vec<usize>, Vec<Elem<'a>>, Vec<u8>);

/// A tensor read by the walk, fast path on or off, and written by the body-aware writer
/// (checked against the element-wise one).
fn read(text: &str, fast: bool) -> Result<Read<'_>, String> {
    let mut r = Reader::new(text.as_bytes());
    let mut nest = Nest::default();
    nest.walk(&mut r, 0, fast)?;
    r.end()?;
    let t = nest.finish(None)?;
    let (mut runs, mut each) = (Vec::new(), Vec::new());
    write_tensor(&mut runs, &t, false)?;
    let unknown_body = Tensor {
        shape: t.shape.clone(),
        elems: t.elems.clone(),
        ..Tensor::default()
    };
    write_tensor(&mut each, &unknown_body, false)?;
    assert_eq!(runs, each, "run copy and element-wise writer disagree");
    let (mut flat_runs, mut flat_each) = (Vec::new(), Vec::new());
    write_list(&mut flat_runs, &t.elems, t.src, false)?;
    write_list(&mut flat_each, &t.elems, &[], false)?;
    assert_eq!(
        flat_runs, flat_each,
        "flat run copy and element-wise writer disagree"
    );
    Ok((t.shape, t.elems, runs))
}

fn fp32_token() -> impl Strategy<Value = String> {
    (
        any::<f32>().prop_filter("finite", |v| v.is_finite()),
        0..3u8,
    )
        .prop_map(|(v, style)| match style {
            0 => format!("{v}"),
            1 => format!("{v:e}"),
            _ => format!("{v:E}"),
        })
}

fn int64_token() -> impl Strategy<Value = String> {
    any::<i64>().prop_map(|v| v.to_string())
}

/// A shape of rank 1..=3 and that many tokens of one kind.
fn tensor(int: bool) -> impl Strategy<Value = (Vec<usize>, Vec<String>)> {
    prop::collection::vec(1..5usize, 1..4).prop_flat_map(move |shape| {
        let n = shape.iter().product::<usize>();
        let token = if int {
            int64_token().boxed()
        } else {
            fp32_token().boxed()
        };
        (Just(shape), prop::collection::vec(token, n))
    })
}

fn sig(dt: DataType, inner: &[usize]) -> Signature {
    let mut shape = vec![-1];
    shape.extend(inner.iter().map(|&d| d as i64));
    let t = |name: &str| TensorSig {
        name: name.into(),
        datatype: dt,
        shape: shape.clone(),
    };
    Signature {
        inputs: vec![t("x")],
        outputs: vec![t("y")],
    }
}

/// Tokens written compactly as nested arrays of `shape`: what the bridge must send.
fn compact(shape: &[usize], tokens: &[String]) -> String {
    let mut none = 0u64;
    // Seed 0 picks "" first, but not always: strip whitespace instead.
    nested_text(shape, tokens, &mut none)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

/// Tokens the generic reader refuses or reads as something other than a plain number.
const ODD: [&str; 24] = [
    "1.",
    "01",
    "-",
    "1e",
    "1e+",
    ".5",
    "-01",
    "+1",
    "1.e3",
    "NaN",
    "Infinity",
    "-Infinity",
    "nan",
    "1x",
    "0x10",
    "1..2",
    "--1",
    "1e5.0",
    "\"1\"",
    "true",
    "null",
    "",
    "1 2",
    "[1]",
];

proptest! {
    #[test]
    fn fast_and_generic_walks_agree(
        (shape, tokens) in prop_oneof![tensor(false), tensor(true)],
        seed in any::<u64>(),
    ) {
        let mut s = seed;
        let text = nested_text(&shape, &tokens, &mut s);
        let fast = read(&text, true);
        prop_assert_eq!(&fast, &read(&text, false));
        let (got_shape, elems, written) = fast.unwrap();
        prop_assert_eq!(got_shape, shape.clone());
        let texts: Vec<&str> = elems
            .iter()
            .map(|e| match e {
                Elem::Num { text, .. } => *text,
                _ => "",
            })
            .collect();
        prop_assert_eq!(texts, tokens.iter().map(String::as_str).collect::<Vec<_>>());
        prop_assert_eq!(String::from_utf8(written).unwrap(), compact(&shape, &tokens));
    }

    #[test]
    fn odd_tokens_meet_the_same_answer(
        (shape, mut tokens) in tensor(false),
        odd in 0..ODD.len(),
        at in any::<prop::sample::Index>(),
        seed in any::<u64>(),
    ) {
        let i = at.index(tokens.len());
        tokens[i] = ODD[odd].to_owned();
        let mut s = seed;
        let text = nested_text(&shape, &tokens, &mut s);
        prop_assert_eq!(read(&text, true), read(&text, false));
    }

    #[test]
    fn bridged_both_ways_token_for_token(
        (int, (shape, tokens)) in any::<bool>().prop_flat_map(|int| (Just(int), tensor(int))),
        seed in any::<u64>(),
    ) {
        let dt = if int { DataType::Int64 } else { DataType::Fp32 };
        let inner = &shape[1..];
        let s = sig(dt, inner);
        let mut w = seed;
        let data = nested_text(&[tokens.len()], &tokens, &mut w);
        let body = format!(
            r#"{{ "inputs" : [ {{"name":"x","datatype":"{}","shape":{:?},"data":{data}}} ] }}"#,
            dt.as_str(),
            shape
        );
        let mut call = OipCall::default();
        let v1 = oip_request_to_v1(&s, body.as_bytes(), &mut call, LIMIT).unwrap();
        let step = inner.iter().product::<usize>();
        let rows: Vec<String> = tokens.chunks(step).map(|row| compact(inner, row)).collect();
        prop_assert_eq!(
            String::from_utf8(v1).unwrap(),
            format!(r#"{{"instances":[{}]}}"#, rows.join(","))
        );
        let rows: Vec<String> = tokens
            .chunks(step)
            .map(|row| nested_text(inner, row, &mut w))
            .collect();
        let answer = format!("{{\"predictions\":[ {} ]}}", rows.join(" ,\n"));
        let call = OipCall { model: "m".into(), ..OipCall::default() };
        let oip = v1_answer_to_oip(&s, &call, answer.as_bytes(), LIMIT).unwrap();
        prop_assert_eq!(
            String::from_utf8(oip).unwrap(),
            format!(
                r#"{{"model_name":"m","outputs":[{{"name":"y","datatype":"{}","shape":{},"data":[{}]}}]}}"#,
                dt.as_str(),
                format!("{shape:?}").replace(' ', ""),
                tokens.join(",")
            )
        );
    }
}

#[test]
fn refusals_keep_their_messages() {
    let s = sig(DataType::Int64, &[3]);
    let mut call = OipCall::default();
    let body = |data: &str| {
        format!(r#"{{"inputs":[{{"name":"x","datatype":"INT64","shape":[1,3],"data":{data}}}]}}"#)
    };
    let refused = |data: &str| {
        let mut call = OipCall::default();
        match oip_request_to_v1(&s, body(data).as_bytes(), &mut call, LIMIT) {
            Err(e) => e.to_string(),
            Ok(b) => panic!("accepted {data}: {}", String::from_utf8_lossy(&b)),
        }
    };
    assert!(refused("[1, 2.5, 3]").contains("2.5 is not a INT64 value"));
    assert!(refused("[1, NaN, 3]").contains("NaN is not a INT64 value"));
    assert!(refused("[1, 01, 3]").contains("invalid number at line 1 column"));
    assert!(refused("[1, 1., 3]").contains("invalid number"));
    assert!(refused("[1, 2 3]").contains("expected `,` or `]`"));
    assert!(refused("[[1, 2], [3]]").contains("ragged"));
    assert!(refused("[1, 2, 99999999999999999999]").contains("is not a INT64 value"));
    let ok = oip_request_to_v1(&s, body("[ 1 ,\n\t-0, 3 ]").as_bytes(), &mut call, LIMIT);
    assert_eq!(ok.unwrap(), br#"{"instances":[[1,-0,3]]}"#);
}
