//! The budgets of the registry's heavyweight requests (issue 37, items 1
//! and 5), through HTTP against a `schemaops registry` process: the gate on
//! concurrent checks (429 with Retry-After), the memory estimate refused
//! before the work, the time limit, and a check that stops when its client
//! goes away or the process is told to stop. The memory cases run the
//! process under `ulimit -v`, so a runaway check fails inside it.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::registry::RegistryProcess;
use support::shapes::{deep_changes, large_proto};
use support::{http_client, metric, scrape};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Held by each test while it runs: the long checks measure CPU and time,
/// which other registries checking beside them on a small machine would blur.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The subject whose history makes the long check.
const LONG: &str = "long";

/// Versions of [`LONG`]: the draft matrix against them all takes about 20 s
/// in a debug build (and still seconds in release).
const LONG_VERSIONS: usize = 30;

/// A JSON Schema whose `anyOf` branches are all compared with each other's
/// (a matching of 250 by 250 subschemas: within the step budget, but slow);
/// `variant` makes each version's text its own.
fn many_branches(variant: usize) -> String {
    let branches: Vec<Value> = (0..250)
        .map(|branch| {
            let properties: serde_json::Map<String, Value> = (0..10)
                .map(|property| {
                    let suffix = if branch == 0 && property == 0 {
                        "x".repeat(variant)
                    } else {
                        String::new()
                    };
                    let kind = if (branch + property) % 2 == 0 {
                        "integer"
                    } else {
                        "string"
                    };
                    (format!("p{branch}_{property}{suffix}"), json!({ "type": kind }))
                })
                .collect();
            json!({ "type": "object", "properties": properties })
        })
        .collect();
    json!({ "anyOf": branches }).to_string()
}

async fn post(url: &str, body: Value) -> (u16, Option<String>, Value) {
    let response = http_client()
        .post(url)
        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
        .json(&body)
        .send()
        .await
        .expect("the registry answers");
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|value| value.to_str().unwrap_or_default().to_owned());
    let body = response.json().await.unwrap_or(Value::Null);
    (status, retry_after, body)
}

/// Gives [`LONG`] its versions (compatibility NONE, so each registers).
async fn make_long_history(server: &RegistryProcess) {
    let client = http_client();
    let put = client
        .put(format!("{}/config/{LONG}", server.url))
        .json(&json!({"compatibility": "NONE"}))
        .send()
        .await
        .expect("the registry answers");
    assert_eq!(put.status(), 200);
    for variant in 0..LONG_VERSIONS {
        let (status, _, body) = post(
            &format!("{}/subjects/{LONG}/versions", server.url),
            json!({"schemaType": "JSON", "schema": many_branches(variant)}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
}

/// The draft matrix request against every version of [`LONG`].
fn long_matrix_request() -> Vec<u8> {
    let body = json!({"schemaType": "JSON", "schema": many_branches(LONG_VERSIONS + 1)}).to_string();
    format!(
        "POST /compatibility/subjects/{LONG}/matrix HTTP/1.1\r\nHost: registry\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Sends the long matrix request on a socket of its own, and waits until the
/// gate counts it running.
async fn start_long_check(server: &RegistryProcess) -> TcpStream {
    let address = server.url.strip_prefix("http://").expect("an http URL");
    let mut stream = TcpStream::connect(address).await.expect("the registry accepts");
    stream
        .write_all(&long_matrix_request())
        .await
        .expect("the request is sent");
    wait_for_in_flight(server, 1.0).await;
    stream
}

async fn wait_for_in_flight(server: &RegistryProcess, wanted: f64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let running = metric(&scrape(&server.url).await, "schemaops_registry_checks_in_flight");
        if running == Some(wanted) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "checks in flight stayed {running:?}, not {wanted}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// CPU seconds the process used over the next `window`.
async fn cpu_used(pid: u32, window: Duration) -> f64 {
    fn ticks(pid: u32) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("Linux /proc");
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .expect("a stat line")
            .1
            .split_whitespace()
            .collect();
        // utime and stime, fields 14 and 15 of the line (11 and 12 after the name).
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime")
    }
    // The kernel's clock tick: 100 per second on every Linux this runs on.
    const TICKS_PER_SECOND: f64 = 100.0;
    let before = ticks(pid);
    tokio::time::sleep(window).await;
    (ticks(pid) - before) / TICKS_PER_SECOND
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_gate_answers_429_with_retry_after_and_counts_it() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let data = tempfile::tempdir().expect("a temporary folder");
    let server = RegistryProcess::start_with(
        data.path(),
        &["--max-concurrent-checks", "1", "--check-queue-millis", "200"],
    )
    .await;
    make_long_history(&server).await;
    let _long = start_long_check(&server).await;

    let started = Instant::now();
    let (status, retry_after, body) = post(
        &format!("{}/compatibility/subjects/{LONG}/versions", server.url),
        json!({"schemaType": "JSON", "schema": "{\"type\": \"string\"}"}),
    )
    .await;
    assert_eq!(status, 429, "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused after the queue wait"
    );
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(body["error_code"], 42901);
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("--max-concurrent-checks"),
        "{body}"
    );
    // Requests that check nothing pass the gate by.
    let listed = http_client()
        .get(format!("{}/subjects", server.url))
        .send()
        .await
        .expect("the registry answers");
    assert_eq!(listed.status(), 200);
    let scraped = scrape(&server.url).await;
    assert_eq!(metric(&scraped, "schemaops_registry_checks_rejected_total"), Some(1.0));
    assert_eq!(metric(&scraped, "schemaops_registry_checks_in_flight"), Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_stops_when_its_client_goes_away() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let data = tempfile::tempdir().expect("a temporary folder");
    let server = RegistryProcess::start_with(data.path(), &[]).await;
    make_long_history(&server).await;
    let long = start_long_check(&server).await;
    // Past reading the versions, the comparisons keep a CPU busy (as much of
    // one as a machine running other tests gives).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let busy = cpu_used(server.pid(), Duration::from_secs(1)).await;
    assert!(busy > 0.25, "the long check keeps a CPU busy (used {busy:.2} s in 1 s)");

    drop(long);
    wait_for_in_flight(&server, 0.0).await;
    // The blocking thread stops at its next checkpoint: within a second the
    // process is idle, where the whole matrix would take many more.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = cpu_used(server.pid(), Duration::from_secs(1)).await;
    assert!(
        after < 0.1,
        "the check went on after its client left ({after:.2} s of CPU in 1 s)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_long_check_exits_promptly() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let data = tempfile::tempdir().expect("a temporary folder");
    let mut server = RegistryProcess::start_with(data.path(), &[]).await;
    make_long_history(&server).await;
    let _long = start_long_check(&server).await;
    let started = Instant::now();
    let code = server.terminate(Duration::from_secs(5));
    assert_eq!(code, Some(0), "the registry exits cleanly within 5 s of SIGTERM");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_over_its_time_limit_is_refused_naming_the_limit() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let data = tempfile::tempdir().expect("a temporary folder");
    let server = RegistryProcess::start_with(data.path(), &["--max-check-seconds", "1"]).await;
    make_long_history(&server).await;
    let started = Instant::now();
    let (status, _, body) = post(
        &format!("{}/compatibility/subjects/{LONG}/matrix", server.url),
        json!({"schemaType": "JSON", "schema": many_branches(LONG_VERSIONS + 1)}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error_code"], 42201);
    assert_eq!(
        body["message"],
        "the check ran longer than its limit of 1 s (--max-check-seconds)"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "stopped at the limit");
}

/// Address space for the memory cases: 1.5 GiB, less than an 8 MB Protobuf
/// check used to take (1.05 GB resident, more mapped).
const ADDRESS_SPACE_KIB: u64 = 1536 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_estimated_over_the_memory_budget_is_refused_before_it_runs() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let data = tempfile::tempdir().expect("a temporary folder");
    let server =
        RegistryProcess::start_limited(data.path(), &["--max-check-memory-mib", "64"], ADDRESS_SPACE_KIB).await;
    let proto = large_proto(4 * 1024 * 1024);
    let (status, _, body) = post(
        &format!("{}/compatibility/subjects/orders-value/versions", server.url),
        json!({"schemaType": "PROTOBUF", "schema": proto}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error_code"], 42209);
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("this check would need about ")
            && message.ends_with("MiB of memory; the limit is 64 MiB (--max-check-memory-mib)"),
        "{message}"
    );
    // A small check still runs within the budget.
    let (status, _, body) = post(
        &format!("{}/compatibility/subjects/orders-value/versions", server.url),
        json!({"schemaType": "PROTOBUF", "schema": large_proto(10_000)}),
    )
    .await;
    assert_eq!((status, &body["is_compatible"]), (200, &json!(true)), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_8_mb_protobuf_registration_and_check_fit_in_a_limited_address_space() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let data = tempfile::tempdir().expect("a temporary folder");
    let server = RegistryProcess::start_limited(data.path(), &[], ADDRESS_SPACE_KIB).await;
    let proto = large_proto(7_600_000);
    let (status, _, body) = post(
        &format!("{}/subjects/big-value/versions", server.url),
        json!({"schemaType": "PROTOBUF", "schema": proto}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = post(
        &format!("{}/compatibility/subjects/big-value/versions?verbose=true", server.url),
        json!({"schemaType": "PROTOBUF", "schema": proto}),
    )
    .await;
    assert_eq!((status, &body["is_compatible"]), (200, &json!(true)), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_and_matrix_answers_of_ten_thousand_deep_changes_stay_bounded() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let data = tempfile::tempdir().expect("a temporary folder");
    let server = RegistryProcess::start_limited(data.path(), &[], ADDRESS_SPACE_KIB).await;
    let client = http_client();
    let put = client
        .put(format!("{}/config/deep", server.url))
        .json(&json!({"compatibility": "NONE"}))
        .send()
        .await
        .expect("the registry answers");
    assert_eq!(put.status(), 200);
    let versions = [false, true, false];
    for as_string in versions {
        let (status, _, body) = post(
            &format!("{}/subjects/deep/versions", server.url),
            json!({"schemaType": "JSON", "schema": deep_changes(10_000, 60, as_string)}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    let read = |response: reqwest::Response| async move {
        let status = response.status().as_u16();
        let bytes = response.bytes().await.expect("the answer is read");
        (status, bytes)
    };
    let matrix = read(
        client
            .get(format!(
                "{}/compatibility/subjects/deep/versions/latest/matrix",
                server.url
            ))
            .send()
            .await
            .expect("the registry answers"),
    )
    .await;
    let diff = read(
        client
            .get(format!("{}/subjects/deep/versions/1/diff/2", server.url))
            .send()
            .await
            .expect("the registry answers"),
    )
    .await;
    let draft = read(
        client
            .post(format!("{}/compatibility/subjects/deep/matrix", server.url))
            .header("Content-Type", "application/vnd.schemaregistry.v1+json")
            .json(&json!({"schemaType": "JSON", "schema": deep_changes(10_000, 60, true)}))
            .send()
            .await
            .expect("the registry answers"),
    )
    .await;
    for (what, (status, bytes)) in [("matrix", matrix), ("diff", diff), ("draft matrix", draft)] {
        assert_eq!(
            status,
            200,
            "{what}: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(400)])
        );
        eprintln!("the {what} answer: {} bytes", bytes.len());
        assert!(
            bytes.len() < 8 * 1024 * 1024,
            "the {what} answer is {} bytes for 10,000 changes",
            bytes.len()
        );
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            text.contains("\"incompatibilitiesTotal\"") || text.contains("\"changesTotal\""),
            "the {what} answer says how many there were in all"
        );
    }
}
