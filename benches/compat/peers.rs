//! Avro's cold parse + check beside two peers on the same texts, in the same
//! run: the `apache-avro` crate's `SchemaCompatibility` and, when `java`,
//! `javac` and Debian's `libavro-java` are present, Apache Avro's Java
//! `SchemaCompatibility` through `AvroCompatBench.java` (compiled here,
//! started once, timed in-process after a warm-up).
//!
//! Cases: flat and rich records of 10, 200 and 2,000 fields, compatible and
//! with one deep break in the candidate; (a) BACKWARD against the latest
//! version, (b) FULL_TRANSITIVE against 50 earlier versions. Every verdict
//! of the three must agree.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use schemaops::compat::{Format, Mode, SchemaText, check};

use super::{AvroShape, FIELD_COUNTS, HISTORY, avro_record, measure, millis};

/// The target: ours at most this share of Java's time (issue 44: at least 3x faster).
const TARGET_OF_JAVA: f64 = 1.0 / 3.0;

/// The stricter aim the comparison was first written with (5x faster), still printed.
const FIRST_AIM_OF_JAVA: f64 = 0.2;

/// One case of the comparison.
pub(crate) struct Case {
    shape: AvroShape,
    pub(crate) fields: usize,
    pub(crate) broken: bool,
    /// Versions 1 to 51; the last is the candidate.
    pub(crate) texts: Vec<String>,
}

impl Case {
    pub(crate) fn new(shape: AvroShape, fields: usize, broken: bool) -> Self {
        let texts = (0..=HISTORY)
            .map(|extra| avro_record(shape, fields, extra, broken && extra == HISTORY))
            .collect();
        Case {
            shape,
            fields,
            broken,
            texts,
        }
    }

    /// A folder-safe name, e.g. `rich-2000-break`.
    pub(crate) fn label(&self) -> String {
        let shape = match self.shape {
            AvroShape::Flat => "flat",
            AvroShape::Rich => "rich",
        };
        let verdict = if self.broken { "break" } else { "ok" };
        format!("{shape}-{}-{verdict}", self.fields)
    }

    /// The candidate and the versions `mode` checks it against.
    fn inputs(&self, mode: Mode) -> (&str, &[String]) {
        let (candidate, previous) = self.texts.split_last().expect("51 versions");
        match mode {
            Mode::Backward => (candidate, &previous[HISTORY - 1..]),
            _ => (candidate, previous),
        }
    }
}

/// Our check, cold: every text parsed; whether the candidate is compatible.
fn ours(case: &Case, mode: Mode) -> bool {
    let (candidate, previous) = case.inputs(mode);
    let candidate = SchemaText::new(candidate.to_owned());
    let previous: Vec<SchemaText> = previous.iter().map(|text| SchemaText::new(text.clone())).collect();
    check(Format::Avro, mode, &candidate, &previous)
        .expect("generated schemas are valid")
        .is_compatible()
}

/// The `apache-avro` crate's check, cold: `can_read` in every direction `mode` needs.
fn apache_avro_crate(case: &Case, mode: Mode) -> bool {
    use apache_avro::schema_compatibility::SchemaCompatibility;
    let parse = |text: &str| apache_avro::Schema::parse_str(text).expect("generated schemas are valid");
    let (candidate, previous) = case.inputs(mode);
    let candidate = parse(candidate);
    let mut compatible = true;
    for earlier in previous {
        let earlier = parse(earlier);
        compatible &= match mode {
            Mode::Backward => SchemaCompatibility::can_read(&earlier, &candidate).is_ok(),
            _ => SchemaCompatibility::mutual_read(&earlier, &candidate).is_ok(),
        };
    }
    compatible
}

/// Java's medians and verdicts for one case: (a) ms, (b) ms, (a) compatible, (b) compatible.
type JavaRow = (f64, f64, bool, bool);

/// Apache Avro's Java checker on every case: its version and one row per case label.
fn java(cases: &[Case], budget: Duration, work: &Path) -> Result<(String, HashMap<String, JavaRow>), String> {
    let avro_jar = Path::new("/usr/share/java/avro.jar");
    if !avro_jar.exists() || !have("java") || !have("javac") {
        return Err("needs java, javac and Debian's libavro-java (apt-get install libavro-java)".to_owned());
    }
    let jars = [
        "avro.jar",
        "jackson-core-asl.jar",
        "jackson-mapper-asl.jar",
        "slf4j-api.jar",
        "slf4j-nop.jar",
    ];
    let classes = work.join("classes");
    let classpath: Vec<PathBuf> = jars.iter().map(|jar| Path::new("/usr/share/java").join(jar)).collect();
    let classpath = std::env::join_paths(classpath.iter().chain([&classes])).map_err(|error| error.to_string())?;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/compat/AvroCompatBench.java");
    run(Command::new("javac")
        .arg("-cp")
        .arg(&classpath)
        .arg("-d")
        .arg(&classes)
        .arg(&source))?;
    let mut folders = Vec::new();
    for case in cases {
        let folder = work.join(case.label());
        std::fs::create_dir_all(&folder).map_err(|error| error.to_string())?;
        for (index, text) in case.texts.iter().enumerate() {
            std::fs::write(folder.join(format!("v{:02}.avsc", index + 1)), text).map_err(|error| error.to_string())?;
        }
        folders.push(folder);
    }
    let output = run(Command::new("java")
        .arg("-cp")
        .arg(&classpath)
        .arg("AvroCompatBench")
        .arg(budget.as_millis().to_string())
        .args(&folders))?;
    let mut lines = output.lines();
    let version = lines
        .next()
        .and_then(|line| line.strip_prefix("avro "))
        .ok_or_else(|| format!("the Java harness did not name its Avro version: {output}"))?
        .to_owned();
    let mut rows = HashMap::new();
    for line in lines {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [label, backward, full, backward_verdict, full_verdict] = parts[..] else {
            return Err(format!("unexpected line from the Java harness: {line}"));
        };
        let number = |text: &str| text.parse::<f64>().map_err(|error| format!("{text}: {error}"));
        rows.insert(
            label.to_owned(),
            (
                number(backward)?,
                number(full)?,
                backward_verdict == "compatible",
                full_verdict == "compatible",
            ),
        );
    }
    Ok((version, rows))
}

/// Runs `command` and returns its standard output, or what went wrong.
fn run(command: &mut Command) -> Result<String, String> {
    let output = command.output().map_err(|error| format!("{command:?}: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn have(program: &str) -> bool {
    Command::new(program).arg("-version").output().is_ok()
}

/// Every case: flat and rich, each field count, compatible and broken.
pub(crate) fn cases() -> Vec<Case> {
    [AvroShape::Flat, AvroShape::Rich]
        .into_iter()
        .flat_map(|shape| {
            FIELD_COUNTS
                .into_iter()
                .flat_map(move |fields| [false, true].map(|broken| Case::new(shape, fields, broken)))
        })
        .collect()
}

/// Prints the comparison; `budget` is spent per measurement.
pub fn report(cases: &[Case], budget: Duration) {
    let work = tempfile::tempdir().expect("a temporary folder");
    let java = java(cases, budget, work.path());
    match &java {
        Ok((version, _)) => println!(
            "Avro cold parse + check (every text parsed) beside the apache-avro crate and Apache Avro {version} (Java), median ms; ours/peer in brackets; target ours/Java at most {TARGET_OF_JAVA:.2}"
        ),
        Err(why) => println!(
            "Avro cold parse + check beside the apache-avro crate, median ms; ours/peer in brackets (Java peer skipped: {why})"
        ),
    }
    println!(
        "{:<16} {:>9} {:>18} {:>18}   {:>9} {:>18} {:>18}",
        "case", "(a) ours", "crate", "Java", "(b) ours", "crate", "Java"
    );
    let mut worst_of_java: f64 = 0.0;
    for case in cases {
        let mut cells = Vec::new();
        for (column, mode) in [Mode::Backward, Mode::FullTransitive].into_iter().enumerate() {
            let verdict = ours(case, mode);
            assert_eq!(verdict, !case.broken, "{}: our verdict under {mode:?}", case.label());
            assert_eq!(
                apache_avro_crate(case, mode),
                verdict,
                "{}: the crate's verdict",
                case.label()
            );
            let ours_time = millis(measure(budget, || {
                ours(case, mode);
            }));
            let crate_time = millis(measure(budget, || {
                apache_avro_crate(case, mode);
            }));
            let java_cell = match &java {
                Ok((_, rows)) => {
                    let row = rows.get(&case.label()).expect("Java answered every case");
                    let (time, java_verdict) = if column == 0 { (row.0, row.2) } else { (row.1, row.3) };
                    assert_eq!(java_verdict, verdict, "{}: Java's verdict under {mode:?}", case.label());
                    worst_of_java = worst_of_java.max(ours_time / time);
                    format!("{time:>9.3} [{:.2}x]", ours_time / time)
                }
                Err(_) => "-".to_owned(),
            };
            cells.push(format!(
                "{ours_time:>9.3} {:>18} {java_cell:>18}",
                format!("{crate_time:.3} [{:.2}x]", ours_time / crate_time)
            ));
        }
        println!("{:<16} {}   {}", case.label(), cells[0], cells[1]);
    }
    if java.is_ok() {
        let verdict = |limit: f64| if worst_of_java <= limit { "met" } else { "MISSED" };
        println!(
            "worst ours/Java: {worst_of_java:.2}x (target at most {TARGET_OF_JAVA:.2}: {}; the first aim, at most {FIRST_AIM_OF_JAVA:.2}: {})",
            verdict(TARGET_OF_JAVA),
            verdict(FIRST_AIM_OF_JAVA)
        );
    }
}
