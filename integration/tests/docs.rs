//! The commands the docs show, run as written.
//!
//! - The `kargs` commands: every line of a `sh` block in README.md and cli/README.md that runs
//!   `kargs` (or `cargo run -p kernel-args-cli -- ...`, which runs the same binary) goes through
//!   `sh` with `kargs` as the workspace's binary (`kernel_args_testkit::kargs`), and must exit 0
//!   and print something.
//! - Every other command of a `sh` block in README.md, docs/*.md and the crates' READMEs must be
//!   one that CI runs as written (the same text, spaces aside, in `.ci/` or in `scripts/`, which
//!   CI's steps run), or the doc must say why CI does not run it: on its line, a comment that
//!   says `not run by CI: <why>` (or `not run by CI as written: <why>`), or for the whole block,
//!   the paragraph just above it starting with `*Not run by CI:` and saying why.

use std::path::Path;
use std::process::Command;

use kernel_args_testkit::kargs::kargs_binary;

/// The lines of `sh` blocks in `markdown` that run kargs, with `cargo run -p kernel-args-cli --`
/// spelled `kargs`, and trailing `# comments` removed.
fn kargs_lines(markdown: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut in_sh = false;
    for line in markdown.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_sh = !in_sh && trimmed == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let command = trimmed.replace("cargo run -p kernel-args-cli -- ", "kargs ");
        // A comment starts with ` #` outside quotes; the commands here quote no `#`.
        let command = command.split(" #").next().unwrap_or_default().trim().to_owned();
        if command.starts_with("kargs ") {
            lines.push(command);
        }
    }
    lines
}

#[test]
fn the_readmes_kargs_commands_run_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut ran = 0;
    for file in ["README.md", "cli/README.md"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let lines = kargs_lines(&text);
        assert!(!lines.is_empty(), "{file} shows no kargs command");
        for command in &lines {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("kargs() {{ \"$KARGS\" \"$@\"; }}\n{command}"))
                .env("KARGS", kargs_binary())
                .env_remove("KARGS_CUDA_DRIVER")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && !stdout.trim().is_empty(),
                "{file}: `{command}` exited {:?}\n--- stdout\n{stdout}\n--- stderr\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            );
            ran += 1;
        }
    }
    assert!(ran >= 6, "ran {ran} commands");
}

/// A command of a doc: its file and line, and its text (continuation lines joined, the trailing
/// comment removed).
struct DocCommand {
    file: String,
    line: usize,
    text: String,
    /// The comment after it, if any (`# not run by CI: ...` says why CI does not run it).
    comment: String,
    /// The block is marked as a whole (the paragraph just above it starts `*Not run by CI:`).
    block_marked: bool,
}

/// Splits a shell line at its comment: ` #` outside quotes.
fn split_comment(line: &str) -> (&str, &str) {
    let (mut single, mut double) = (false, false);
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'#' if !single && !double && (i == 0 || bytes[i - 1] == b' ') => {
                return (line[..i].trim_end(), line[i..].trim());
            }
            _ => {}
        }
    }
    (line.trim_end(), "")
}

fn doc_commands(file: &str, markdown: &str) -> Vec<DocCommand> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut commands = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim();
        if !fence.starts_with("```") {
            i += 1;
            continue;
        }
        let lang = fence.trim_start_matches('`');
        let shell = matches!(lang, "sh" | "bash" | "shell" | "console");
        // The paragraph just above the block: from the last non-empty line up to a blank one.
        let end = lines[..i].iter().rposition(|l| !l.trim().is_empty());
        let first = end.map(|end| {
            let start = lines[..end].iter().rposition(|l| l.trim().is_empty()).map_or(0, |b| b + 1);
            lines[start].trim()
        });
        let block_marked = first.is_some_and(|l| l.starts_with("*Not run by CI:"));
        i += 1;
        while i < lines.len() && !lines[i].trim().starts_with("```") {
            let start = i;
            let mut text = lines[i].trim().to_owned();
            while text.ends_with('\\') && i + 1 < lines.len() {
                text.pop();
                i += 1;
                text.push(' ');
                text.push_str(lines[i].trim());
            }
            i += 1;
            let (command, comment) = split_comment(&text);
            if shell && !command.is_empty() {
                commands.push(DocCommand {
                    file: file.to_owned(),
                    line: start + 1,
                    text: command.to_owned(),
                    comment: comment.to_owned(),
                    block_marked,
                });
            }
        }
        i += 1;
    }
    commands
}

/// `text` with every run of spaces one space, for comparing commands.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What CI runs: the shell scripts of `.ci/` and `scripts/` without their comment lines, each
/// line with its continuations joined and its spaces squeezed.
fn ci_text(root: &Path) -> String {
    let mut text = String::new();
    for dir in [".ci", ".ci/steps", "scripts"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !(name.ends_with(".sh") || name == "run") || !path.is_file() {
                continue;
            }
            let body = std::fs::read_to_string(&path).unwrap().replace("\\\n", " ");
            for line in body.lines().filter(|l| !l.trim_start().starts_with('#')) {
                text.push_str(&squeeze(line));
                text.push('\n');
            }
        }
    }
    text
}

#[test]
fn every_documented_command_is_run_by_ci_or_says_why_not() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec!["README.md".to_owned()];
    for dir in ["docs", "."] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if dir == "docs" && name.ends_with(".md") {
                files.push(format!("docs/{name}"));
            } else if dir == "." && path.join("README.md").is_file() && name != "target" {
                files.push(format!("{name}/README.md"));
            }
        }
    }
    let ci = ci_text(&root);
    let mut checked = 0;
    let mut unaccounted = Vec::new();
    for file in &files {
        let markdown = std::fs::read_to_string(root.join(file)).unwrap();
        for command in doc_commands(file, &markdown) {
            checked += 1;
            let kargs = command.text.starts_with("kargs ")
                || command.text.starts_with("cargo run -p kernel-args-cli -- ");
            let why = command
                .comment
                .split_once("not run by CI")
                .map(|(_, why)| why.trim_start_matches(" as written").trim_start_matches(':').trim());
            let accounted = kargs
                || command.block_marked
                || why.is_some_and(|w| !w.is_empty())
                || ci.contains(&squeeze(&command.text));
            if !accounted {
                unaccounted.push(format!("{}:{}: {}", command.file, command.line, command.text));
            }
        }
    }
    assert!(checked >= 40, "found only {checked} commands in {files:?}");
    assert!(
        unaccounted.is_empty(),
        "commands the docs show that CI does not run as written, and no `# not run by CI: why`:\n{}",
        unaccounted.join("\n")
    );
}
