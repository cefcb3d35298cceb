//! The reader against std's parsers and against malformed input; the SWAR fast path against
//! the byte-wise scanner.

use super::*;

/// `text` read as a number token twice: at the very end of the document (the byte-wise
/// scanner, since the fast path needs eight bytes after each digit run) and followed by
/// more document (the SWAR fast path where it applies). Both must give the same token.
fn both_scanners(text: &str) -> Vec<Num<'_>> {
    let padded = format!("{text},        ]");
    let mut tail = Reader::new(text.as_bytes());
    let at_end = tail.number();
    let mut r = Reader::new(padded.as_bytes());
    let inner = r.number();
    assert_eq!(inner.is_ok(), at_end.is_ok(), "{text}");
    match (at_end, inner) {
        (Ok(a), Ok(b)) => {
            assert_eq!(r.pos, tail.pos, "{text}");
            // Same kind and value; `text` borrows differ, so compare the parts.
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{text}");
            // A token followed by more token text ("0x1") is not a whole number.
            if tail.pos == text.len() {
                vec![a]
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
    }
}

#[test]
fn numbers_strings_and_nesting() {
    let mut r = Reader::new(
        br#" [1, -2.5e3, NaN, -Infinity, Infinity, "a\"b", "c", {"k": [true, null]}] "#,
    );
    let mut got = Vec::new();
    r.array(|r| {
        match r.peek() {
            Some(b'"') => got.push(format!("s:{}", r.string()?)),
            Some(b'{') => {
                r.skip()?;
                got.push("obj".into());
            }
            _ => got.push(match r.number()? {
                Num::Int(d) => format!("int:{}", d.text()),
                Num::Float(d) => format!("float:{}", d.text()),
                Num::NonFinite(v) => format!("{v}"),
            }),
        }
        Ok(())
    })
    .unwrap();
    r.end().unwrap();
    assert_eq!(
        got,
        [
            "int:1",
            "float:-2.5e3",
            "NaN",
            "-inf",
            "inf",
            "s:a\"b",
            "s:c",
            "obj"
        ]
    );
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    for bad in [
        &b"[01]"[..],
        b"[1.]",
        b"[1e]",
        b"[-]",
        b"[\"abc",
        b"[\"\\",
        b"[1,]",
        b"{\"a\" 1}",
        b"[nul]",
        b"",
    ] {
        let mut r = Reader::new(bad);
        assert!(r.skip().and_then(|()| r.end()).is_err(), "{bad:?}");
    }
    let deep = "[".repeat(10_000);
    assert!(Reader::new(deep.as_bytes()).skip().is_err());
}

#[test]
fn float_tokens_round_correctly_to_f32() {
    // Just above the midpoint of 1.0 and the next f32: via f64 it would round to the
    // midpoint exactly and then, ties to even, down to 1.0.
    let mut r = Reader::new(b"0.1");
    assert_eq!(r.number().unwrap().to_f32(), Some(0.1f32));
    let mut r = Reader::new(b"1.00000005960464477539062500000000001");
    assert_eq!(r.number().unwrap().to_f32(), Some(1.000_000_1_f32));
}

#[test]
fn fast_and_slow_paths_agree_with_std() {
    let cases = [
        "0",
        "-0",
        "1",
        "-723.456",
        "999.999",
        "0.1",
        "16777216",
        "16777217",
        "3.4e38",
        "1e-45",
        "123456789012345678901234",
        "0.30000000000000004",
        "-1.5e-7",
        "2.5E+3",
        "1e10",
        "1e11",
        "9007199254740993",
        "12345678.9",
        "0.000001",
    ];
    for text in cases {
        for n in both_scanners(text) {
            assert_eq!(n.to_f32(), text.parse::<f32>().ok(), "{text} as f32");
            assert_eq!(n.to_f64(), text.parse::<f64>().ok(), "{text} as f64");
        }
    }
    let int = |t: &str| match Reader::new(t.as_bytes()).number().unwrap() {
        Num::Int(d) => (d.as_i64(), d.as_u64()),
        _ => panic!("{t} is an integer"),
    };
    assert_eq!(int("-9223372036854775808"), (Some(i64::MIN), None));
    assert_eq!(int("18446744073709551615"), (None, Some(u64::MAX)));
    assert_eq!(int("18446744073709551616"), (None, None));
    assert_eq!(int("-0"), (Some(0), None));
}

#[test]
fn fast_paths_match_std_on_many_decimals() {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..200_000 {
        let r = next();
        let digits = r % 10_u64.pow((r >> 60) as u32 % 17 + 1);
        let scale = (r >> 40) % 40;
        let text = match (r >> 32) % 3 {
            0 => format!("{digits}e-{scale}"),
            1 => format!("-{digits}e{}", scale % 12),
            _ => format!("{}", f32::from_bits((r >> 8) as u32 & 0x7f7f_ffff)),
        };
        for n in both_scanners(&text) {
            assert_eq!(n.to_f32(), text.parse::<f32>().ok(), "{text} as f32");
            assert_eq!(n.to_f64(), text.parse::<f64>().ok(), "{text} as f64");
        }
    }
}

mod fast_path {
    //! Property tests for the SWAR fast path: whatever the token, reading it inside a document
    //! (fast path) and at its very end (byte-wise scanner) agree, and both agree with std.

    use proptest::prelude::*;

    use super::both_scanners;

    /// Tokens near and across the fast path's edges: signs, leading zeros, up to 30 digits in
    /// either part, exponents of every form, and malformed shapes.
    fn token() -> impl Strategy<Value = String> {
        "-?[0-9]{0,30}(\\.[0-9]{0,30})?([eE][+-]?[0-9]{0,4})?"
    }

    fn check(text: &str) {
        let got = both_scanners(text);
        // Strict JSON: what std accepts minus "+1", ".5", "1.", "01" and friends.
        let json_ok = is_json_number(text);
        assert_eq!(got.len() == 1, json_ok, "{text}");
        for n in got {
            assert_eq!(n.to_f32(), text.parse::<f32>().ok(), "{text} as f32");
            assert_eq!(
                n.to_f64().map(f64::to_bits),
                text.parse::<f64>().ok().map(f64::to_bits),
                "{text} as f64"
            );
        }
    }

    /// The JSON number grammar, written out plainly as the reference.
    fn is_json_number(text: &str) -> bool {
        let digits = |s: &str| s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let s = text.strip_prefix('-').unwrap_or(text);
        let n = digits(s);
        if n == 0 || (n > 1 && s.starts_with('0')) {
            return false;
        }
        let mut s = &s[n..];
        if let Some(rest) = s.strip_prefix('.') {
            let f = digits(rest);
            if f == 0 {
                return false;
            }
            s = &rest[f..];
        }
        if let Some(rest) = s.strip_prefix(['e', 'E']) {
            let rest = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            let e = digits(rest);
            if e == 0 {
                return false;
            }
            s = &rest[e..];
        }
        s.is_empty()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn any_token(text in token()) {
            check(&text);
        }

        #[test]
        fn shortest_f32_text(bits in any::<u32>()) {
            let v = f32::from_bits(bits);
            prop_assume!(v.is_finite());
            check(&v.to_string());
            check(&format!("{v:e}"));
        }

        #[test]
        fn shortest_f64_text(bits in any::<u64>()) {
            let v = f64::from_bits(bits);
            prop_assume!(v.is_finite());
            check(&v.to_string());
            check(&format!("{v:E}"));
        }
    }

    #[test]
    fn edges() {
        for text in [
            "-0",
            "-0.0",
            "0e0",
            "-0e-0",
            "1e-45",
            "3.4028235e38",
            "3.4028236e38",
            "1e39",
            "1.7976931348623157e308",
            "2.2250738585072014e-308",
            "12345678",
            "123456789",
            "1234567890123456789",
            "12345678901234567890",
            "0.1234567890123456789",
            "0.12345678901234567890123",
            "99999999999999999999e-20",
            "1.",
            "01",
            "+1",
            ".5",
            "1e",
            "-",
            "1e+",
            "--1",
            "0x1",
            "1_0",
        ] {
            check(text);
        }
        let neg_zero = both_scanners("-0.0");
        assert!(
            neg_zero
                .iter()
                .all(|n| n.to_f32().is_some_and(|v| v == 0.0 && v.is_sign_negative()))
        );
    }
}
