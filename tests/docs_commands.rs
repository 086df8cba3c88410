//! The commands the README and the book show, run as a reader would run
//! them, with their output compared with the page (issue 42).
//!
//! A `console` code block holds commands, each on a line starting with `$ `
//! (a line ending in `\` continues it), followed by the standard output the
//! page promises. In the expected output a line `...` stands for any number
//! of lines and `[..]` for any text within a line. A command ending in
//! `# exit status N` must exit with N; any other must succeed. `cargo run
//! --` (with or without `--release`) runs the `schemaops` binary this test
//! was built with.
//!
//! The blocks of one page run in order in one scratch folder holding a copy
//! of `examples/`, so state a command leaves (`./.schemaops`) is what the
//! page's next command sees, as it is for a reader. Standard error is not
//! compared (it carries logs with timestamps), but is shown on a failure.
//!
//! Why not trycmd: its Markdown blocks run a registered binary directly, not
//! through a shell, so `cargo run -- …` as the page writes it, pipes and
//! redirections cannot be checked as written.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One command of a page and what it must print.
struct Step {
    line: usize,
    command: String,
    status: i32,
    expected: Vec<String>,
}

/// The `console` blocks of `text`, as steps.
fn steps(text: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut block: Option<(usize, String)> = None;
    for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) if info.as_ref() == "console" => {
                block = Some((text[..range.start].matches('\n').count() + 2, String::new()));
            }
            Event::Text(part) => {
                if let Some((_, body)) = block.as_mut() {
                    body.push_str(&part);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((first_line, body)) = block.take() {
                    steps.extend(parse_block(first_line, &body));
                }
            }
            _ => {}
        }
    }
    steps
}

fn parse_block(first_line: usize, body: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut continuing = false;
    for (offset, line) in body.lines().enumerate() {
        if continuing {
            let step = steps.last_mut().expect("a continued command");
            step.command.push('\n');
            step.command.push_str(line);
            continuing = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step {
                line: first_line + offset,
                command: command.to_owned(),
                status: 0,
                expected: Vec::new(),
            });
            continuing = line.ends_with('\\');
        } else if let Some(step) = steps.last_mut() {
            step.expected.push(line.trim_end().to_owned());
        }
    }
    for step in &mut steps {
        if let Some((_, status)) = step.command.rsplit_once("# exit status ") {
            step.status = status.trim().parse().expect("`# exit status N` names a number");
        }
    }
    steps
}

/// Whether `line` matches `pattern`, where `[..]` stands for any text.
fn line_matches(pattern: &str, line: &str) -> bool {
    let mut parts = pattern.split("[..]");
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<_> = parts.collect();
    for (index, part) in parts.iter().enumerate() {
        if index + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Whether `lines` match `expected`, where a `...` line stands for any number of lines.
fn output_matches(expected: &[String], lines: &[&str]) -> bool {
    match expected.split_first() {
        None => lines.is_empty(),
        Some((first, rest)) if first == "..." => (0..=lines.len()).any(|skip| output_matches(rest, &lines[skip..])),
        Some((first, rest)) => lines
            .split_first()
            .is_some_and(|(line, others)| line_matches(first, line) && output_matches(rest, others)),
    }
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs `command` with `sh` in `folder`, killed after a minute.
fn run(command: &str, folder: &Path) -> std::process::Output {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_schemaops"));
    let command = command
        .replace("cargo run --release -- ", "schemaops ")
        .replace("cargo run --locked -- ", "schemaops ")
        .replace("cargo run -- ", "schemaops ");
    let path = format!(
        "{}:{}",
        binary.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("timeout")
        .arg(Duration::from_secs(60).as_secs().to_string())
        .args(["sh", "-c", &command])
        .current_dir(folder)
        .env("PATH", path)
        .env_remove("SCHEMAOPS_REGISTRY_URL")
        .env_remove("SCHEMAOPS_DATA")
        .output()
        .unwrap()
}

fn pages() -> Vec<PathBuf> {
    fn walk(folder: &Path, into: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(folder)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, into);
            } else if path.extension().is_some_and(|extension| extension == "md") {
                into.push(path);
            }
        }
    }
    let mut pages = vec![root().join("README.md")];
    walk(&root().join("docs/src"), &mut pages);
    pages
}

#[test]
fn every_documented_command_prints_what_its_page_says() {
    let mut failures = Vec::new();
    let mut ran = 0;
    for page in pages() {
        let steps = steps(&std::fs::read_to_string(&page).unwrap());
        if steps.is_empty() {
            continue;
        }
        let scratch = tempfile::tempdir().unwrap();
        copy_folder(&root().join("examples"), &scratch.path().join("examples"));
        let shown = page.strip_prefix(root()).unwrap().display().to_string();
        for step in steps {
            ran += 1;
            let output = run(&step.command, scratch.path());
            let stdout = String::from_utf8_lossy(&output.stdout);
            let lines: Vec<&str> = stdout.lines().map(str::trim_end).collect();
            let status = output.status.code().unwrap_or(-1);
            let mut problems = Vec::new();
            if status != step.status {
                problems.push(format!("exit status {status}, the page says {}", step.status));
            }
            if !output_matches(&step.expected, &lines) {
                problems.push(format!(
                    "the output differs from the page:\n--- the page\n{}\n--- the output\n{}",
                    step.expected.join("\n"),
                    lines.join("\n")
                ));
            }
            if !problems.is_empty() {
                failures.push(format!(
                    "{shown}:{}: `{}`: {}\n--- standard error\n{}",
                    step.line,
                    step.command,
                    problems.join("; "),
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
        }
    }
    assert!(ran > 0, "no console blocks found");
    assert!(
        failures.is_empty(),
        "{} documented commands failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_output_patterns_match_as_documented() {
    let lines = ["KIND  NAME", "a", "b", "done in 3 s"];
    let expected = |patterns: &[&str]| patterns.iter().map(|line| (*line).to_owned()).collect::<Vec<_>>();
    assert!(output_matches(
        &expected(&["KIND  NAME", "...", "done in [..] s"]),
        &lines
    ));
    assert!(output_matches(&expected(&["...", "b", "done in 3 s"]), &lines));
    assert!(!output_matches(&expected(&["KIND  NAME", "done in [..] s"]), &lines));
    assert!(!output_matches(
        &expected(&["KIND  NAME", "...", "done in [..] ms"]),
        &lines
    ));
    assert!(line_matches("[..]", "anything"));
    assert!(!line_matches("a[..]c", "abd"));
}
