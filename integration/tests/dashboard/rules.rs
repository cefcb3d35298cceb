//! The rules file through promtool: it checks, its unit test fires every alert, the unit test
//! covers every alert the file defines, and it has teeth (the same test against a rules file
//! with a loosened threshold fails).

use ferry_integration::prometheus::promtool;
use ferry_integration::workspace;

fn rules_dir() -> std::path::PathBuf {
    workspace::root().join("charts/ferry/rules")
}

/// `- alert: NAME` entries of a rules file, in order.
fn alerts(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("- alert:"))
        .map(str::trim)
        .collect()
}

fn report(out: &std::process::Output) -> String {
    format!(
        "{}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test]
async fn promtool_checks_the_rules_and_their_unit_test_fires_every_alert() -> anyhow::Result<()> {
    let dir = rules_dir();
    let out = promtool(&dir, &["check", "rules", "ferry-rules.yaml"]).await?;
    assert!(
        out.status.success(),
        "promtool check rules: {}",
        report(&out)
    );
    let rules = std::fs::read_to_string(dir.join("ferry-rules.yaml"))?;
    let names = alerts(&rules);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("SUCCESS: {} rules found", names.len())),
        "{}",
        report(&out)
    );

    let out = promtool(&dir, &["test", "rules", "ferry-rules.test.yaml"]).await?;
    assert!(
        out.status.success(),
        "promtool test rules: {}",
        report(&out)
    );

    // Each alert is expected to fire somewhere in the unit test (an `alertname:` followed by a
    // non-empty `exp_alerts`).
    let test = std::fs::read_to_string(dir.join("ferry-rules.test.yaml"))?;
    let lines: Vec<&str> = test.lines().map(str::trim).collect();
    for name in &names {
        let fires = lines.windows(3).any(|w| {
            w[0] == format!("alertname: {name}")
                && w[1] == "exp_alerts:"
                && w[2].starts_with("- exp_labels:")
        });
        assert!(fires, "the unit test never fires {name}");
    }
    Ok(())
}

#[tokio::test]
async fn the_unit_test_fails_when_a_threshold_is_loosened() -> anyhow::Result<()> {
    let scratch = tempfile::tempdir()?;
    let rules = std::fs::read_to_string(rules_dir().join("ferry-rules.yaml"))?;
    let loosened = rules.replace("> 0.05", "> 0.5");
    assert_ne!(
        loosened, rules,
        "the error-rate threshold moved: update this test"
    );
    std::fs::write(scratch.path().join("ferry-rules.yaml"), loosened)?;
    std::fs::copy(
        rules_dir().join("ferry-rules.test.yaml"),
        scratch.path().join("ferry-rules.test.yaml"),
    )?;
    let out = promtool(scratch.path(), &["test", "rules", "ferry-rules.test.yaml"]).await?;
    assert!(
        !out.status.success(),
        "a 50 % threshold passed: {}",
        report(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("FerryModelHighErrorRate")
            || String::from_utf8_lossy(&out.stderr).contains("FerryModelHighErrorRate"),
        "{}",
        report(&out)
    );
    Ok(())
}
