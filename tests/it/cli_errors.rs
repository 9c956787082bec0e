//! How errors are printed, through the binary: every line of an error message fits 80
//! columns (the message wrapped at spaces, the lines after the first indented by two), with
//! its text intact; clap's usage errors too.

use crate::common::{bin, stderr_text};

/// The lines of stderr, and its text with the wrapped lines joined again.
fn lines_and_text(stderr: &[u8]) -> (Vec<String>, String) {
    let text = String::from_utf8_lossy(stderr).into_owned();
    let lines = text.lines().map(str::to_owned).collect();
    (lines, stderr_text(stderr))
}

#[test]
fn a_long_error_is_wrapped_to_80_columns_with_its_text_intact() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("typo.yaml"),
        "gate:\n  max_p50_regresion: 0.02\nshapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, dtype: float16}\n",
    )
    .unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args(["merge", "--config", "typo.yaml", "none.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let (lines, text) = lines_and_text(&out.stderr);
    assert!(lines.len() >= 3, "{lines:#?}");
    assert!(
        lines[0].starts_with("error: config typo.yaml: gate: "),
        "{lines:#?}"
    );
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{lines:#?}");
    assert!(lines[1..].iter().all(|l| l.starts_with("  ")), "{lines:#?}");
    // The text, joined again, is the one sentence; the removed key is not offered.
    assert_eq!(
        text.trim_end(),
        "error: config typo.yaml: gate: unknown field `max_p50_regresion`, expected one of `max_p50_regression`, `alpha`, `confidence`, `bootstrap_resamples`, `seed`, `max_speedup`, `witness` at line 2 column 3"
    );
}

#[test]
fn a_usage_error_s_first_line_is_wrapped_too() {
    let out = bin().args(["compile", "--arch", "sm_12"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let (lines, text) = lines_and_text(&out.stderr);
    assert!(lines[0].starts_with("error: invalid value 'sm_12' for '--arch <SM>': "));
    assert!(lines[1].starts_with("  "), "{lines:#?}");
    let message: Vec<&String> = lines.iter().take_while(|l| !l.is_empty()).collect();
    assert!(
        message.iter().all(|l| l.chars().count() <= 80),
        "{lines:#?}"
    );
    // clap's usage and hint follow, as clap prints them.
    assert!(
        text.contains("For more information, try '--help'."),
        "{text}"
    );
    // Help is clap's own, on stdout, exit 0.
    let help = bin().args(["env", "--help"]).output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: ci-gate env"));
}

#[test]
fn a_path_wider_than_a_line_is_cut_with_a_backslash_and_nothing_lost() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir
        .path()
        .join("a-directory-whose-name-is-long".repeat(3))
        .join("results.json");
    let out = bin().arg("compare").arg(&deep).arg(&deep).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let (lines, text) = lines_and_text(&out.stderr);
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{lines:#?}");
    assert!(lines.iter().any(|l| l.ends_with('\\')), "{lines:#?}");
    assert_eq!(
        text.trim_end(),
        format!(
            "error: cannot read {}: No such file or directory (os error 2)",
            deep.display()
        )
    );
}
