//! The embedded registry under load on loopback (issues 5 and 20): fills it
//! with 10,000 versions of 100 subjects from 64 concurrent clients (durable
//! registrations per second on the store used), then measures two lookups
//! with `wrk` (64 connections) against schemaops and against nginx serving
//! the same bodies as static files: `GET /schemas/ids/{id}` (random IDs) and
//! `GET /subjects/{s}/versions/latest` (random subjects). It prints each
//! endpoint's requests/s and p99 on both servers, the ratio schemaops/nginx
//! against the target (at least 1.0: met or MISSED), and schemaops' peak RSS.
//!
//! wrk, nginx and schemaops share the machine's cores, so the ratio is the
//! figure that counts: both sides of it are measured in the same run.
//!
//! Needs `wrk` and `nginx` (Debian packages); says so and stops without them.
//! `cargo bench --bench registry [-- --versions N --seconds S --store DSN]`:
//! with `--store postgres://…` (an empty database) the registry runs on
//! PostgreSQL instead of SQLite, so the two can be compared. A throwaway
//! server does, started as `tests/support/postgres.rs` starts one (as the
//! `postgres` user: `initdb --auth trust`, `pg_ctl start` on a free port,
//! then `CREATE DATABASE`). README.md's benchmark section has the figures.

#[path = "../tests/support/http.rs"]
mod http;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CONNECTIONS: usize = 64;
const SUBJECTS: usize = 100;

struct Options {
    versions: usize,
    seconds: u64,
    /// A PostgreSQL DSN, when the registry runs on PostgreSQL.
    store: Option<String>,
}

fn options() -> Options {
    let mut options = Options {
        versions: 10_000,
        seconds: 10,
        store: None,
    };
    let args: Vec<String> = std::env::args().collect();
    for pair in args.windows(2) {
        match pair[0].as_str() {
            "--versions" => options.versions = pair[1].parse().expect("--versions takes a number"),
            "--seconds" => options.seconds = pair[1].parse().expect("--seconds takes a number"),
            "--store" => options.store = Some(pair[1].clone()),
            _ => {}
        }
    }
    options
}

/// A child process stopped on drop: SIGTERM first, so nginx's master takes
/// its workers down with it, then SIGKILL if it lingers.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_registry(data: &Path, store: Option<&str>) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["registry", "--listen", "127.0.0.1:0", "--data"])
        .arg(data)
        .args(store.map(|dsn| ["--store", dsn]).into_iter().flatten())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("schemaops starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("stdout");
    let address = line
        .trim()
        .strip_prefix("listening on ")
        .expect("the address line")
        .to_owned();
    (Running(child), format!("http://{address}"))
}

fn schema(subject: usize, version: usize) -> String {
    format!(
        r#"{{"type":"record","name":"Event{subject}","namespace":"bench","doc":"version {version}","fields":[
            {{"name":"id","type":"long"}},{{"name":"at","type":{{"type":"long","logicalType":"timestamp-millis"}}}},
            {{"name":"kind","type":{{"type":"enum","name":"Kind","symbols":["A","B","C"]}}}},
            {{"name":"note","type":["null","string"],"default":null}}]}}"#
    )
}

/// Registers `versions` schemas from `CONNECTIONS` concurrent clients; returns the seconds taken.
fn fill(url: &str, versions: usize) -> f64 {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let client = http::http_client();
        let started = Instant::now();
        let per_subject = versions.div_ceil(SUBJECTS);
        let mut tasks = Vec::new();
        for worker in 0..CONNECTIONS {
            let client = client.clone();
            let url = url.to_owned();
            tasks.push(tokio::spawn(async move {
                // Each worker owns some subjects, so a subject's versions arrive in order.
                for subject in (worker..SUBJECTS).step_by(CONNECTIONS) {
                    for version in 1..=per_subject {
                        let body = serde_json::json!({ "schema": schema(subject, version) });
                        let response = client
                            .post(format!("{url}/subjects/bench-{subject}-value/versions"))
                            .json(&body)
                            .send()
                            .await
                            .expect("the registry answers");
                        assert!(
                            response.status().is_success(),
                            "registration failed: {}",
                            response.status()
                        );
                    }
                }
            }));
        }
        for task in tasks {
            task.await.expect("a worker");
        }
        started.elapsed().as_secs_f64()
    })
}

struct Load {
    requests_per_second: f64,
    p99_ms: f64,
}

/// An endpoint measured: its name, and the paths `wrk` picks from at random.
struct Endpoint {
    name: &'static str,
    /// A Lua expression for a random path.
    lua_path: String,
    /// Every path it may pick, for the nginx mirror.
    paths: Vec<String>,
}

fn endpoints(ids: usize, subjects: usize) -> [Endpoint; 2] {
    [
        Endpoint {
            name: "GET /schemas/ids/{id} (random IDs)",
            lua_path: format!("\"/schemas/ids/\" .. math.random(1, {ids})"),
            paths: (1..=ids).map(|id| format!("/schemas/ids/{id}")).collect(),
        },
        Endpoint {
            name: "GET /subjects/{s}/versions/latest (random subjects)",
            lua_path: format!(
                "\"/subjects/bench-\" .. math.random(0, {}) .. \"-value/versions/latest\"",
                subjects - 1
            ),
            paths: (0..subjects)
                .map(|subject| format!("/subjects/bench-{subject}-value/versions/latest"))
                .collect(),
        },
    ]
}

fn wrk(url: &str, endpoint: &Endpoint, seconds: u64, script_dir: &Path) -> Load {
    let script = script_dir.join("random-path.lua");
    std::fs::write(
        &script,
        format!(
            "request = function() return wrk.format(\"GET\", {}) end\n",
            endpoint.lua_path
        ),
    )
    .expect("the script is written");
    let output = Command::new("wrk")
        .args([
            "-t2",
            &format!("-c{CONNECTIONS}"),
            &format!("-d{seconds}s"),
            "--latency",
            "-s",
        ])
        .arg(&script)
        .arg(url)
        .output()
        .expect("wrk runs");
    let text = String::from_utf8_lossy(&output.stdout);
    let requests_per_second = text
        .lines()
        .find_map(|line| line.strip_prefix("Requests/sec:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("wrk printed no rate:\n{text}"));
    let p99 = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("99%"))
        .map(str::trim)
        .unwrap_or_else(|| panic!("wrk printed no p99:\n{text}"));
    if text.contains("Non-2xx") {
        panic!("wrk saw errors:\n{text}");
    }
    Load {
        requests_per_second,
        p99_ms: millis(p99),
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

/// nginx serving `root` on a free port; returns the process and its URL.
fn start_nginx(root: &Path, prefix: &Path) -> (Running, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let config = prefix.join("nginx.conf");
    let mut file = std::fs::File::create(&config).expect("the config is written");
    write!(
        file,
        "worker_processes auto; pid {prefix}/nginx.pid; error_log {prefix}/error.log;
events {{ worker_connections 1024; }}
http {{ access_log off; default_type application/vnd.schemaregistry.v1+json;
  client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
  server {{ listen 127.0.0.1:{port}; root {root}; }} }}
",
        prefix = prefix.display(),
        root = root.display()
    )
    .expect("the config is written");
    let child = Command::new("nginx")
        .args(["-e", "stderr", "-p"])
        .arg(prefix)
        .arg("-c")
        .arg(&config)
        .args(["-g", "daemon off;"])
        .spawn()
        .expect("nginx starts");
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (Running(child), url)
}

/// The same bodies schemaops serves at `paths`, as files nginx can serve.
fn mirror(url: &str, paths: &[String], root: &Path) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let client = http::http_client();
        for path in paths {
            let response = client
                .get(format!("{url}{path}"))
                .send()
                .await
                .expect("the registry answers");
            assert!(response.status().is_success(), "{path}: {}", response.status());
            let body = response.bytes().await.expect("a body");
            let file = root.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(file.parent().expect("a folder")).expect("the folder is created");
            std::fs::write(file, body).expect("the file is written");
        }
    });
}

fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn main() {
    if !have("wrk") || !have("nginx") {
        println!("registry bench skipped: needs `wrk` and `nginx` (apt-get install wrk nginx-light)");
        return;
    }
    let options = options();
    let work = tempfile::tempdir().expect("a temp folder");
    let (registry, url) = start_registry(&work.path().join("data"), options.store.as_deref());
    let seconds = fill(&url, options.versions);
    let ids = options.versions;
    let store = match options.store {
        Some(_) => "PostgreSQL, one transaction per registration",
        None => "SQLite, WAL, synchronous=FULL",
    };
    println!(
        "registrations: {ids} versions in {seconds:.1} s = {:.0}/s (durable: {store}; {CONNECTIONS} clients)",
        ids as f64 / seconds
    );
    let endpoints = endpoints(ids, SUBJECTS);
    let ours: Vec<Load> = endpoints
        .iter()
        .map(|endpoint| wrk(&url, endpoint, options.seconds, work.path()))
        .collect();
    let root = work.path().join("static");
    for endpoint in &endpoints {
        mirror(&url, &endpoint.paths, &root);
    }
    let prefix = work.path().join("nginx");
    std::fs::create_dir_all(&prefix).expect("the nginx folder is created");
    let rss = peak_rss_mib(registry.0.id());
    drop(registry);
    let theirs: Vec<Load> = {
        let (_nginx, nginx_url) = start_nginx(&root, &prefix);
        endpoints
            .iter()
            .map(|endpoint| wrk(&nginx_url, endpoint, options.seconds, work.path()))
            .collect()
    };
    for ((endpoint, ours), theirs) in endpoints.iter().zip(&ours).zip(&theirs) {
        let ratio = ours.requests_per_second / theirs.requests_per_second;
        println!("{} ({CONNECTIONS} connections):", endpoint.name);
        println!(
            "  schemaops {:.0} req/s, p99 {:.2} ms; nginx (same bodies as static files) {:.0} req/s, p99 {:.2} ms",
            ours.requests_per_second, ours.p99_ms, theirs.requests_per_second, theirs.p99_ms
        );
        println!(
            "  ratio schemaops/nginx: {ratio:.2} (target: at least 1.0: {})",
            if ratio >= 1.0 { "met" } else { "MISSED" }
        );
    }
    println!("schemaops peak RSS: {rss:.1} MiB at {ids} versions (target: under 64 MiB)");
}
