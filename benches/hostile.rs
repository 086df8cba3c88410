//! Growth of the costs hostile inputs used to make super-linear (issue 14,
//! item 4), each measured at a size n and at 10n in this run: the printed
//! ratio is about 10 for linear work and about 100 for quadratic; issue 20's
//! target is at most 12.
//!
//! - an Avro enum of many symbols, and a union of many named records,
//!   checked FULL against themselves;
//! - a Protobuf message of many oneofs, checked FULL against itself;
//! - a Protobuf package of many parts, 51 and 510 (1,019 bytes: the longest
//!   the 1,024-byte name limit lets through, so both sizes compile);
//!
//!   each Protobuf text is compiled at every run (the compile cache is
//!   emptied first), as a hostile text is on its first sight: with the cache
//!   kept, every run after the first would time a cache hit;
//! - registrations in the embedded registry whose references form a DAG in
//!   which each schema refers to both schemas of the level below (2 per
//!   level), and one schema referring to many others.
//!
//! - CEL validations (issue 37, items 3 and 4), each timed once with the
//!   peak memory it added: a 4 KiB chain thousands of levels deep (refused
//!   when the policy compiles), loops nested 7 deep over 10 elements (10^7
//!   steps) and a field-uniqueness rule over n and 10n fields (n² steps);
//!   the last two end at the evaluation budget, so their time is bounded.
//!
//! - Protobuf through a `schemaops registry` process (issue 37, items 1 and
//!   5): one 8 MB compatibility POST, then several at once, each with the
//!   time and the process's peak resident memory, and how many the
//!   admission gate answered 429; and the diff and matrices of versions
//!   that change 10,000 properties 60 objects deep, with answer sizes.
//!
//! - The pages (issue 37, item 2) on a registry of 50,000 versions (half in
//!   one subject, the rest in subjects of 100): `GET /ui/` and the long
//!   subject's history, diff and matrix, each with its time, size and the
//!   peak memory it added.
//!
//! `cargo bench --bench hostile [-- --case TEXT]`: with `--case`, only the
//! cases whose name contains TEXT run (to profile one alone).

#[path = "../tests/support/http.rs"]
mod http;
#[path = "../tests/support/shapes.rs"]
mod shapes;

use std::io::BufRead as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use schemaops::compat::{Checker, FieldSummary, Format, Mode, SchemaSummary, SchemaText, check, protobuf};
use schemaops::crd::SchemaPolicySpec;
use schemaops::policy::{PolicySet, Proposal, Target};
use schemaops::registry::embedded::EmbeddedRegistry;
use schemaops::registry::embedded::sqlite::SqliteStore;
use schemaops::registry::{NewSchema, RegisterOptions, Registry, SchemaReference, SubjectName, Version};
use shapes::{deep_changes, large_proto};

/// The allocator the `schemaops` binary ships with, so the bench times what
/// users run.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// How much larger the second size is.
const FACTOR: usize = 10;

/// The most the time may grow from n to 10n.
const TARGET_RATIO: f64 = 12.0;

fn enum_symbols(n: usize) -> String {
    let symbols: Vec<String> = (0..n).map(|i| format!("\"S{i}\"")).collect();
    format!(r#"{{"type":"enum","name":"E","symbols":[{}]}}"#, symbols.join(","))
}

fn union_of_records(n: usize) -> String {
    let branches: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"type":"record","name":"R{i}","fields":[{{"name":"f","type":"long"}}]}}"#))
        .collect();
    format!(
        r#"{{"type":"record","name":"Top","fields":[{{"name":"u","type":[{}]}}]}}"#,
        branches.join(",")
    )
}

fn oneofs(n: usize) -> String {
    let mut text = String::from("syntax = \"proto3\";\nmessage M {\n");
    for i in 0..n {
        text.push_str(&format!("  oneof o{i} {{ string f{i} = {}; }}\n", field_number(i)));
    }
    text.push_str("}\n");
    text
}

/// The number of field `index`, past the range 19000-19999 that Protobuf
/// keeps for itself (a schema using it is refused).
fn field_number(index: usize) -> usize {
    if index < 18_999 { index + 1 } else { index + 1_001 }
}

fn package(parts: usize) -> String {
    format!(
        "syntax = \"proto3\";\npackage {};\nmessage M {{ string a = 1; }}\n",
        vec!["p"; parts].join(".")
    )
}

/// The medians of `small` and `large`, run in turn, round after round, for
/// as many rounds as fit in a fixed budget (at least five): a case of a few
/// milliseconds is timed as steadily as one of a few hundred, and a slowdown
/// of the host falls on both sizes alike.
fn timed_in_turn(mut small: impl FnMut(), mut large: impl FnMut()) -> (Duration, Duration) {
    let budget = Duration::from_secs(1);
    let started = Instant::now();
    let (mut smalls, mut larges) = (Vec::new(), Vec::new());
    let time = |work: &mut dyn FnMut()| {
        let run = Instant::now();
        work();
        run.elapsed()
    };
    while smalls.len() < 5 || started.elapsed() < budget {
        smalls.push(time(&mut small));
        larges.push(time(&mut large));
    }
    let median = |mut samples: Vec<Duration>| {
        samples.sort();
        samples[samples.len() / 2]
    };
    (median(smalls), median(larges))
}

fn report(case: &str, n: usize, small: Duration, large: Duration) {
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-9);
    println!(
        "{case:<44} n={n:<6} {:>9.2} ms   {FACTOR}n {:>9.2} ms   ratio {ratio:>5.1}x ({})",
        small.as_secs_f64() * 1e3,
        large.as_secs_f64() * 1e3,
        if ratio <= TARGET_RATIO { "met" } else { "MISSED" }
    );
}

/// Whether `case` is selected by `--case TEXT` (every case without it).
fn selected(case: &str) -> bool {
    let arguments: Vec<String> = std::env::args().collect();
    match arguments.iter().position(|argument| argument == "--case") {
        Some(at) => arguments.get(at + 1).is_some_and(|text| case.contains(text.as_str())),
        None => true,
    }
}

fn self_check(case: &str, format: Format, make: fn(usize) -> String, n: usize) {
    if !selected(case) {
        return;
    }
    let (small, large) = (SchemaText::new(make(n)), SchemaText::new(make(FACTOR * n)));
    let run = |schema: &SchemaText| {
        // A hostile text arrives once: each run compiles it, as its first sight does.
        protobuf::cache::clear();
        let _ = check(format, Mode::Full, schema, std::slice::from_ref(schema));
    };
    let (small_time, large_time) = timed_in_turn(|| run(&small), || run(&large));
    report(case, n, small_time, large_time);
}

fn subject(name: String) -> SubjectName {
    SubjectName::new(name).expect("a subject name")
}

fn reference(name: String, subject_name: String) -> SchemaReference {
    SchemaReference {
        name,
        subject: subject(subject_name),
        version: Version::FIRST,
    }
}

async fn registry() -> (tempfile::TempDir, EmbeddedRegistry) {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let store = SqliteStore::open(&folder.path().join("registry.db")).expect("the store opens");
    let registry = EmbeddedRegistry::open(Arc::new(store), Checker::default())
        .await
        .expect("the registry opens");
    (folder, registry)
}

async fn register(registry: &EmbeddedRegistry, name: String, text: String, references: Vec<SchemaReference>) {
    let schema = NewSchema {
        contract: Default::default(),
        format: Format::Avro,
        text,
        references,
    };
    registry
        .register(&subject(name), &schema, RegisterOptions::default())
        .await
        .expect("the registration succeeds");
}

/// Registers a reference DAG of `levels` levels (two records per level,
/// each with a field of each record of the level below) and returns how
/// long the top level's registrations took.
async fn reference_dag(levels: usize) -> Duration {
    let (_folder, registry) = registry().await;
    for side in ["A", "B"] {
        let text = format!(r#"{{"type":"record","name":"{side}0","fields":[{{"name":"x","type":"long"}}]}}"#);
        register(&registry, format!("{side}0"), text, Vec::new()).await;
    }
    let mut top = Duration::ZERO;
    for level in 1..=levels {
        let below = level - 1;
        for side in ["A", "B"] {
            let text = format!(
                r#"{{"type":"record","name":"{side}{level}","fields":[{{"name":"a","type":"A{below}"}},{{"name":"b","type":"B{below}"}}]}}"#
            );
            let references = vec![
                reference(format!("A{below}"), format!("A{below}")),
                reference(format!("B{below}"), format!("B{below}")),
            ];
            let started = Instant::now();
            register(&registry, format!("{side}{level}"), text, references).await;
            if level == levels {
                top += started.elapsed();
            }
        }
    }
    top
}

/// Registers `count` records, then one with a field of each, and returns
/// how long that last registration took.
async fn many_references(count: usize) -> Duration {
    let (_folder, registry) = registry().await;
    for index in 0..count {
        let text = format!(r#"{{"type":"record","name":"T{index}","fields":[{{"name":"x","type":"long"}}]}}"#);
        register(&registry, format!("t{index}"), text, Vec::new()).await;
    }
    let fields: Vec<String> = (0..count)
        .map(|index| format!(r#"{{"name":"f{index}","type":"T{index}"}}"#))
        .collect();
    let text = format!(r#"{{"type":"record","name":"Wide","fields":[{}]}}"#, fields.join(","));
    let references = (0..count)
        .map(|index| reference(format!("T{index}"), format!("t{index}")))
        .collect();
    let started = Instant::now();
    register(&registry, "wide".to_owned(), text, references).await;
    started.elapsed()
}

/// The process's peak resident memory (VmHWM), in MiB, after `reset_peak`.
fn peak_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(f64::NAN);
    kib / 1024.0
}

/// Starts the peak over from the current resident memory (Linux).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A policy whose only rule is the CEL expression `expression`.
fn cel_policy(expression: &str) -> SchemaPolicySpec {
    serde_json::from_value(serde_json::json!({
        "rules": {"validations": [{"expression": expression}]},
        "validationActions": ["Deny"],
    }))
    .expect("a policy")
}

/// Compiles `expression` into a policy and judges a Schema whose summary has
/// `fields` fields; prints the time and the peak memory of both, and what
/// the policy said.
fn cel_case(case: &str, expression: &str, fields: usize) {
    if !selected(case) {
        return;
    }
    let summary = SchemaSummary {
        fields: (0..fields)
            .map(|index| FieldSummary {
                record: "com.acme.Wide".to_owned(),
                name: format!("f{index}"),
                documented: true,
            })
            .collect(),
        ..SchemaSummary::default()
    };
    let object = serde_json::json!({});
    reset_peak();
    let before = peak_mib();
    let started = Instant::now();
    let spec = cel_policy(expression);
    let policies = PolicySet::compile([("hostile", &spec)]);
    let outcome = match policies.invalid().first() {
        Some(invalid) => format!("invalid: {}", invalid.problems.join("; ")),
        None => {
            let proposal = Proposal {
                summary: Some(&summary),
                object: Some(&object),
                ..Proposal::new(Target::Schema)
            };
            let verdict = policies.evaluate(&proposal);
            // The problem quotes the expression first; what matters is why.
            verdict.violations.first().map_or_else(
                || "holds".to_owned(),
                |violation| match violation.problem.split_once("cannot be evaluated: ") {
                    Some((_, why)) => why.to_owned(),
                    None => violation.problem.clone(),
                },
            )
        }
    };
    let elapsed = started.elapsed();
    println!(
        "{case:<44} {:>9.2} ms   peak +{:.1} MiB   {}",
        elapsed.as_secs_f64() * 1e3,
        peak_mib() - before,
        outcome.chars().take(120).collect::<String>()
    );
}

/// A `schemaops registry` child process, killed when dropped.
struct RegistryChild {
    child: std::process::Child,
    url: String,
    _data: tempfile::TempDir,
}

impl RegistryChild {
    fn start() -> Self {
        let data = tempfile::tempdir().expect("a temporary folder");
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_schemaops"))
            .args(["registry", "--listen", "127.0.0.1:0", "--data"])
            .arg(data.path())
            // Time is measured here, not limited: a debug build parses 8 MB for seconds.
            .args(["--max-check-seconds", "600"])
            .env("RUST_LOG", "error")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the schemaops binary starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout is piped"))
            .read_line(&mut line)
            .expect("the registry prints its address");
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .expect("an address")
            .to_owned();
        Self {
            child,
            url: format!("http://{address}"),
            _data: data,
        }
    }

    /// The child's peak resident memory in MiB since the last reset.
    fn peak_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let kib: f64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(f64::NAN);
        kib / 1024.0
    }

    fn reset_peak(&self) {
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5");
    }
}

impl Drop for RegistryChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// POSTs `schema` (Protobuf) to `path`; the status.
async fn post_protobuf(client: &reqwest::Client, url: String, schema: &str) -> u16 {
    client
        .post(url)
        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
        .json(&serde_json::json!({"schemaType": "PROTOBUF", "schema": schema}))
        .send()
        .await
        .map_or_else(
            |error| {
                eprintln!("a POST failed: {error}");
                0
            },
            |response| response.status().as_u16(),
        )
}

/// One 8 MB Protobuf compatibility POST against a registered copy of
/// itself, then `concurrent` at once: time, the registry's peak memory,
/// and the answers by status.
fn protobuf_posts(runtime: &tokio::runtime::Runtime, concurrent: usize) {
    let one = "registry: one 8 MB Protobuf compatibility POST";
    let many = "registry: concurrent 8 MB Protobuf compatibility POSTs";
    if !selected(one) && !selected(many) {
        return;
    }
    let registry = RegistryChild::start();
    let client = http::http_client();
    let schema = large_proto(7_600_000);
    let check_url = format!("{}/compatibility/subjects/big-value/versions", registry.url);
    let registered = runtime.block_on(post_protobuf(
        &client,
        format!("{}/subjects/big-value/versions", registry.url),
        &schema,
    ));
    assert_eq!(registered, 200, "the 8 MB schema registers");
    if selected(one) {
        registry.reset_peak();
        let started = Instant::now();
        let status = runtime.block_on(post_protobuf(&client, check_url.clone(), &schema));
        println!(
            "{one:<44} {:>9.2} ms   peak {:.0} MiB   status {status}",
            started.elapsed().as_secs_f64() * 1e3,
            registry.peak_mib()
        );
    }
    if selected(many) {
        registry.reset_peak();
        let started = Instant::now();
        let statuses = runtime.block_on(futures::future::join_all(
            (0..concurrent).map(|_| post_protobuf(&client, check_url.clone(), &schema)),
        ));
        let mut answers = std::collections::BTreeMap::new();
        for status in statuses {
            *answers.entry(status).or_insert(0) += 1;
        }
        println!(
            "{many:<44} {:>9.2} ms   peak {:.0} MiB   {concurrent} sent, answered (status: count) {answers:?}",
            started.elapsed().as_secs_f64() * 1e3,
            registry.peak_mib(),
        );
    }
}

/// The diff and the matrices of three versions that each change 10,000
/// properties 60 objects deep, through a registry process: time, answer
/// size and the process's peak memory per request.
fn deep_answers(runtime: &tokio::runtime::Runtime) {
    let case = "registry: diff and matrix of 10,000 deep changes";
    if !selected(case) {
        return;
    }
    let registry = RegistryChild::start();
    let client = http::http_client();
    runtime.block_on(async {
        let put = client
            .put(format!("{}/config/deep", registry.url))
            .json(&serde_json::json!({"compatibility": "NONE"}))
            .send()
            .await
            .expect("the registry answers");
        assert!(put.status().is_success());
        for as_string in [false, true, false] {
            let posted = client
                .post(format!("{}/subjects/deep/versions", registry.url))
                .json(&serde_json::json!({"schemaType": "JSON", "schema": deep_changes(10_000, 60, as_string)}))
                .send()
                .await
                .expect("the registry answers");
            assert!(posted.status().is_success(), "a deep version registers");
        }
    });
    let draft = serde_json::json!({"schemaType": "JSON", "schema": deep_changes(10_000, 60, true)});
    for (label, request) in [
        (
            "GET …/versions/latest/matrix",
            client.get(format!(
                "{}/compatibility/subjects/deep/versions/latest/matrix",
                registry.url
            )),
        ),
        (
            "GET …/versions/1/diff/2",
            client.get(format!("{}/subjects/deep/versions/1/diff/2", registry.url)),
        ),
        (
            "POST draft matrix against 3",
            client
                .post(format!("{}/compatibility/subjects/deep/matrix", registry.url))
                .json(&draft),
        ),
    ] {
        registry.reset_peak();
        let started = Instant::now();
        let (status, bytes) = runtime.block_on(async {
            let response = request.send().await.expect("the registry answers");
            let status = response.status().as_u16();
            (status, response.bytes().await.map_or(0, |body| body.len()))
        });
        println!(
            "{case}: {label:<30} {:>9.2} ms   {bytes:>9} bytes   peak {:.0} MiB   status {status}",
            started.elapsed().as_secs_f64() * 1e3,
            registry.peak_mib()
        );
    }
}

/// A registry of `versions` versions for the page cases: half in the
/// subject `long-value`, the rest in subjects of 100 versions.
async fn registry_of_versions(versions: usize) -> (tempfile::TempDir, EmbeddedRegistry) {
    // On tmpfs when there is one: each registration is a synchronous commit.
    let parent = if std::path::Path::new("/dev/shm").is_dir() {
        "/dev/shm"
    } else {
        "/tmp"
    };
    let folder = tempfile::tempdir_in(parent).expect("a temporary folder");
    let store = SqliteStore::open(&folder.path().join("registry.db")).expect("the store opens");
    let registry = EmbeddedRegistry::open(Arc::new(store), Checker::default())
        .await
        .expect("the registry opens");
    registry
        .set_compatibility(None, Mode::None)
        .await
        .expect("the level is set");
    let long = versions / 2;
    for index in 0..versions {
        let (name, record) = if index < long {
            ("long-value".to_owned(), "Long".to_owned())
        } else {
            let subject = (index - long) / 100;
            (format!("s{subject:04}-value"), format!("R{subject}"))
        };
        let text =
            format!(r#"{{"type":"record","name":"{record}","doc":"{index}","fields":[{{"name":"f","type":"long"}}]}}"#);
        register(&registry, name, text, Vec::new()).await;
    }
    (folder, registry)
}

/// Times each page on a registry of `versions` versions (see [`registry_of_versions`]).
fn page_cases(runtime: &tokio::runtime::Runtime, versions: usize) {
    use tower::ServiceExt as _;
    let case = "pages at 50,000 versions";
    if !selected(case) {
        return;
    }
    let built = Instant::now();
    let (_folder, registry) = runtime.block_on(registry_of_versions(versions));
    println!(
        "{case}: {versions} versions registered in {:.1} s",
        built.elapsed().as_secs_f64()
    );
    let state = schemaops::registry::api::ApiState {
        registry: Arc::new(registry),
        body_limit: 1 << 20,
        auth: None,
        policies: None,
        admission: None,
    };
    let app = schemaops::ui::router(state, None);
    for path in [
        "/ui/",
        "/ui/subjects/long-value",
        "/ui/subjects/long-value/diff",
        "/ui/subjects/long-value/matrix",
    ] {
        reset_peak();
        let before = peak_mib();
        let started = Instant::now();
        let bytes = runtime.block_on(async {
            let request = axum::http::Request::get(path)
                .body(axum::body::Body::empty())
                .expect("a request");
            let response = app.clone().oneshot(request).await.expect("an answer");
            assert_eq!(response.status(), 200, "{path}");
            http_body_util::BodyExt::collect(response.into_body())
                .await
                .expect("the body")
                .to_bytes()
                .len()
        });
        println!(
            "  GET {path:<36} {:>9.2} ms   {:>8} bytes   peak +{:.1} MiB",
            started.elapsed().as_secs_f64() * 1e3,
            bytes,
            peak_mib() - before
        );
    }
}

fn main() {
    println!("growth from n to {FACTOR}n, measured in this run (linear {FACTOR}x; target at most {TARGET_RATIO}x):");
    self_check(
        "Avro enum symbols, FULL against itself",
        Format::Avro,
        enum_symbols,
        10_000,
    );
    self_check(
        "Avro union of named records, FULL",
        Format::Avro,
        union_of_records,
        1_000,
    );
    self_check("Protobuf oneofs, FULL against itself", Format::Protobuf, oneofs, 2_000);
    // 510 parts is the longest package name allowed (1,024 bytes).
    self_check("Protobuf package parts", Format::Protobuf, package, 51);
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    // References may nest 32 levels deep.
    let levels = 3;
    let dag = "reference DAG, top level's registrations";
    if selected(dag) {
        let small = runtime.block_on(reference_dag(levels));
        let large = runtime.block_on(reference_dag(FACTOR * levels));
        report(dag, levels, small, large);
    }
    let count = 200;
    let many = "one schema referring to n others";
    if selected(many) {
        let small = runtime.block_on(many_references(count));
        let large = runtime.block_on(many_references(FACTOR * count));
        report(many, count, small, large);
    }
    println!(
        "CEL validations (issue 37): each ends at its limit, with the time to the verdict and the peak memory it added:"
    );
    cel_case(
        "CEL chain of 2,046 `+` terms (4 KiB)",
        &(vec!["1"; 2046].join("+") + " > 0"),
        0,
    );
    cel_case(
        "CEL chain of 2,040 `.b` selections (4 KiB)",
        &("object".to_owned() + &".b".repeat(2040)),
        0,
    );
    let ten = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]";
    let nested = (1..=7).fold("true".to_owned(), |inner, level| {
        format!("{ten}.all(x{level}, {inner})")
    });
    cel_case("CEL all() nested 7 deep over 10 (10^7 steps)", &nested, 0);
    let unique = "schema.fields.all(f, schema.fields.filter(g, g.name == f.name).size() == 1)";
    cel_case("CEL field uniqueness, 200 fields", unique, 200);
    cel_case("CEL field uniqueness, 2,000 fields", unique, 2_000);
    cel_case("CEL field uniqueness, 20,000 fields", unique, 20_000);
    println!("Protobuf through the registry (issue 37, items 1 and 5), with the registry process's peak memory:");
    protobuf_posts(&runtime, 4);
    deep_answers(&runtime);
    println!("The pages (issue 37, item 2):");
    page_cases(&runtime, 50_000);
}
