//! Speed of the Protobuf checker at 10, 200 and 2,000 fields, on generated
//! messages with nested messages, enums, oneofs, maps, repeated fields and an
//! imported well-known type (`benches/compat.rs` covers Avro and JSON Schema):
//!
//! (a) BACKWARD after adding one field;
//! (b) FULL_TRANSITIVE against 50 earlier versions, each adding a field.
//!
//! Prints the median time per check, cold (every schema parsed) and warm (the
//! earlier versions pre-parsed, as a registry keeps them), the growth from
//! 200 to 2,000 fields, and the time to parse one candidate alone.
//! `--dump DIR` also writes the generated schemas.
//!
//! `cargo bench --bench compat_protobuf [-- --dump DIR]`

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use schemaops::compat::{Checker, Format, Mode, ParsedSchema, SchemaRole, SchemaText, check, check_parsed};

const FIELD_COUNTS: [usize; 3] = [10, 200, 2_000];
const HISTORY: usize = 50;

/// A `.proto` message of `fields` base fields plus `extra` added string fields.
fn proto_schema(fields: usize, extra: usize) -> String {
    let mut text = String::from(
        "syntax = \"proto3\";\npackage dev.schemaops.bench;\n\nimport \"google/protobuf/timestamp.proto\";\n\nmessage Bench {\n",
    );
    let mut nested = String::new();
    for index in 0..fields {
        let number = index + 1;
        let _ = match index % 8 {
            0 => writeln!(text, "  int64 field_{index} = {number};"),
            1 => writeln!(text, "  string field_{index} = {number};"),
            2 => {
                let _ = writeln!(
                    nested,
                    "  message Nested{index} {{\n    int64 id = 1;\n    optional string label = 2;\n    \
                     map<string, double> scores = 3;\n  }}"
                );
                writeln!(text, "  Nested{index} field_{index} = {number};")
            }
            3 => {
                let _ = writeln!(
                    nested,
                    "  enum Status{index} {{ ACTIVE{index} = 0; PAUSED{index} = 1; CLOSED{index} = 2; }}"
                );
                writeln!(text, "  Status{index} field_{index} = {number};")
            }
            4 => writeln!(text, "  oneof choice_{index} {{ string text_{index} = {number}; }}"),
            5 => {
                let _ = writeln!(
                    nested,
                    "  message Item{index} {{ string sku = 1; int32 quantity = 2; }}"
                );
                writeln!(text, "  repeated Item{index} field_{index} = {number};")
            }
            6 => writeln!(text, "  map<string, float> field_{index} = {number};"),
            _ => writeln!(text, "  google.protobuf.Timestamp field_{index} = {number};"),
        };
    }
    for index in 0..extra {
        let _ = writeln!(text, "  string added_{index} = {};", fields + index + 1);
    }
    text.push_str(&nested);
    text.push_str("}\n");
    text
}

/// A schema language as the bench drives it.
#[derive(Clone, Copy)]
struct Language {
    format: Format,
    name: &'static str,
    extension: &'static str,
    generate: fn(usize, usize) -> String,
}

const LANGUAGES: [Language; 1] = [Language {
    format: Format::Protobuf,
    name: "Protobuf",
    extension: "proto",
    generate: proto_schema,
}];

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs `work` until `budget` is spent (at least 5 times) and returns the median.
fn measure(budget: Duration, mut work: impl FnMut()) -> Duration {
    let started = Instant::now();
    let mut samples = Vec::new();
    while samples.len() < 5 || (started.elapsed() < budget && samples.len() < 1_000) {
        let begin = Instant::now();
        work();
        samples.push(begin.elapsed());
    }
    median(samples)
}

fn check_cold(format: Format, mode: Mode, candidate: &SchemaText, previous: &[SchemaText]) {
    let report = check(format, mode, candidate, previous).expect("generated schemas are valid");
    assert!(report.is_compatible(), "generated histories are compatible");
}

fn check_warm(format: Format, mode: Mode, candidate: &SchemaText, previous: &[&ParsedSchema]) {
    let parsed = Checker::default()
        .parse(format, SchemaRole::Candidate, candidate)
        .expect("generated schemas are valid");
    assert!(
        check_parsed(mode, &parsed, previous)
            .expect("a decidable check")
            .is_compatible(),
        "generated histories are compatible"
    );
}

fn dump(dir: &Path, language: Language, fields: usize) -> std::io::Result<()> {
    let folder = dir.join(format!("fields-{fields}"));
    std::fs::create_dir_all(&folder)?;
    for extra in 0..=HISTORY {
        std::fs::write(
            folder.join(format!("v{:02}.{}", extra + 1, language.extension)),
            (language.generate)(fields, extra),
        )?;
    }
    Ok(())
}

fn dump_dir() -> Option<PathBuf> {
    option_value("--dump").map(PathBuf::from)
}

/// The value after `flag` on the command line.
fn option_value(flag: &str) -> Option<String> {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == flag {
            return args.next();
        }
    }
    None
}

/// Medians for one field count: (a) cold, (a) warm, (b) cold, (b) warm, parse.
fn run(language: Language, fields: usize, budget: Duration) -> [Duration; 5] {
    let format = language.format;
    let versions: Vec<SchemaText> = (0..=HISTORY)
        .map(|extra| SchemaText::new((language.generate)(fields, extra)))
        .collect();
    let parsed: Vec<ParsedSchema> = versions
        .iter()
        .map(|text| {
            Checker::default()
                .parse(format, SchemaRole::Candidate, text)
                .expect("valid")
        })
        .collect();
    let parsed_refs: Vec<&ParsedSchema> = parsed.iter().collect();
    let (candidate, previous) = versions.split_last().expect("51 versions");
    let previous_parsed = &parsed_refs[..HISTORY];
    [
        measure(budget, || {
            check_cold(format, Mode::Backward, &versions[1], &versions[..1])
        }),
        measure(budget, || {
            check_warm(format, Mode::Backward, &versions[1], &parsed_refs[..1])
        }),
        measure(budget, || check_cold(format, Mode::FullTransitive, candidate, previous)),
        measure(budget, || {
            check_warm(format, Mode::FullTransitive, candidate, previous_parsed)
        }),
        measure(budget, || {
            Checker::default()
                .parse(format, SchemaRole::Candidate, candidate)
                .expect("valid");
        }),
    ]
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn main() {
    let dump_to = dump_dir();
    let budget = Duration::from_secs(2);
    for language in LANGUAGES {
        let dump_folder = dump_to.as_ref().map(|dir| dir.join(language.extension));
        bench_language(language, budget, dump_folder.as_deref());
    }
    if let Some(dir) = dump_to {
        println!("schemas written to {}", dir.display());
    }
}

fn bench_language(language: Language, budget: Duration, dump_to: Option<&Path>) {
    println!(
        "{} checker, median per check in ms (cold: all schemas parsed; warm: earlier versions pre-parsed)",
        language.name
    );
    println!(
        "{:>6}  {:>9}  {:>12} {:>12}  {:>12} {:>12}  {:>9}",
        "fields", "bytes", "(a) cold", "(a) warm", "(b) cold", "(b) warm", "parse"
    );
    let mut results = Vec::new();
    for fields in FIELD_COUNTS {
        if let Some(dir) = dump_to {
            dump(dir, language, fields).expect("the dump folder is writable");
        }
        let medians = run(language, fields, budget);
        println!(
            "{fields:>6}  {:>9}  {:>12.3} {:>12.3}  {:>12.3} {:>12.3}  {:>9.3}",
            (language.generate)(fields, 0).len(),
            millis(medians[0]),
            millis(medians[1]),
            millis(medians[2]),
            millis(medians[3]),
            millis(medians[4])
        );
        results.push(medians);
    }
    let growth = |column: usize| results[2][column].as_secs_f64() / results[1][column].as_secs_f64();
    println!(
        "growth 200 -> 2,000 fields (10x more): (a) cold {:.1}x, warm {:.1}x; (b) cold {:.1}x, warm {:.1}x (target: under 15x)",
        growth(0),
        growth(1),
        growth(2),
        growth(3)
    );
    println!(
        "(b) FULL_TRANSITIVE x{HISTORY} at 2,000 fields: warm {:.1} ms, cold {:.1} ms (target: under 50 ms)\n",
        millis(results[2][3]),
        millis(results[2][2])
    );
}
