//! `ferry inject`: manifests in, injected manifests out.
//!
//! Exit status: 0 when every object was processed (injected or knowingly skipped); 1 when any
//! document or object could not be (its text is passed through unchanged and stderr names it
//! and the problem).

use std::{
    fmt::Write as _,
    io::{Read, Write},
    path::PathBuf,
    process::ExitCode,
};

use crate::{
    document::{self, Document},
    error::InjectError,
    object::{ObjectReport, inject_object},
    pod::{PodOutcome, Selection},
    redirect::RedirectMode,
    settings::SidecarArgs,
};

/// Flags of `ferry inject`.
#[derive(Debug, Clone, clap::Args)]
pub struct InjectArgs {
    /// Manifest files (YAML, multi-document, `List`); `-` or none reads stdin.
    pub files: Vec<PathBuf>,
    /// Inject every pod template not opted out, as the webhook does in a namespace labelled
    /// `ferry.dev/inject=enabled`. Without it only opted-in templates are injected.
    #[arg(long)]
    pub all: bool,
    /// Print what would be injected or skipped and why, instead of the manifests.
    #[arg(long, conflicts_with = "diff")]
    pub dry_run: bool,
    /// Print a unified diff between the input and the injected output.
    #[arg(long)]
    pub diff: bool,
    /// The sidecar to inject.
    #[command(flatten)]
    pub sidecar: SidecarArgs,
}

/// Runs `ferry inject`. Reads `stdin` only when no file (or `-`) is given.
pub fn run_inject(
    args: InjectArgs,
    mut stdin: impl Read,
    mut stdout: impl Write,
    mut stderr: impl Write,
) -> Result<ExitCode, InjectError> {
    args.sidecar.validate()?;
    let selection = if args.all {
        Selection::AllButOptedOut
    } else {
        Selection::OptedIn
    };
    let sources = if args.files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.files.clone()
    };

    let mut failed = false;
    let mut notes = String::new();
    let mut out = String::new();
    for (index, path) in sources.iter().enumerate() {
        let (name, text) = read_source(path, &mut stdin)?;
        let result = inject_text(&name, &text, &args.sidecar, selection, &mut notes);
        failed |= result.failed;
        let output = if index > 0 && !result.output.starts_with("---") && !result.output.is_empty()
        {
            format!("---\n{}", result.output)
        } else {
            result.output
        };
        if args.diff {
            let diff = similar::TextDiff::from_lines(&text, &output);
            let header = diff
                .unified_diff()
                .context_radius(3)
                .header(&name, &format!("{name} (injected)"))
                .to_string();
            out.push_str(&header);
        } else {
            out.push_str(&output);
        }
    }
    if args.dry_run {
        stdout
            .write_all(notes.as_bytes())
            .map_err(InjectError::Write)?;
    } else {
        stderr
            .write_all(notes.as_bytes())
            .map_err(InjectError::Write)?;
        stdout
            .write_all(out.as_bytes())
            .map_err(InjectError::Write)?;
    }
    stdout.flush().map_err(InjectError::Write)?;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn read_source(path: &PathBuf, stdin: &mut impl Read) -> Result<(String, String), InjectError> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        stdin
            .read_to_string(&mut text)
            .map_err(|source| InjectError::Read {
                path: path.clone(),
                source,
            })?;
        return Ok(("<stdin>".into(), text));
    }
    let text = std::fs::read_to_string(path).map_err(|source| InjectError::Read {
        path: path.clone(),
        source,
    })?;
    Ok((path.display().to_string(), text))
}

/// The injected text of one source and whether anything in it failed.
#[derive(Debug)]
pub struct TextResult {
    /// The output stream.
    pub output: String,
    /// Whether a document or object could not be processed.
    pub failed: bool,
}

/// Injects every document of `text`, appending one line per object to `notes`.
pub fn inject_text(
    source: &str,
    text: &str,
    sidecar: &SidecarArgs,
    selection: Selection,
    notes: &mut String,
) -> TextResult {
    let mut output = String::with_capacity(text.len() * 2);
    let mut failed = false;
    for doc in document::split(text) {
        let (rendered, doc_failed) = inject_document(source, &doc, sidecar, selection, notes);
        failed |= doc_failed;
        output.push_str(rendered.as_deref().unwrap_or(&doc.raw));
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
    }
    TextResult { output, failed }
}

/// The new text of a document when it changed, and whether anything in it failed (already
/// noted). Objects that failed are left as they were; in a `List` the others are still injected.
fn inject_document(
    source: &str,
    doc: &Document,
    sidecar: &SidecarArgs,
    selection: Selection,
    notes: &mut String,
) -> (Option<String>, bool) {
    let mut value = match doc.parse() {
        Ok(v) => v,
        Err(e) => {
            let _ = writeln!(notes, "error: {source}:{e}");
            return (None, true);
        }
    };
    let reports = inject_object(&mut value, sidecar, selection);
    let mut changed = false;
    let mut failed = false;
    for report in &reports {
        changed |= matches!(report.result, Ok(PodOutcome::Injected { .. }));
        failed |= report.result.is_err();
        note(source, report, notes);
    }
    if !changed {
        return (None, failed);
    }
    match document::render(&value, doc) {
        Ok(text) => (Some(text), failed),
        Err(e) => {
            let _ = writeln!(notes, "error: {source}: {e}");
            (None, true)
        }
    }
}

fn note(source: &str, report: &ObjectReport, notes: &mut String) {
    let object = &report.object;
    let _ = match &report.result {
        Ok(PodOutcome::Injected {
            native,
            redirect,
            model_ports,
            warnings,
        }) => {
            let mode = match (*native, redirect) {
                (true, RedirectMode::Ports) => "native sidecar",
                (false, RedirectMode::Ports) => "container with lifecycle hooks",
                (true, RedirectMode::Iptables) => "native sidecar, iptables redirect",
                (false, RedirectMode::Iptables) => {
                    "container with lifecycle hooks, iptables redirect"
                }
            };
            let ports: Vec<String> = model_ports.iter().map(u16::to_string).collect();
            let ports = if ports.is_empty() {
                "none".to_owned()
            } else {
                ports.join(",")
            };
            let mut r = writeln!(
                notes,
                "injected: {source}: {object}: {mode}, model ports {ports}"
            );
            for w in warnings {
                r = r.and(writeln!(notes, "warning: {source}: {object}: {w}"));
            }
            r
        }
        Ok(PodOutcome::Skipped(reason)) => writeln!(notes, "skipped: {source}: {object}: {reason}"),
        Err(e) => writeln!(notes, "error: {source}: {object}: {e}"),
    };
}

/// Reads one stream and returns only its output, for callers that want the CLI's exact bytes
/// (the webhook tests compare against it).
pub fn inject_str(text: &str, sidecar: &SidecarArgs, selection: Selection) -> TextResult {
    let mut notes = String::new();
    inject_text("<input>", text, sidecar, selection, &mut notes)
}
