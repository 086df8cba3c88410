//! The search index (issue 41 item 3) on 10,000 subjects: an embedded
//! registry opened on a store holding 10,000 subjects of three versions each
//! (a third each Avro, JSON Schema and Protobuf; 12 to 14 fields per version,
//! drawn from 300 shared names and names of the subject's own), then queries
//! through `Registry::search`, as `GET /schemaops/search` runs them.
//!
//! Prints: the start-up (the whole load, answers and index included, on every
//! core) and the index alone built on one thread; the memory the registry's
//! state and the index alone take (growth of the resident set, so an upper
//! bound: the allocator keeps some freed pages); and per query the median and the slowest of its runs, against
//! the target (under 50 ms at 10,000 subjects).
//!
//! `cargo bench --bench search [-- --subjects N --runs R]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use schemaops::compat::{Checker, Format};
use schemaops::registry::contract::{Contract, ContractConfig};
use schemaops::registry::embedded::EmbeddedRegistry;
use schemaops::registry::embedded::store::{Change, SchemaRow, Snapshot, Store, StoreError, SubjectRow, VersionRow};
use schemaops::registry::search::{Query, SearchIndex, Target, elements::elements};
use schemaops::registry::{Registry, SchemaId, SubjectName, Version};

/// The resident memory of this process, in bytes (`VmRSS` in
/// `/proc/self/status`); 0 where there is no procfs.
fn resident() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
            let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(0)
}

const VERSIONS: usize = 3;
const SHARED_NAMES: usize = 300;
const TARGET: Duration = Duration::from_millis(50);

/// A store that only loads a snapshot built in memory.
struct SnapshotStore(Snapshot);

#[async_trait]
impl Store for SnapshotStore {
    async fn load(&self) -> Result<Snapshot, StoreError> {
        Ok(self.0.clone())
    }

    async fn apply(&self, _changes: Vec<Change>) -> Result<(), StoreError> {
        Ok(())
    }
}

/// The field names of `version` of subject `subject`: shared ones (the
/// first is `customer_id` in every tenth subject) and its own.
fn field_names(subject: usize, version: usize) -> Vec<String> {
    let mut names: Vec<String> = (0..10)
        .map(|k| format!("shared_{}", (subject * 7 + k * 31) % SHARED_NAMES))
        .collect();
    if subject.is_multiple_of(10) {
        names[0] = "customer_id".to_owned();
    }
    names.push(format!("own_{subject}_a"));
    names.push(format!("own_{subject}_b"));
    names.extend((1..=version).map(|added| format!("added_{subject}_{added}")));
    names.dedup();
    names
}

fn schema_text(format: Format, subject: usize, version: usize) -> String {
    let names = field_names(subject, version);
    match format {
        Format::Avro => {
            let fields: Vec<String> = names
                .iter()
                .map(|name| format!(r#"{{"name":"{name}","type":["null","long"],"default":null}}"#))
                .collect();
            format!(
                r#"{{"type":"record","name":"Order{subject}","namespace":"bench","fields":[{}]}}"#,
                fields.join(",")
            )
        }
        Format::Json => {
            let properties: Vec<String> = names
                .iter()
                .map(|name| format!(r#""{name}":{{"type":"string"}}"#))
                .collect();
            format!(r#"{{"type":"object","properties":{{{}}}}}"#, properties.join(","))
        }
        Format::Protobuf => {
            let fields: Vec<String> = names
                .iter()
                .enumerate()
                .map(|(number, name)| format!("  int64 {name} = {};", number + 1))
                .collect();
            format!(
                "syntax = \"proto3\";\npackage bench;\nmessage Order{subject} {{\n{}\n}}\n",
                fields.join("\n")
            )
        }
    }
}

fn snapshot(subjects: usize) -> Snapshot {
    let mut snapshot = Snapshot::default();
    let formats = [Format::Avro, Format::Json, Format::Protobuf];
    let mut id = 0;
    for subject in 0..subjects {
        let name = SubjectName::new(format!("orders-{subject:05}-value")).unwrap();
        let format = formats[subject % formats.len()];
        for version in 1..=VERSIONS {
            id += 1;
            let schema_id = SchemaId::new(id).unwrap();
            snapshot.schemas.push(SchemaRow {
                id: schema_id,
                format,
                text: schema_text(format, subject, version),
                fingerprint: format!("bench-{id}"),
                references: Vec::new(),
                contract: Contract::default(),
            });
            snapshot.versions.push(VersionRow {
                subject: name.clone(),
                version: Version::new(version as i64).unwrap(),
                id: schema_id,
                deleted: false,
            });
        }
        snapshot.subjects.push(SubjectRow {
            subject: name,
            next_version: Version::new(VERSIONS as i64 + 1).unwrap(),
            compatibility: None,
            mode: None,
            config: ContractConfig::default(),
        });
    }
    snapshot
}

fn option(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.windows(2)
        .find(|pair| pair[0] == name)
        .map_or(default, |pair| pair[1].parse().expect("a number"))
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() {
    let subjects = option("--subjects", 10_000);
    let runs = option("--runs", 50);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();

    let snapshot = snapshot(subjects);
    let text_bytes: usize = snapshot.schemas.iter().map(|row| row.text.len()).sum();
    println!(
        "{subjects} subjects, {} versions, {:.1} MiB of schema text",
        snapshot.versions.len(),
        mib(text_bytes)
    );

    // The index alone, on one thread.
    let before = resident();
    let started = Instant::now();
    let mut index = SearchIndex::default();
    for row in &snapshot.schemas {
        index.add(row.id, row.format, elements(row.format, &row.text));
    }
    let built = started.elapsed();
    let index_bytes = resident().saturating_sub(before);
    let size = index.size();
    println!(
        "index alone: built in {:.0} ms on one thread; {} elements, {} distinct names; {:.1} MiB ({:.0} bytes an element)",
        built.as_secs_f64() * 1000.0,
        size.postings,
        size.names,
        mib(index_bytes),
        index_bytes as f64 / size.postings.max(1) as f64
    );
    drop(index);

    // The whole start-up.
    let before = resident();
    let started = Instant::now();
    let store = Arc::new(SnapshotStore(snapshot));
    let registry = runtime
        .block_on(EmbeddedRegistry::open(store, Checker::default()))
        .unwrap();
    let opened = started.elapsed();
    let state_bytes = resident().saturating_sub(before);
    println!(
        "start-up (load, answers and index on {} cores): {:.0} ms; the registry's state holds {:.1} MiB, the index {:.0}% of it",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        opened.as_secs_f64() * 1000.0,
        mib(state_bytes),
        100.0 * index_bytes as f64 / state_bytes.max(1) as f64
    );

    let queries = [
        ("customer_id", Target::Field, "a field in every tenth subject"),
        ("own_4242_a", Target::Field, "a field of one subject"),
        ("shared_1", Target::Field, "part of 111 shared names"),
        ("_", Target::Field, "part of every name"),
        ("order4242", Target::Type, "a type by part of its name"),
        ("no_such_name", Target::Field, "nothing"),
        ("-04242-", Target::Subject, "a subject by part of its name"),
        ("value", Target::Subject, "part of every subject's name"),
    ];
    println!("query (kind, limit 50): median, slowest of {runs} runs; hits, more");
    let mut missed = false;
    for (text, target, what) in queries {
        let query = Query::new(text, target, None).unwrap();
        let mut times = Vec::with_capacity(runs);
        let mut found = None;
        for _ in 0..runs {
            let started = Instant::now();
            found = Some(runtime.block_on(registry.search(&query)).unwrap());
            times.push(started.elapsed());
        }
        times.sort();
        let found = found.unwrap();
        let hits = found.subjects.len() + found.elements.len();
        let slowest = times[times.len() - 1];
        missed |= slowest > TARGET;
        println!(
            "  {text:<14} {:<7} {:>7.2} ms {:>7.2} ms  {hits:>3} hits, more: {:<5}  ({what})",
            target.as_str(),
            times[times.len() / 2].as_secs_f64() * 1000.0,
            slowest.as_secs_f64() * 1000.0,
            found.more,
        );
    }
    println!(
        "target: every query under {} ms: {}",
        TARGET.as_millis(),
        if missed { "MISSED" } else { "met" }
    );
}
