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
//! A command ending in ` &` is a server: it is started in the background,
//! the page goes on once its `--listen` address accepts connections, and it
//! is stopped when the page ends. Its port is replaced by a free one in that
//! command and in every later command of the page (`127.0.0.1:8081` on the
//! page may be `127.0.0.1:41234` here), so a port in use on the machine does
//! not fail the test. Pages whose commands use `curl` need it installed
//! (they are skipped without it, unless `SCHEMAOPS_REQUIRE_ALL=1`).
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

/// The command as this test runs it: `cargo run --` as the binary under
/// test, and the page's ports replaced by the ones this run uses.
fn as_run(command: &str, ports: &[(String, String)]) -> String {
    let mut command = command
        .replace("cargo run --release -- ", "schemaops ")
        .replace("cargo run --locked -- ", "schemaops ")
        .replace("cargo run -- ", "schemaops ");
    for (page, here) in ports {
        command = command.replace(page.as_str(), here);
    }
    command
}

/// `program` with `args` in `folder`, with the binary under test first on `PATH`.
fn process(program: &str, args: &[&str], folder: &Path) -> Command {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_schemaops"));
    let path = format!(
        "{}:{}",
        binary.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut process = Command::new(program);
    process
        .args(args)
        .current_dir(folder)
        .env("PATH", path)
        .env_remove("SCHEMAOPS_REGISTRY_URL")
        .env_remove("SCHEMAOPS_DATA");
    process
}

/// Runs `command` with `sh` in `folder`, killed after a minute.
fn run(command: &str, folder: &Path) -> std::process::Output {
    process("timeout", &["60", "sh", "-c", command], folder)
        .output()
        .unwrap()
}

/// A server a page started; stopped when dropped.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `--listen` address of a server command (`127.0.0.1:8081`).
fn listen_address(command: &str) -> Option<String> {
    let mut words = command.split_whitespace();
    words.find(|word| *word == "--listen")?;
    words.next().map(str::to_owned)
}

/// Starts the server `command` (without its ` &`) and waits until `address` accepts.
fn start_server(command: &str, address: &str, folder: &Path) -> Server {
    let child = process("sh", &["-c", &format!("exec {command}")], folder)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(child);
    for _ in 0..600 {
        if std::net::TcpStream::connect(address).is_ok() {
            return server;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("`{command}` did not listen on {address} within a minute");
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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
        let shown = page.strip_prefix(root()).unwrap().display().to_string();
        if steps.iter().any(|step| step.command.contains("curl "))
            && Command::new("curl").arg("--version").output().is_err()
        {
            assert!(
                std::env::var("SCHEMAOPS_REQUIRE_ALL").is_err(),
                "curl is missing and SCHEMAOPS_REQUIRE_ALL is set"
            );
            eprintln!("skipping {shown}: its commands need curl");
            continue;
        }
        let scratch = tempfile::tempdir().unwrap();
        copy_folder(&root().join("examples"), &scratch.path().join("examples"));
        let mut ports: Vec<(String, String)> = Vec::new();
        let mut servers = Vec::new();
        for step in steps {
            ran += 1;
            if let Some(server) = step.command.strip_suffix(" &") {
                let address = listen_address(server).expect("a server command names its --listen address");
                let (host, _) = address.rsplit_once(':').expect("--listen HOST:PORT");
                ports.push((address.clone(), format!("{host}:{}", free_port())));
                let command = as_run(server, &ports);
                let address = listen_address(&command).unwrap();
                servers.push(start_server(&command, &address, scratch.path()));
                continue;
            }
            let output = run(&as_run(&step.command, &ports), scratch.path());
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
        drop(servers);
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
