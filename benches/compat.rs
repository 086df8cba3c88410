//! Speed of the Avro checker on generated records with nested records, enums,
//! unions, arrays and maps, at 10, 200 and 2,000 fields:
//!
//! (a) BACKWARD after adding one field with a default;
//! (b) FULL_TRANSITIVE against 50 earlier versions, each adding a field.
//!
//! Prints the median time per check (parsing included) and the growth from
//! 200 to 2,000 fields, measured in this run. `--dump DIR` also writes the
//! generated schemas, so other implementations can be fed the same inputs.
//!
//! `cargo bench --bench compat [-- --dump DIR]`

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use schemaops::compat::{Format, Mode, SchemaText, check};
use serde_json::{Value, json};

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

/// A record of `fields` base fields plus `extra` added fields with defaults.
fn schema(fields: usize, extra: usize) -> String {
    let mut all: Vec<Value> = (0..fields)
        .map(|index| json!({"name": format!("field_{index}"), "type": field_type(index)}))
        .collect();
    all.extend((0..extra).map(|index| json!({"name": format!("added_{index}"), "type": "string", "default": ""})));
    json!({"type": "record", "name": "Bench", "namespace": "dev.schemaops.bench", "fields": all}).to_string()
}

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

fn check_once(mode: Mode, candidate: &SchemaText, previous: &[SchemaText]) {
    let report = check(Format::Avro, mode, candidate, previous).expect("generated schemas are valid");
    assert!(report.is_compatible(), "generated histories are compatible");
}

fn dump(dir: &Path, fields: usize) -> std::io::Result<()> {
    let folder = dir.join(format!("fields-{fields}"));
    std::fs::create_dir_all(&folder)?;
    for extra in 0..=HISTORY {
        std::fs::write(folder.join(format!("v{:02}.avsc", extra + 1)), schema(fields, extra))?;
    }
    Ok(())
}

fn dump_dir() -> Option<PathBuf> {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--dump" {
            return args.next().map(PathBuf::from);
        }
    }
    None
}

fn main() {
    let dump_to = dump_dir();
    let budget = Duration::from_secs(2);
    let mut single = Vec::new();
    let mut transitive = Vec::new();
    println!("Avro checker, parsing included; median per check");
    for fields in FIELD_COUNTS {
        if let Some(dir) = &dump_to {
            dump(dir, fields).expect("the dump folder is writable");
        }
        let versions: Vec<SchemaText> = (0..=HISTORY)
            .map(|extra| SchemaText::new(schema(fields, extra)))
            .collect();
        let (candidate, previous) = versions.split_last().expect("51 versions");

        let a = measure(budget, || check_once(Mode::Backward, &versions[1], &versions[..1]));
        let b = measure(budget, || check_once(Mode::FullTransitive, candidate, previous));
        println!(
            "{fields:>5} fields ({:>7} bytes): (a) BACKWARD +1 field {:>9.3} ms   (b) FULL_TRANSITIVE x{HISTORY} {:>9.3} ms",
            versions[0].text.len(),
            a.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3
        );
        single.push(a);
        transitive.push(b);
    }
    let ratio = |samples: &[Duration]| samples[2].as_secs_f64() / samples[1].as_secs_f64();
    println!(
        "growth 200 -> 2,000 fields (10x): (a) {:.1}x   (b) {:.1}x   (target: under 15x)",
        ratio(&single),
        ratio(&transitive)
    );
    let b_2000 = transitive[2].as_secs_f64() * 1e3;
    println!("(b) at 2,000 fields: {b_2000:.1} ms (target: under 50 ms)");
    if let Some(dir) = dump_to {
        println!("schemas written to {}", dir.display());
    }
}
