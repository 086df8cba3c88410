//! Drop-in fidelity with Confluent Schema Registry (issue 16): the request
//! and expected-answer pairs of `tests/rest_fidelity/cases.jsonl`, replayed
//! in order against a real `schemaops registry` on each store (SQLite, and
//! PostgreSQL when its binaries are installed; required in CI).
//!
//! One line per case: `method`, `path`, optional `headers` (an empty value
//! removes the header), `body` (JSON, sent as its text; `encoding` may say
//! `utf-16` to send it as UTF-16 with a byte-order mark), and what must come
//! back: `status`, and optionally `error_code`, `message_starts_with`,
//! `content_type`, `json` (JSON pointers into the answer and the value
//! each must have), `text` (the whole body, for raw `/schema` answers) and
//! `json_same` (JSON pointers whose value must equal a remembered one). A
//! case may rely on the state earlier cases left, and `remember` values of
//! its answer (name to JSON pointer) for later cases: `{name}` in a later
//! path is replaced by the value, and `json_same` compares with it.

mod support;

use serde_json::Value;
use support::registry::RegistryProcess;

const CASES: &str = include_str!("rest_fidelity/cases.jsonl");
/// The data-contract surface (issue 19): metadata, rule sets, GUIDs,
/// compatibility groups and the `/config` settings.
const CONTRACT_CASES: &str = include_str!("rest_fidelity/contracts.jsonl");

#[derive(Debug, serde::Deserialize)]
struct Case {
    case: String,
    method: String,
    path: String,
    #[serde(default)]
    headers: serde_json::Map<String, Value>,
    #[serde(default)]
    body: Option<Value>,
    #[serde(default)]
    encoding: Option<String>,
    status: u16,
    #[serde(default)]
    error_code: Option<u64>,
    #[serde(default)]
    message_starts_with: Option<String>,
    #[serde(default)]
    content_type: Option<String>,
    #[serde(default)]
    json: serde_json::Map<String, Value>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    remember: serde_json::Map<String, Value>,
    #[serde(default)]
    json_same: serde_json::Map<String, Value>,
}

fn cases(file: &str) -> Vec<Case> {
    file.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(number, line)| {
            serde_json::from_str(line).unwrap_or_else(|error| panic!("cases.jsonl line {}: {error}", number + 1))
        })
        .collect()
}

fn encode(text: &str, encoding: Option<&str>) -> Vec<u8> {
    match encoding {
        None => text.as_bytes().to_vec(),
        Some("utf-16") => {
            let mut bytes = vec![0xFE, 0xFF];
            for unit in text.encode_utf16() {
                bytes.extend_from_slice(&unit.to_be_bytes());
            }
            bytes
        }
        Some(other) => panic!("unknown encoding {other}"),
    }
}

/// Replays every case of `file` against the registry at `url`; returns the failures.
async fn replay(url: &str, file: &str) -> Vec<String> {
    let client = support::http_client();
    let mut failures = Vec::new();
    let mut remembered: std::collections::HashMap<String, Value> = std::collections::HashMap::new();
    for case in cases(file) {
        let method = reqwest::Method::from_bytes(case.method.as_bytes()).unwrap();
        let mut path = case.path.clone();
        for (name, value) in &remembered {
            let value = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
            path = path.replace(&format!("{{{name}}}"), &value);
        }
        let mut request = client.request(method, format!("{url}{path}"));
        let mut content_type = Some("application/vnd.schemaregistry.v1+json".to_owned());
        for (name, value) in &case.headers {
            let value = value.as_str().unwrap_or_default();
            if name.eq_ignore_ascii_case("content-type") {
                content_type = (!value.is_empty()).then(|| value.to_owned());
            } else {
                request = request.header(name.as_str(), value);
            }
        }
        if let Some(body) = &case.body {
            if let Some(content_type) = &content_type {
                request = request.header("content-type", content_type.as_str());
            }
            request = request.body(encode(&body.to_string(), case.encoding.as_deref()));
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|error| panic!("{}: {error}", case.case));
        let status = response.status().as_u16();
        let got_type = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let text = response.text().await.unwrap_or_default();
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let mut problems = Vec::new();
        // Every answer is one the OpenAPI document lists.
        if let Err(problem) =
            support::openapi::check(&case.method, &case.path, status, Some(&got_type), text.as_bytes())
        {
            problems.push(format!("not in the OpenAPI document: {problem}"));
        }
        if status != case.status {
            problems.push(format!("status {status}, expected {}", case.status));
        }
        if let Some(code) = case.error_code
            && body["error_code"].as_u64() != Some(code)
        {
            problems.push(format!("error_code {}, expected {code}", body["error_code"]));
        }
        if let Some(prefix) = &case.message_starts_with
            && !body["message"]
                .as_str()
                .is_some_and(|message| message.starts_with(prefix.as_str()))
        {
            problems.push(format!(
                "message {}, expected it to start with {prefix:?}",
                body["message"]
            ));
        }
        if let Some(expected) = &case.content_type
            && got_type.split(';').next().map(str::trim) != Some(expected.as_str())
        {
            problems.push(format!("content type {got_type:?}, expected {expected:?}"));
        }
        for (pointer, expected) in &case.json {
            let got = body.pointer(pointer);
            if got != Some(expected) {
                problems.push(format!("{pointer:?} is {got:?}, expected {expected}"));
            }
        }
        if let Some(expected) = &case.text
            && text != *expected
        {
            problems.push(format!("body {text:?}, expected {expected:?}"));
        }
        for (pointer, name) in &case.json_same {
            let name = name.as_str().unwrap_or_default();
            let got = body.pointer(pointer);
            if got.is_none() || got != remembered.get(name) {
                problems.push(format!(
                    "{pointer:?} is {got:?}, expected {name} = {:?}",
                    remembered.get(name)
                ));
            }
        }
        for (name, pointer) in &case.remember {
            match body.pointer(pointer.as_str().unwrap_or_default()) {
                Some(value) => {
                    remembered.insert(name.clone(), value.clone());
                }
                None => problems.push(format!("nothing at {pointer} to remember as {name}")),
            }
        }
        if !problems.is_empty() {
            failures.push(format!("{}: {} (body {text})", case.case, problems.join("; ")));
        }
    }
    failures
}

fn report(store: &str, file: &str, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} of {} cases failed on {store}:\n{}",
        failures.len(),
        cases(file).len(),
        failures.join("\n")
    );
}

/// The suites of issue 39 (fidelity, round two), one file per theme; each is
/// replayed on a fresh registry.
const ROUND_TWO: &[(&str, &str)] = &[
    ("negotiation", include_str!("rest_fidelity/negotiation.jsonl")),
    ("config_mode", include_str!("rest_fidelity/config_mode.jsonl")),
    ("registration", include_str!("rest_fidelity/registration.jsonl")),
    ("answers", include_str!("rest_fidelity/answers.jsonl")),
    ("texts", include_str!("rest_fidelity/texts.jsonl")),
];

/// Every suite this file replays, by name.
fn suites() -> Vec<(&'static str, &'static str)> {
    let mut all = vec![("cases", CASES), ("contracts", CONTRACT_CASES)];
    all.extend_from_slice(ROUND_TWO);
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_holds_on_sqlite() {
    for (name, file) in suites() {
        let data = tempfile::tempdir().unwrap();
        let registry = RegistryProcess::start(data.path()).await;
        report(
            &format!("SQLite ({name}.jsonl)"),
            file,
            &replay(&registry.url, file).await,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_holds_on_postgres() {
    let Some(server) = support::postgres::shared() else {
        return;
    };
    // One database per suite: each starts from an empty registry.
    for (name, file) in suites() {
        let dsn = server.database().await;
        let data = tempfile::tempdir().unwrap();
        let registry = RegistryProcess::start_with(data.path(), &["--store", &dsn]).await;
        report(
            &format!("PostgreSQL ({name}.jsonl)"),
            file,
            &replay(&registry.url, file).await,
        );
    }
}
