//! Speed of the Avro checker on generated records with nested records, enums,
//! unions, arrays and maps, at 10, 200 and 2,000 fields; of the JSON Schema
//! checker on objects with as many properties (nested closed objects, arrays
//! of objects, enums, anyOf/oneOf, `$ref`s to definitions); and of the
//! Protobuf checker on messages with nested messages, enums, oneofs, maps,
//! repeated fields and an imported well-known type:
//!
//! (a) BACKWARD after adding one field with a default (one property);
//! (b) FULL_TRANSITIVE against 50 earlier versions, each adding a field
//!     (each adding a property its partially open object already allowed).
//!
//! Prints the median time per check and the growth from 200 to 2,000 fields,
//! measured in this run (the field counts of a case are timed in turn, round
//! after round, so the host's noise falls on each alike), two ways:
//! - cold: every schema arrives as text and is parsed (`compat::check`);
//! - warm: the earlier versions are already parsed, as a registry keeps its
//!   immutable versions, and only the candidate is parsed per check
//!   (`Checker::parse` + `compat::check_parsed`).
//!
//! Both start from an empty Protobuf compile cache (each text is seen for the
//! first time). For Protobuf, (b) cold is also timed with the texts compiled
//! before in the process (the registry, the operator and `check` share one
//! cache), with the ratio to the first sight, and the cache's memory when
//! full is printed (estimate and RSS).
//!
//! For Avro, the `apache-avro` crate's own check (`SchemaCompatibility::can_read`)
//! runs on the same texts in the same run, cold (every text parsed by it),
//! and the ratio ours/peer is printed per case (below 1: we are faster). Each
//! format's parse throughput (MB/s, the 2,000-field schema) is printed too.
//!
//! `--dump DIR` also writes the generated schemas, so other implementations
//! can be fed the same inputs.
//!
//! `--format NAME` runs only the format whose name contains NAME (`Avro`,
//! `JSON`, `Protobuf`), and the peers only with Avro, to profile one alone.
//!
//! With Avro, the instructions of the `schemaops compat` binary on the peers'
//! cases of 200 and 2,000 fields are counted under callgrind beside those of
//! a baseline binary (`--baseline PATH`, see `compat/instructions.rs`), with
//! their ratio; skipped, with a line saying why, without valgrind or a baseline.
//!
//! `--only SECTION` runs one section: `timing` (the medians per format),
//! `peers` (Avro beside the crate and Java) or `instructions`; `--case NAME`
//! runs only the Avro peers' cases whose label (`rich-10-ok`) contains NAME.
//!
//! `cargo bench --bench compat [-- --dump DIR] [--format NAME] [--only SECTION] [--case NAME] [--baseline PATH]`

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use schemaops::compat::{Checker, Format, Mode, ParsedSchema, SchemaRole, SchemaText, check, check_parsed, protobuf};
use serde_json::{Value, json};

/// The allocator the `schemaops` binary ships with, so the bench times what
/// users run (the peers in this process get it too).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[path = "compat/instructions.rs"]
mod instructions;
#[path = "compat/peers.rs"]
mod peers;

const FIELD_COUNTS: [usize; 3] = [10, 200, 2_000];
const HISTORY: usize = 50;

/// The type of field `index`: a rotation through every kind of Avro type.
fn field_type(index: usize) -> Value {
    match index % 8 {
        0 => json!("long"),
        1 => json!("string"),
        2 => json!({"type": "record", "name": format!("Nested{index}"), "fields": [
            {"name": "id", "type": "long"},
            {"name": "label", "type": ["null", "string"], "default": null},
            {"name": "scores", "type": {"type": "map", "values": "double"}},
        ]}),
        3 => json!({"type": "enum", "name": format!("Status{index}"), "symbols": ["ACTIVE", "PAUSED", "CLOSED"]}),
        4 => json!(["null", "string", "long"]),
        5 => json!({"type": "array", "items": {"type": "record", "name": format!("Item{index}"), "fields": [
            {"name": "sku", "type": "string"},
            {"name": "quantity", "type": "int"},
        ]}}),
        6 => json!({"type": "map", "values": ["null", {"type": "array", "items": "float"}]}),
        _ => json!({"type": "fixed", "name": format!("Digest{index}"), "size": 16}),
    }
}

/// The type of field `index` of a flat record: primitives only.
fn flat_field_type(index: usize) -> Value {
    json!(["long", "string", "int", "double", "boolean", "float", "bytes"][index % 7])
}

/// A rich record of `fields` base fields plus `extra` added fields with defaults.
fn schema(fields: usize, extra: usize) -> String {
    avro_record(AvroShape::Rich, fields, extra, false)
}

/// The two shapes of Avro record the peers are compared on.
#[derive(Clone, Copy, PartialEq)]
enum AvroShape {
    /// Primitive fields only.
    Flat,
    /// The rotation of `field_type`: nested records, enums, unions, arrays, maps, fixed.
    Rich,
}

/// An Avro record of `fields` base fields plus `extra` added fields with
/// defaults; `broken` changes one field deep inside the record so that no
/// earlier version can be read with it, nor it with them: the last field
/// (flat), or the `quantity` of the last array of records (rich).
fn avro_record(shape: AvroShape, fields: usize, extra: usize, broken: bool) -> String {
    let last_array = (0..fields).rev().find(|index| index % 8 == 5);
    let mut all: Vec<Value> = (0..fields)
        .map(|index| {
            let mut kind = match shape {
                AvroShape::Flat => flat_field_type(index),
                AvroShape::Rich => field_type(index),
            };
            if broken {
                match shape {
                    AvroShape::Flat if index + 1 == fields => kind = json!({"type": "array", "items": "string"}),
                    AvroShape::Rich if Some(index) == last_array => {
                        kind["items"]["fields"][1]["type"] = json!("string")
                    }
                    _ => {}
                }
            }
            json!({"name": format!("field_{index}"), "type": kind})
        })
        .collect();
    all.extend((0..extra).map(|index| json!({"name": format!("added_{index}"), "type": "string", "default": ""})));
    json!({"type": "record", "name": "Bench", "namespace": "dev.schemaops.bench", "fields": all}).to_string()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs each of `works` once per round, in turn, until `budget` is spent
/// (at least 5 rounds, at most 1,000), and returns each one's median. The
/// sizes of one case share every round, so a slowdown of the (shared) host
/// falls on all of them alike and their ratio holds.
fn measure_in_turn(budget: Duration, works: &mut [Box<dyn FnMut() + '_>]) -> Vec<Duration> {
    let started = Instant::now();
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); works.len()];
    let mut rounds = 0;
    while rounds < 5 || (started.elapsed() < budget && rounds < 1_000) {
        for (work, samples) in works.iter_mut().zip(&mut samples) {
            let begin = Instant::now();
            work();
            samples.push(begin.elapsed());
        }
        rounds += 1;
    }
    samples.into_iter().map(median).collect()
}

/// Runs `work` until `budget` is spent (at least 5 times) and returns the median.
fn measure(budget: Duration, work: impl FnMut()) -> Duration {
    measure_in_turn(budget, &mut [Box::new(work)])[0]
}

fn check_cold(format: Format, mode: Mode, candidate: &SchemaText, previous: &[SchemaText]) {
    protobuf::cache::clear();
    let report = check(format, mode, candidate, previous).expect("generated schemas are valid");
    assert!(report.is_compatible(), "generated histories are compatible");
}

fn check_warm(format: Format, mode: Mode, candidate: &SchemaText, previous: &[&ParsedSchema]) {
    protobuf::cache::clear();
    let parsed = Checker::default()
        .parse(format, SchemaRole::Candidate, candidate)
        .expect("generated schemas are valid");
    assert!(
        check_parsed(mode, &parsed, previous)
            .expect("generated schemas are simple")
            .is_compatible(),
        "generated histories are compatible"
    );
}

/// Parse throughput in MB/s: the `fields`-field schema parsed alone.
fn parse_rate(bench: &Bench, fields: usize, budget: Duration) -> f64 {
    let text = SchemaText::new((bench.schema)(fields, 0));
    let bytes = text.text.len() as f64;
    let time = measure(budget, || {
        protobuf::cache::clear();
        Checker::default()
            .parse(bench.format, SchemaRole::Candidate, &text)
            .expect("valid");
    });
    bytes / time.as_secs_f64() / 1e6
}

fn dump(dir: &Path, fields: usize, bench: &Bench) -> std::io::Result<()> {
    let folder = dir.join(format!("{}-{fields}", bench.folder));
    std::fs::create_dir_all(&folder)?;
    for extra in 0..=HISTORY {
        std::fs::write(
            folder.join(format!("v{:02}.{}", extra + 1, bench.extension)),
            (bench.schema)(fields, extra),
        )?;
    }
    Ok(())
}

/// The type of JSON property `index`: a rotation through the shapes JSON Schemas take.
fn json_property(index: usize) -> Value {
    match index % 8 {
        0 => json!({"type": "integer", "minimum": 0}),
        1 => json!({"type": "string", "maxLength": 64}),
        2 => json!({"type": "object", "additionalProperties": false, "required": ["id"], "properties": {
            "id": {"type": "integer"},
            "label": {"type": ["string", "null"]},
            "scores": {"type": "object", "additionalProperties": {"type": "number"}},
        }}),
        3 => json!({"enum": ["ACTIVE", "PAUSED", "CLOSED"]}),
        4 => json!({"anyOf": [{"type": "null"}, {"type": "string"}, {"type": "integer"}]}),
        5 => json!({"type": "array", "maxItems": 100, "items": {"type": "object", "additionalProperties": false,
            "required": ["sku"], "properties": {"sku": {"type": "string"}, "quantity": {"type": "integer"}}}}),
        6 => json!({"oneOf": [
            {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "card"}, "last4": {"type": "string"}}},
            {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "bank"}, "iban": {"type": "string"}}},
        ]}),
        _ => json!({"$ref": "#/definitions/Money"}),
    }
}

/// An object of `properties` base properties plus `extra` added string
/// properties, which its `additionalProperties` schema already allowed (so
/// every step is compatible both ways).
fn json_schema(properties: usize, extra: usize) -> String {
    let mut all = serde_json::Map::new();
    for index in 0..properties {
        all.insert(format!("property_{index}"), json_property(index));
    }
    for index in 0..extra {
        all.insert(format!("added_{index}"), json!({"type": "string"}));
    }
    let required: Vec<String> = (0..properties)
        .step_by(3)
        .map(|index| format!("property_{index}"))
        .collect();
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Bench",
        "type": "object",
        "properties": all,
        "required": required,
        "additionalProperties": {"type": "string"},
        "definitions": {"Money": {"type": "object", "additionalProperties": false, "required": ["units"],
            "properties": {"units": {"type": "integer"}, "currency": {"type": "string", "pattern": "^[A-Z]{3}$"}}}},
    })
    .to_string()
}

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

/// One checker's benchmark: its format and how to make version `extra` of a schema of `fields`.
struct Bench {
    name: &'static str,
    format: Format,
    unit: &'static str,
    folder: &'static str,
    extension: &'static str,
    schema: fn(usize, usize) -> String,
}

const BENCHES: [Bench; 3] = [
    Bench {
        name: "Avro",
        format: Format::Avro,
        unit: "fields",
        folder: "fields",
        extension: "avsc",
        schema,
    },
    Bench {
        name: "JSON Schema",
        format: Format::Json,
        unit: "props",
        folder: "json-properties",
        extension: "json",
        schema: json_schema,
    },
    Bench {
        name: "Protobuf",
        format: Format::Protobuf,
        unit: "fields",
        folder: "proto-fields",
        extension: "proto",
        schema: proto_schema,
    },
];

/// The value after `--name` on the command line, if given.
fn option(name: &str) -> Option<String> {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == name {
            return args.next();
        }
    }
    None
}

/// Whether `bench` is selected by `--format NAME` (every format without it).
fn selected(bench: &Bench) -> bool {
    option("--format").is_none_or(|name| bench.name.contains(name.as_str()))
}

/// One field count's inputs: every version as text, and all but the
/// candidate parsed, as a registry keeps them.
struct Inputs {
    versions: Vec<SchemaText>,
    parsed: Vec<ParsedSchema>,
}

impl Inputs {
    fn new(bench: &Bench, fields: usize) -> Self {
        let versions: Vec<SchemaText> = (0..=HISTORY)
            .map(|extra| SchemaText::new((bench.schema)(fields, extra)))
            .collect();
        let parsed = versions[..HISTORY]
            .iter()
            .map(|text| {
                Checker::default()
                    .parse(bench.format, SchemaRole::Candidate, text)
                    .expect("valid")
            })
            .collect();
        Self { versions, parsed }
    }

    /// The check of one column: (a) cold, (a) warm, (b) cold or (b) warm.
    fn work(&self, format: Format, column: usize) -> Box<dyn FnMut() + '_> {
        let previous: Vec<&ParsedSchema> = self.parsed.iter().collect();
        let (candidate, earlier) = self.versions.split_last().expect("51 versions");
        match column {
            0 => Box::new(move || check_cold(format, Mode::Backward, &self.versions[1], &self.versions[..1])),
            1 => Box::new(move || check_warm(format, Mode::Backward, &self.versions[1], &previous[..1])),
            2 => Box::new(move || check_cold(format, Mode::FullTransitive, candidate, earlier)),
            _ => Box::new(move || check_warm(format, Mode::FullTransitive, candidate, &previous)),
        }
    }
}

/// Medians per field count (rows) and column ((a) cold, (a) warm, (b) cold,
/// (b) warm); each column's field counts are timed in turn.
fn run(bench: &Bench, budget: Duration) -> Vec<[Duration; 4]> {
    let inputs: Vec<Inputs> = FIELD_COUNTS.iter().map(|&fields| Inputs::new(bench, fields)).collect();
    let mut rows = vec![[Duration::ZERO; 4]; inputs.len()];
    for column in 0..4 {
        let mut works: Vec<Box<dyn FnMut() + '_>> =
            inputs.iter().map(|input| input.work(bench.format, column)).collect();
        for (row, median) in rows.iter_mut().zip(measure_in_turn(budget, &mut works)) {
            row[column] = median;
        }
    }
    rows
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// Whether the section `name` runs: every one without `--only`.
fn section(name: &str) -> bool {
    option("--only").is_none_or(|only| only == name)
}

fn main() {
    let dump_to = option("--dump").map(PathBuf::from);
    let budget = Duration::from_secs(2);
    if section("timing") {
        for bench in BENCHES.iter().filter(|bench| selected(bench)) {
            report(bench, budget, dump_to.as_deref());
            println!();
        }
    }
    if selected(&BENCHES[0]) {
        let cases: Vec<peers::Case> = peers::cases()
            .into_iter()
            .filter(|case| option("--case").is_none_or(|name| case.label().contains(name.as_str())))
            .collect();
        if section("peers") {
            peers::report(&cases, Duration::from_secs(1));
            println!();
        }
        if section("instructions") {
            let counted: Vec<peers::Case> = cases.into_iter().filter(|case| case.fields >= 200).collect();
            let work = tempfile::tempdir().expect("a temporary folder");
            let folder = dump_to
                .as_ref()
                .map_or_else(|| work.path().to_owned(), |dir| dir.join("instructions"));
            instructions::report(&counted, &folder);
        }
    }
    if let Some(dir) = dump_to {
        println!("schemas written to {}", dir.display());
    }
}

fn report(bench: &Bench, budget: Duration, dump_to: Option<&Path>) {
    let unit = bench.unit;
    println!(
        "{} checker, median per check in ms (cold: all schemas parsed; warm: earlier versions pre-parsed)",
        bench.name
    );
    println!(
        "{unit:>6}  {:>9}  {:>12} {:>12}  {:>12} {:>12}",
        "bytes", "(a) cold", "(a) warm", "(b) cold", "(b) warm"
    );
    if let Some(dir) = dump_to {
        for fields in FIELD_COUNTS {
            dump(dir, fields, bench).expect("the dump folder is writable");
        }
    }
    let results = run(bench, budget);
    for (fields, medians) in FIELD_COUNTS.into_iter().zip(&results) {
        println!(
            "{fields:>6}  {:>9}  {:>12.3} {:>12.3}  {:>12.3} {:>12.3}",
            (bench.schema)(fields, 0).len(),
            millis(medians[0]),
            millis(medians[1]),
            millis(medians[2]),
            millis(medians[3])
        );
    }
    let growth = |column: usize| results[2][column].as_secs_f64() / results[1][column].as_secs_f64();
    println!(
        "growth 200 -> 2,000 {unit} (10x more): (a) cold {:.1}x, warm {:.1}x; (b) cold {:.1}x, warm {:.1}x (target: at most 12x)",
        growth(0),
        growth(1),
        growth(2),
        growth(3)
    );
    println!(
        "(b) FULL_TRANSITIVE x{HISTORY} at 2,000 {unit}: warm {:.1} ms, cold {:.1} ms (target: under 50 ms)",
        millis(results[2][3]),
        millis(results[2][2])
    );
    println!(
        "parse throughput at 2,000 {unit}: {:.0} MB/s",
        parse_rate(bench, FIELD_COUNTS[2], budget)
    );
    if bench.format == Format::Protobuf {
        protobuf_cache_report(bench, budget);
    }
}

/// (b) cold at 2,000 fields from an empty cache and with every text compiled
/// before, their ratio, and the cache's memory once filled past its bound.
fn protobuf_cache_report(bench: &Bench, budget: Duration) {
    let fields = FIELD_COUNTS[2];
    let versions: Vec<SchemaText> = (0..=HISTORY)
        .map(|extra| SchemaText::new((bench.schema)(fields, extra)))
        .collect();
    let (candidate, earlier) = versions.split_last().expect("51 versions");
    let mut first_sight = || check_cold(bench.format, Mode::FullTransitive, candidate, earlier);
    let mut compiled_before = || {
        let report = check(bench.format, Mode::FullTransitive, candidate, earlier).expect("valid");
        assert!(report.is_compatible(), "generated histories are compatible");
    };
    compiled_before();
    let mut works: Vec<Box<dyn FnMut() + '_>> = vec![Box::new(&mut first_sight), Box::new(&mut compiled_before)];
    let medians = measure_in_turn(budget, &mut works);
    drop(works);
    println!(
        "(b) cold FULL_TRANSITIVE x{HISTORY} at {fields} {}: first sight {:.1} ms, texts compiled before {:.1} ms, \
         ratio {:.3} (target: under 150 ms)",
        bench.unit,
        millis(medians[0]),
        millis(medians[1]),
        medians[1].as_secs_f64() / medians[0].as_secs_f64()
    );

    protobuf::cache::clear();
    let rss_empty = rss_kib();
    // Past the bound (evictions under way), and never forever should entries not be kept.
    let bound = protobuf::cache::MAX_CACHED_BYTES;
    let mut extra = HISTORY + 1;
    while extra < 4 * HISTORY || (protobuf::cache::stats().bytes < bound - bound / 20 && extra < 20 * HISTORY) {
        Checker::default()
            .parse(
                bench.format,
                SchemaRole::Candidate,
                &SchemaText::new((bench.schema)(fields, extra)),
            )
            .expect("valid");
        extra += 1;
    }
    let stats = protobuf::cache::stats();
    println!(
        "compile cache full: {} schemas of {fields} {} after {} compiled, {:.1} MiB estimated (bound {} MiB), \
         RSS {:.1} MiB over the empty cache's",
        stats.entries,
        bench.unit,
        extra - HISTORY - 1,
        stats.bytes as f64 / f64::from(1 << 20),
        protobuf::cache::MAX_CACHED_BYTES >> 20,
        (rss_kib() - rss_empty) as f64 / 1024.0
    );
}

/// This process's resident set, in KiB (0 where /proc is absent).
fn rss_kib() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}
