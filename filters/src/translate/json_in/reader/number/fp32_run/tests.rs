//! The FP32 run against std's `str::parse::<f32>` and the generic reader: whatever it accepts
//! it reads exactly as they do; what it declines, they read.

use proptest::prelude::*;

use super::*;

/// Reads `text` (followed by more document, as inside an array) with the fast path and with
/// the generic reader. When the fast path takes it, it must end where the reader ends and give
/// std's `f32`, bit for bit. Returns whether it took it.
fn agrees(text: &str) -> bool {
    let doc = format!("{text},                        ]");
    let Some((v, end)) = element(doc.as_bytes(), 0) else {
        return false;
    };
    let mut r = Reader::new(doc.as_bytes());
    let n = r
        .number()
        .unwrap_or_else(|e| panic!("{text}: fast path took what the reader rejects: {e}"));
    assert_eq!(end, r.pos, "{text}: token end");
    let token = &text[..end];
    let want: f32 = token
        .parse()
        .unwrap_or_else(|e| panic!("{token}: std rejects it: {e}"));
    assert_eq!(v.to_bits(), want.to_bits(), "{token}: {v} vs std {want}");
    assert_eq!(
        n.to_f32().map(f32::to_bits),
        Some(want.to_bits()),
        "{token}"
    );
    true
}

/// The bench's activations: shortest text of FP32 values in [-1, 1) on a 2^-23 grid.
fn activations(n: usize) -> Vec<String> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let unit = (state >> 40) as f32 / (1u32 << 24) as f32;
            (unit * 2.0 - 1.0).to_string()
        })
        .collect()
}

#[test]
fn takes_nearly_every_activation_exactly() {
    let texts = activations(200_000);
    let taken = texts.iter().filter(|t| agrees(t)).count();
    // Declined only near an f32 rounding midpoint: a handful per million at most.
    assert!(taken >= texts.len() - 20, "{taken} of {}", texts.len());
}

#[test]
fn takes_pythons_float64_reprs_of_fp32_values() {
    // tritonclient's JSON is numpy's float32 values widened to Python floats: 17 digits.
    for t in activations(20_000) {
        let v: f32 = t.parse().unwrap_or_default();
        let wide = f64::from(v).to_string();
        let digits = wide.trim_start_matches('-').len() - 1;
        assert!(agrees(&wide) || digits > MAX_DIGITS, "{wide}");
    }
}

#[test]
fn declines_near_an_f32_midpoint() {
    // 2^24 + 1 is exactly halfway between two f32s; 1.0000000596046448 is within a few f64
    // ulps of 1 + 2^-24. Ties and near-ties are left to the exact reader.
    for text in ["16777217", "1.0000000596046448", "-16777217e0"] {
        let doc = format!("{text},                        ]");
        assert!(element(doc.as_bytes(), 0).is_none(), "{text}");
    }
}

#[test]
fn declines_what_is_not_a_plain_json_number() {
    for text in [
        "01",
        "1.",
        "-",
        ".5",
        "+1",
        "1e",
        "1e+",
        "-.5",
        "NaN",
        "-Infinity",
        "Infinity",
        "--1",
        "\"1\"",
        "true",
        "null",
        "[1]",
        "12345678",
        "0.1234567890123456789",
        "1e39",
        "1e-46",
        "3.4028236e38",
    ] {
        let doc = format!("{text},                        ]");
        let got = element(doc.as_bytes(), 0);
        assert!(got.is_none(), "{text}: {got:?}");
    }
    // A number followed by more text is read up to where the reader stops too; the array walk
    // then rejects what follows.
    assert!(agrees("0x1"));
    // Not eight bytes left to load: declined, never misread.
    assert!(element(b"0.5", 0).is_none());
    assert!(element(b"0.5]}", 0).is_none());
}

#[test]
fn a_run_stops_where_the_array_walk_must_take_over() {
    let doc = b"[0.5,-0.25, 3e2,\n 1.5E-3 ,7,NaN,0.125,                  ]";
    let mut r = Reader::new(doc);
    r.pos = 1;
    let mut out = Vec::new();
    // Through ", " and ",\n " separators; stops after "1.5E-3" (a space before the comma).
    assert_eq!(r.fp32_run(&mut out), 4);
    assert_eq!(&doc[r.pos..r.pos + 2], b" ,");
    let got: Vec<f32> = out
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(got, [0.5, -0.25, 300.0, 1.5e-3]);
    // "7" then NaN: one more element, then the run leaves NaN to the reader.
    r.pos += 2;
    assert_eq!(r.fp32_run(&mut out), 1);
    assert_eq!(&doc[r.pos..r.pos + 4], b",NaN");
    // Nothing readable at the cursor: nothing consumed.
    r.pos += 1;
    let before = r.pos;
    assert_eq!(r.fp32_run(&mut out), 0);
    assert_eq!(r.pos, before);
    assert_eq!(out.len(), 5 * 4);
}

#[test]
fn negative_zero_keeps_its_sign() {
    for text in ["-0", "-0.0", "-0e5", "-0.000"] {
        assert!(agrees(text), "{text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn shortest_f32_text(bits in any::<u32>()) {
        let v = f32::from_bits(bits);
        prop_assume!(v.is_finite());
        agrees(&v.to_string());
        agrees(&format!("{v:e}"));
        agrees(&format!("{v:E}"));
        agrees(&f64::from(v).to_string());
    }

    #[test]
    fn nine_digit_mantissas(m in 100_000_000u32..1_000_000_000, e in -50i32..40, neg in any::<bool>()) {
        let sign = if neg { "-" } else { "" };
        let m = m.to_string();
        agrees(&format!("{sign}0.{m}"));
        agrees(&format!("{sign}{}.{}e{e}", &m[..1], &m[1..]));
        agrees(&format!("{sign}{m}e{e}"));
    }

    #[test]
    fn many_digits(int in "[1-9][0-9]{0,6}|0", frac in "[0-9]{1,20}", e in proptest::option::of(-45i32..39)) {
        let exp = e.map(|e| format!("e{e}")).unwrap_or_default();
        agrees(&format!("{int}.{frac}{exp}"));
        agrees(&format!("-{int}.{frac}{exp}"));
    }

    #[test]
    fn any_token(text in "-?[0-9]{0,12}(\\.[0-9]{0,20})?([eE][+-]?[0-9]{0,3})?[,.eE0-9-]?") {
        agrees(&text);
    }
}
