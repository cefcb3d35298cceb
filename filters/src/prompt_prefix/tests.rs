use super::{PromptPrefix, prompt_prefix};

fn found(s: &str) -> PromptPrefix {
    PromptPrefix::Found(s.as_bytes().to_vec())
}

#[test]
fn reads_a_completion_prompt() {
    let body = br#"{"model":"m","prompt":"Once upon a time","max_tokens":5}"#;
    assert_eq!(prompt_prefix(body, 4, false), found("Once"));
    assert_eq!(prompt_prefix(body, 100, false), found("Once upon a time"));
    let list = br#"{"prompt":["ab","cd"],"model":"m"}"#;
    assert_eq!(prompt_prefix(list, 3, false), found("abc"));
}

#[test]
fn concatenates_the_text_of_messages_in_order() {
    let body = br#"{"model":"m","messages":[
        {"role":"system","content":"You are terse."},
        {"role":"user","name":"x","content":[{"type":"text","text":"Hi"},{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"!"}]}
    ],"stream":true}"#;
    assert_eq!(prompt_prefix(body, 1000, false), found("You are terse.Hi!"));
    assert_eq!(prompt_prefix(body, 7, false), found("You are"));
}

#[test]
fn decodes_escapes() {
    let body = br#"{"prompt":"a\"b\\c\nd\u00e9\ud83d\ude00"}"#;
    assert_eq!(
        prompt_prefix(body, 100, false),
        found("a\"b\\c\nd\u{e9}\u{1F600}")
    );
}

#[test]
fn asks_for_more_until_it_has_enough_or_the_body_ends() {
    let body = br#"{"model":"m","tools":[{"a":[1,2,{"b":"]"}]}],"messages":[{"role":"system","content":"0123456789"}]}"#;
    for cut in 0..body.len() {
        let prefix = &body[..cut];
        match prompt_prefix(prefix, 8, false) {
            PromptPrefix::NeedMore => {}
            PromptPrefix::Found(text) => {
                assert_eq!(text, b"01234567", "cut at {cut}");
            }
            PromptPrefix::Absent => panic!("absent at cut {cut}"),
        }
    }
    assert_eq!(prompt_prefix(body, 8, false), found("01234567"));
    // The caller's bound reached mid-prompt: what was read is the key.
    let cut = body.len() - 10;
    assert_eq!(prompt_prefix(&body[..cut], 8, true), found("0123"));
}

#[test]
fn absent_without_prompt_text() {
    assert_eq!(
        prompt_prefix(br#"{"model":"m","input":"x"}"#, 8, false),
        PromptPrefix::Absent
    );
    assert_eq!(
        prompt_prefix(br#"{"prompt":""}"#, 8, false),
        PromptPrefix::Absent
    );
    assert_eq!(prompt_prefix(b"[1,2]", 8, false), PromptPrefix::Absent);
    assert_eq!(
        prompt_prefix(br#"{"prompt" "x"}"#, 8, false),
        PromptPrefix::Absent
    );
    // A `prompt` key nested elsewhere does not count.
    assert_eq!(
        prompt_prefix(br#"{"meta":{"prompt":"x"},"n":1}"#, 8, false),
        PromptPrefix::Absent
    );
}
