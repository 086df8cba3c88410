//! Instructions of a cold `schemaops compat` run (every text parsed, the
//! process started and ended) under `valgrind --tool=callgrind`, for this
//! tree's binary and a baseline binary on the same files, and their ratio.
//!
//! Instruction counts do not depend on the machine's load, so one run of
//! each binary per case is enough and the ratio is exact. The baseline is
//! an older build given by path (`--baseline PATH` or
//! `SCHEMAOPS_BASELINE_BIN`), e.g. the release binary of commit 8a55c58:
//!
//! ```sh
//! mkdir -p /var/tmp/old-8a55c58 && git archive 8a55c58 | tar -x -C /var/tmp/old-8a55c58
//! (cd /var/tmp/old-8a55c58 && CARGO_TARGET_DIR=/var/tmp/old-8a55c58/target cargo build --release)
//! cargo bench --bench compat -- --only instructions --baseline /var/tmp/old-8a55c58/target/release/schemaops
//! ```
//!
//! Both binaries are run as `compat --format AVRO --mode M --previous F…
//! --candidate F`, a form every version of the CLI takes. Compare binaries
//! of one profile (both `cargo build --release`): the ratio says how much of
//! the old work is left, not how fast either is.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use schemaops::compat::Mode;

use super::HISTORY;
use super::peers::Case;

/// This tree's binary, built by `cargo bench` in the bench's profile.
const CURRENT: &str = env!("CARGO_BIN_EXE_schemaops");

/// The baseline's path: `--baseline PATH`, else `SCHEMAOPS_BASELINE_BIN`.
fn baseline_path() -> Option<PathBuf> {
    super::option("--baseline")
        .or_else(|| std::env::var("SCHEMAOPS_BASELINE_BIN").ok())
        .filter(|path| !path.is_empty())
        .map(PathBuf::from)
}

/// The largest share of the baseline's instructions a case may take (issue 44):
/// a third on flat 2,000 fields, half on flat 200 and on rich 2,000 with a
/// break, all FULL_TRANSITIVE against 50 versions.
fn target(case: &Case, mode: Mode) -> Option<f64> {
    if mode != Mode::FullTransitive {
        return None;
    }
    match (case.label().as_str(), case.fields) {
        (label, 2_000) if label.starts_with("flat") => Some(1.0 / 3.0),
        (label, 200) if label.starts_with("flat") => Some(0.5),
        ("rich-2000-break", _) => Some(0.5),
        _ => None,
    }
}

/// Prints the table, or one line saying why it is skipped. `dir` receives
/// the case texts (one folder per case, `v01.avsc` … `v51.avsc`).
pub fn report(cases: &[Case], dir: &Path) {
    let Some(baseline) = baseline_path() else {
        println!(
            "instruction counts skipped: no baseline binary (give --baseline PATH or SCHEMAOPS_BASELINE_BIN, \
             e.g. the release build of commit 8a55c58)"
        );
        return;
    };
    if !baseline.is_file() {
        println!(
            "instruction counts skipped: the baseline {} is not a file",
            baseline.display()
        );
        return;
    }
    if Command::new("valgrind").arg("--version").output().is_err() {
        println!("instruction counts skipped: valgrind is not installed (apt-get install valgrind)");
        return;
    }
    println!(
        "Instructions of `schemaops compat` (callgrind, whole process, cold: every text parsed), this tree vs {}",
        baseline.display()
    );
    match (
        instructions(Path::new(CURRENT), &["--version"], 0),
        instructions(&baseline, &["--version"], 0),
    ) {
        (Ok(ours), Ok(theirs)) => println!(
            "start-up (`--version`): {} vs {} instructions, ratio {:.3}",
            millions(ours),
            millions(theirs),
            ours as f64 / theirs as f64
        ),
        (Err(why), _) | (_, Err(why)) => println!("start-up not counted: {why}"),
    }
    println!(
        "{:<16} {:<16} {:>12} {:>12} {:>7}  target",
        "case", "mode", "ours", "baseline", "ratio"
    );
    let mut missed = 0;
    for case in cases {
        let folder = dir.join(case.label());
        if let Err(error) = write_texts(case, &folder) {
            println!(
                "{}: cannot write the texts to {}: {error}",
                case.label(),
                folder.display()
            );
            return;
        }
        for mode in [Mode::Backward, Mode::FullTransitive] {
            let args = compat_args(&folder, mode);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let expected_status = if case.broken { 1 } else { 0 };
            let counts = (
                instructions(Path::new(CURRENT), &args, expected_status),
                instructions(&baseline, &args, expected_status),
            );
            let (ours, theirs) = match counts {
                (Ok(ours), Ok(theirs)) => (ours, theirs),
                (Err(why), _) | (_, Err(why)) => {
                    println!("{:<16} {:<16} not counted: {why}", case.label(), mode.to_string());
                    continue;
                }
            };
            let ratio = ours as f64 / theirs as f64;
            let verdict = match target(case, mode) {
                Some(limit) if ratio <= limit => format!("{limit:.2} met"),
                Some(limit) => {
                    missed += 1;
                    format!("{limit:.2} MISSED")
                }
                None => "-".to_owned(),
            };
            println!(
                "{:<16} {:<16} {:>12} {:>12} {ratio:>7.3}  {verdict}",
                case.label(),
                mode.to_string(),
                millions(ours),
                millions(theirs)
            );
        }
    }
    println!("instruction targets missed: {missed}");
}

/// `123.4M` for a count of instructions.
fn millions(count: u64) -> String {
    format!("{:.1}M", count as f64 / 1e6)
}

fn write_texts(case: &Case, folder: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(folder)?;
    for (index, text) in case.texts.iter().enumerate() {
        std::fs::write(folder.join(version_file(index + 1)), text)?;
    }
    Ok(())
}

fn version_file(version: usize) -> String {
    format!("v{version:02}.avsc")
}

/// The command line of one check: the candidate (version 51) against the
/// latest version (BACKWARD) or against all 50 (FULL_TRANSITIVE).
fn compat_args(folder: &Path, mode: Mode) -> Vec<String> {
    let first = match mode {
        Mode::Backward => HISTORY,
        _ => 1,
    };
    let mut args = vec![
        "compat".to_owned(),
        "--format".to_owned(),
        "AVRO".to_owned(),
        "--mode".to_owned(),
        mode.to_string(),
    ];
    for version in first..=HISTORY {
        args.push("--previous".to_owned());
        args.push(folder.join(version_file(version)).display().to_string());
    }
    args.push("--candidate".to_owned());
    args.push(folder.join(version_file(HISTORY + 1)).display().to_string());
    args
}

/// The instructions `binary args…` executes (every thread), checking that it
/// exits with `expected_status` (a compatible or an incompatible verdict).
fn instructions(binary: &Path, args: &[&str], expected_status: i32) -> Result<u64, String> {
    let output = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|error| format!("valgrind: {error}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() != Some(expected_status) {
        return Err(format!(
            "{} exited with {:?}, not {expected_status}: {}",
            binary.display(),
            output.status.code(),
            stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ")
        ));
    }
    stderr
        .lines()
        .find_map(|line| line.split_once("Collected :").map(|(_, count)| count.trim().to_owned()))
        .and_then(|count| count.parse().ok())
        .ok_or_else(|| format!("no `Collected :` line from callgrind for {}", binary.display()))
}
