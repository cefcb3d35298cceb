//! Fuzzes the config loader: any text, parsed and validated as a route config file. Must
//! never panic; a refusal always names a position inside the text (line ≥ 1, column ≥ 1),
//! since every error a user sees is printed as file:line:col.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(errors) = ferry_config::parse("fuzz.yaml", text) {
        for e in &errors.errors {
            assert!(e.line >= 1 && e.col >= 1, "no position: {e:?}");
        }
    }
});
