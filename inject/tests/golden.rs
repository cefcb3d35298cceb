//! Golden-file tests of `ferry inject` over the corpus, idempotency, and validation of the
//! injected objects against the real Kubernetes 1.31 schemas.
//!
//! `UPDATE_GOLDEN=1 cargo test -p ferry-inject --test golden` rewrites `tests/golden/`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should panic"
)]

mod support;

use std::path::PathBuf;

use support::{assert_valid, corpus, corpus_args, package_dir, run_cli, scratch};

fn run_corpus(name: &str) -> (String, String, bool) {
    let path = format!("tests/corpus/{name}");
    let text = std::fs::read_to_string(package_dir().join(&path)).unwrap();
    let extra = corpus_args(&text);
    let mut args: Vec<&str> = extra.iter().map(String::as_str).collect();
    // Relative to the package dir, which is the test's working directory.
    args.push(&path);
    run_cli(&args, "")
}

#[test]
fn corpus_matches_golden() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut mismatches = Vec::new();
    for name in corpus() {
        let (out, err, ok) = run_corpus(&name);
        let stem = name.trim_end_matches(".yaml");
        let err = format!("{err}exit: {}\n", if ok { 0 } else { 1 });
        for (file, actual) in [
            (format!("{stem}.yaml"), &out),
            (format!("{stem}.stderr"), &err),
        ] {
            let golden = package_dir().join("tests/golden").join(&file);
            if update {
                std::fs::write(&golden, actual).unwrap();
                continue;
            }
            let expected = std::fs::read_to_string(&golden).unwrap_or_default();
            if &expected != actual {
                mismatches.push(format!(
                    "--- {file}: expected\n{expected}\n+++ actual\n{actual}"
                ));
            }
        }
        // Bad inputs fail, good ones succeed: a cheap check the golden files cannot hide.
        assert_eq!(ok, !name.starts_with("bad-"), "{name}: exit status\n{err}");
    }
    assert!(
        mismatches.is_empty(),
        "golden mismatches (UPDATE_GOLDEN=1 to accept):\n{}",
        mismatches.join("\n")
    );
}

#[test]
fn injecting_twice_changes_nothing() {
    for name in corpus() {
        let (once, _, ok) = run_corpus(&name);
        if !ok {
            continue;
        }
        let text = std::fs::read_to_string(package_dir().join("tests/corpus").join(&name)).unwrap();
        let extra = corpus_args(&text);
        let args: Vec<&str> = extra.iter().map(String::as_str).collect();
        let (twice, err, ok) = run_cli(&args, &once);
        assert!(ok, "{name}: second run failed:\n{err}");
        assert_eq!(once, twice, "{name}: second injection changed the output");
        assert!(
            !err.lines().any(|l| l.starts_with("injected:")),
            "{name}: injected again:\n{err}"
        );
    }
}

#[test]
fn unchanged_documents_keep_their_text() {
    let (out, err, ok) = run_corpus("opted-out.yaml");
    assert!(ok, "{err}");
    let original =
        std::fs::read_to_string(package_dir().join("tests/corpus/opted-out.yaml")).unwrap();
    assert_eq!(out, original);
    assert!(
        err.contains(
            "skipped: tests/corpus/opted-out.yaml: Deployment/models/legacy-model: opted out"
        ),
        "{err}"
    );
}

#[test]
fn injected_objects_pass_kubernetes_schemas() {
    let dir = scratch("validate-golden");
    let mut files: Vec<PathBuf> = Vec::new();
    for name in corpus() {
        let (out, err, ok) = run_corpus(&name);
        if !ok || !err.contains("injected:") {
            continue;
        }
        let file = dir.join(&name);
        std::fs::write(&file, out).unwrap();
        files.push(file);
    }
    assert!(
        files.len() >= 8,
        "expected most of the corpus to inject: {files:?}"
    );
    assert_valid(&files);
}

#[test]
fn dry_run_and_diff_report_without_rewriting() {
    let (out, _, ok) = run_cli(&["--dry-run", "tests/corpus/multi-doc.yaml"], "");
    assert!(ok);
    assert!(out.contains("injected: tests/corpus/multi-doc.yaml: Deployment/ranking/ranker: native sidecar, model ports 8080"), "{out}");
    assert!(out.contains("skipped: tests/corpus/multi-doc.yaml: Deployment/ranking/reranker-no-opt-in: not opted in"), "{out}");
    assert!(!out.contains("apiVersion"), "{out}");

    let (diff, _, ok) = run_cli(&["--diff", "tests/corpus/tf-serving.yaml"], "");
    assert!(ok);
    assert!(
        diff.starts_with(
            "--- tests/corpus/tf-serving.yaml\n+++ tests/corpus/tf-serving.yaml (injected)\n"
        ),
        "{diff}"
    );
    assert!(
        diff.contains("+      - name: ferry\n")
            || diff.contains("+    - name: ferry\n")
            || diff.contains("+  - name: ferry"),
        "{diff}"
    );
}

#[test]
fn stdin_and_bad_flags() {
    let (out, err, ok) = run_cli(
        &["-"],
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {ferry.dev/inject: enabled}}\nspec: {containers: [{name: m, image: x}]}\n",
    );
    assert!(ok, "{err}");
    assert!(out.contains("restartPolicy: Always"), "{out}");
    assert!(err.contains("injected: <stdin>: Pod/p"), "{err}");

    let args = support::inject_args(&["--memory-limit", "lots"]);
    let e = ferry_inject::run_inject(args, &b""[..], Vec::new(), Vec::new()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid argument --memory-limit: \"lots\" is not a Kubernetes quantity (e.g. 100m, 64Mi)"
    );
    let args = support::inject_args(&["tests/corpus/does-not-exist.yaml"]);
    let e = ferry_inject::run_inject(args, &b""[..], Vec::new(), Vec::new()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("reading tests/corpus/does-not-exist.yaml: "),
        "{e}"
    );
}
