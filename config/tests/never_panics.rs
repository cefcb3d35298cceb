//! `parse` returns `Ok` or `Err` for any input; it never panics (the proxy calls it on reload
//! with whatever is in the ConfigMap).

use proptest::prelude::*;

const FULL: &str = include_str!("../../examples/full.yaml");

/// Pieces that are meaningful to YAML and to our validators, so mutations reach deep code.
const TOKENS: &[&str] = &[
    ":",
    "- ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "\n",
    "  ",
    "'",
    "\"",
    "#",
    "&a ",
    "*a",
    "!!str ",
    "---\n",
    "? ",
    "|",
    ">",
    "0",
    "-1",
    "99999999999999999999",
    "1.5",
    "null",
    "true",
    "~",
    "0s",
    "5 sec",
    "%",
    "/",
    "{x}",
    "{rest=**}",
    "(",
    "\\",
    "to: ",
    "name: ",
    "weight: 0",
    "status: 700",
    "regex: \"(\"",
    "cluster: nope",
    "endpoints: []",
    "é",
    "\u{0}",
    "\t",
];

#[derive(Debug, Clone)]
enum Edit {
    Delete { at: usize, len: usize },
    Insert { at: usize, token: usize },
    DuplicateLine { line: usize },
    SwapLines { a: usize, b: usize },
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1usize..40).prop_map(|(at, len)| Edit::Delete { at, len }),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, token)| Edit::Insert { at, token }),
        any::<usize>().prop_map(|line| Edit::DuplicateLine { line }),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapLines { a, b }),
    ]
}

/// The nearest char boundary at or before `at % len`.
fn boundary(text: &str, at: usize) -> usize {
    let mut i = at % (text.len() + 1);
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &mut String, e: &Edit) {
    match *e {
        Edit::Delete { at, len } => {
            let start = boundary(text, at);
            let end = boundary(text, start + len.min(text.len() - start));
            let end = end.max(start);
            text.replace_range(start..end, "");
        }
        Edit::Insert { at, token } => {
            let at = boundary(text, at);
            text.insert_str(at, TOKENS[token]);
        }
        Edit::DuplicateLine { line } => {
            let mut lines: Vec<&str> = text.lines().collect();
            if !lines.is_empty() {
                let i = line % lines.len();
                lines.insert(i, lines[i]);
            }
            *text = lines.join("\n");
        }
        Edit::SwapLines { a, b } => {
            let mut lines: Vec<&str> = text.lines().collect();
            if !lines.is_empty() {
                let n = lines.len();
                lines.swap(a % n, b % n);
            }
            *text = lines.join("\n");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let _ = ferry_config::parse("fuzz.yaml", &text);
    }

    #[test]
    fn yaml_like_text_never_panics(parts in prop::collection::vec(0..TOKENS.len(), 0..80)) {
        let text: String = parts.iter().map(|i| TOKENS[*i]).collect();
        let _ = ferry_config::parse("fuzz.yaml", &text);
    }

    #[test]
    fn mutated_full_yaml_never_panics(edits in prop::collection::vec(edit(), 1..6)) {
        let mut text = FULL.to_owned();
        for e in &edits {
            apply(&mut text, e);
        }
        match ferry_config::parse("full.yaml", &text) {
            Ok(config) => prop_assert_eq!(config.version.len(), 64),
            Err(errors) => {
                prop_assert!(!errors.is_empty());
                for e in &errors {
                    // Every error carries a position inside the file and the file name.
                    prop_assert_eq!(e.file.as_str(), "full.yaml");
                    prop_assert!(e.line >= 1 && e.col >= 1, "{}", e);
                    prop_assert!(e.line <= text.lines().count() + 1, "{}", e);
                }
            }
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for text in [
        "[".repeat(100_000),
        "{a: ".repeat(100_000),
        (0..20_000)
            .map(|i| format!("{}- \n", " ".repeat(i * 2)))
            .collect(),
    ] {
        assert!(ferry_config::parse("deep.yaml", &text).is_err());
    }
    let blocks: String = (0..100)
        .map(|i| format!("{}- \n", " ".repeat(i * 2)))
        .collect();
    let err = ferry_config::parse("deep.yaml", &blocks)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "deep.yaml:65:129: nesting deeper than 64 levels (expected a ferry config)"
    );
}

#[test]
fn alias_bombs_are_bounded() {
    let text = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n";
    assert!(ferry_config::parse("bomb.yaml", text).is_err());
}
