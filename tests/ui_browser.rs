//! The web pages in a real browser (issue 21): headless Chromium from
//! Debian's `chromium` package, driven through `chromedriver` (Debian's
//! `chromium-driver`) over WebDriver with the `fantoccini` client, against
//! a real `schemaops registry` process on 127.0.0.1 holding the
//! PlatonicSolid history of `examples/evolution/`.
//!
//! Checked: the subject list renders (a subject named like a script shows
//! as text and runs nothing); the subject shows its three versions; the
//! diff of v2 → v3 shows `edges`, added without a default, breaking
//! BACKWARD and not FORWARD; the sandbox reports an incompatibility for a
//! pasted draft; a field search from the list's form finds `id` in the
//! JSON Schema and Protobuf orders and leads to a version page; the
//! keyboard alone reaches a subject (Tab to its link, Enter); and no page makes a request anywhere but the registry's own
//! origin (the browser's resource timing entries, and the CSP header).
//! A screenshot of each page is saved under the target folder
//! (`ui-screenshots/`); the book shows copies from `docs/src/images/ui/`.
//!
//! Skipped when chromium or chromedriver is missing, unless
//! `SCHEMAOPS_REQUIRE_ALL=1` (CI installs both).

mod support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use futures::FutureExt as _;
use serde_json::{Value, json};
use support::registry::RegistryProcess;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const INSTALL: &str = "apt-get install -y chromium chromium-driver";
const HOSTILE: &str = "<script>alert(1)</script>";

/// chromedriver on a free loopback port; killed when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver listens within 20 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the browser is installed; panics when it is required and missing.
fn browser_present() -> bool {
    let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER]
        .into_iter()
        .filter(|path| !Path::new(path).exists())
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        !support::require_all(),
        "SCHEMAOPS_REQUIRE_ALL=1 but {missing:?} missing ({INSTALL})"
    );
    println!("skipped: {missing:?} missing (install with: {INSTALL})");
    false
}

/// The schema text of an `examples/evolution/` Schema manifest.
fn example_schema(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/evolution")
        .join(file);
    let manifest: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["spec"]["schema"].as_str().expect("spec.schema").to_owned()
}

/// The PlatonicSolid history: v1 and v2 under BACKWARD, then v3 (which
/// BACKWARD refuses) under NONE, the level set back to BACKWARD; a
/// catalog that refers to version 2; and a subject named like a script.
async fn seed(url: &str) {
    let client = support::http_client();
    let send = |method: reqwest::Method, path: &'static str, body: Value| {
        let request = client.request(method, format!("{url}{path}")).json(&body);
        async move {
            let response = request.send().await.unwrap();
            assert!(
                response.status().is_success(),
                "{path}: {}",
                response.text().await.unwrap()
            );
        }
    };
    let versions: &'static str = "/subjects/platonic-solid-value/versions";
    let config: &'static str = "/config/platonic-solid-value";
    send(
        reqwest::Method::POST,
        versions,
        json!({"schema": example_schema("00-platonic-solid-v1.yaml")}),
    )
    .await;
    send(
        reqwest::Method::POST,
        versions,
        json!({"schema": example_schema("01-platonic-solid-v2.yaml")}),
    )
    .await;
    send(reqwest::Method::PUT, config, json!({"compatibility": "NONE"})).await;
    send(
        reqwest::Method::POST,
        versions,
        json!({"schema": example_schema("02-platonic-solid-v3.yaml")}),
    )
    .await;
    send(reqwest::Method::PUT, config, json!({"compatibility": "BACKWARD"})).await;
    let catalog = r#"{"type": "record", "name": "Catalog", "namespace": "dev.schemaops.examples", "fields": [
        {"name": "solids", "type": {"type": "array", "items": "dev.schemaops.examples.PlatonicSolid"}}]}"#;
    let reference =
        json!({"name": "dev.schemaops.examples.PlatonicSolid", "subject": "platonic-solid-value", "version": 2});
    let with_reference = json!({"schema": catalog, "references": [reference]});
    send(
        reqwest::Method::POST,
        "/subjects/solid-catalog-value/versions",
        with_reference,
    )
    .await;
    let hostile = "/subjects/%3Cscript%3Ealert(1)%3C%2Fscript%3E/versions";
    send(reqwest::Method::POST, hostile, json!({"schema": "\"string\""})).await;
    // For the search: the JSON Schema order, and the Protobuf order with the money it imports.
    send(
        reqwest::Method::POST,
        "/subjects/order-open-value/versions",
        json!({"schemaType": "JSON", "schema": example_schema("20-order-open-v1.yaml")}),
    )
    .await;
    send(
        reqwest::Method::POST,
        "/subjects/shop-money/versions",
        json!({"schemaType": "PROTOBUF", "schema": example_config_map("30-money-proto.yaml", "money.proto")}),
    )
    .await;
    let money = json!({"name": "shop/money.proto", "subject": "shop-money", "version": 1});
    send(
        reqwest::Method::POST,
        "/subjects/order-proto-value/versions",
        json!({"schemaType": "PROTOBUF", "schema": example_schema("31-order-proto-v1.yaml"), "references": [money]}),
    )
    .await;
}

/// A key of the ConfigMap in an `examples/evolution/` file of several documents.
fn example_config_map(file: &str, key: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/evolution")
        .join(file);
    let documents: Vec<Value> = serde_saphyr::from_multiple(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let config_map = documents
        .iter()
        .find(|document| document["kind"] == "ConfigMap")
        .expect("a ConfigMap");
    config_map["data"][key].as_str().expect("the key").to_owned()
}

struct Browser {
    client: Client,
    base: String,
    shots: PathBuf,
}

impl Browser {
    async fn open(&self, path: &str) {
        self.client.goto(&format!("{}{path}", self.base)).await.unwrap();
        self.only_local_requests(path).await;
    }

    async fn find(&self, css: &str) -> Element {
        let found = self
            .client
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css(css))
            .await;
        match found {
            Ok(element) => element,
            Err(error) => panic!("no `{css}` on {:?}: {error}", self.client.current_url().await),
        }
    }

    async fn attr(&self, css: &str, name: &str) -> String {
        self.find(css).await.attr(name).await.unwrap().unwrap_or_default()
    }

    /// Every resource the page loaded came from the registry's origin.
    async fn only_local_requests(&self, page: &str) {
        let names = self
            .client
            .execute(
                "return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))\
                 .map(function (entry) { return entry.name; });",
                vec![],
            )
            .await
            .unwrap();
        let names: Vec<String> = serde_json::from_value(names).unwrap();
        assert!(
            names.len() >= 3,
            "{page}: the page, its stylesheet and its script: {names:?}"
        );
        for name in &names {
            assert!(name.starts_with(&format!("{}/", self.base)), "{page} requested {name}");
        }
    }

    async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
        std::fs::write(self.shots.join(format!("{name}.png")), png).unwrap();
    }
}

#[tokio::test]
async fn the_pages_work_in_headless_chromium() {
    if !browser_present() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let registry = RegistryProcess::start(data.path()).await;
    seed(&registry.url).await;
    let headers = support::http_client()
        .get(format!("{}/ui/", registry.url))
        .send()
        .await
        .unwrap();
    let policy = headers.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        policy.starts_with("default-src 'none'") && policy.contains("connect-src 'self'"),
        "{policy}"
    );

    let driver = Driver::start();
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        json!({
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--disable-extensions"],
        }),
    );
    let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&driver.url)
        .await
        .expect("a Chromium session");
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let browser = Browser {
        client,
        base: registry.url.clone(),
        shots,
    };
    // Close the session (and so the browser) even when a check fails.
    let outcome = std::panic::AssertUnwindSafe(run(&browser)).catch_unwind().await;
    browser.client.clone().close().await.unwrap();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

async fn run(browser: &Browser) {
    // The subject list renders, the hostile name as text.
    browser.open("/ui/").await;
    let referenced_by = browser
        .find("#subjects tr[data-subject='platonic-solid-value'] td:last-child")
        .await;
    assert_eq!(
        referenced_by.text().await.unwrap(),
        "1",
        "solid-catalog-value refers to it"
    );
    let hostile = browser.find(&format!("#subjects tr[data-subject='{HOSTILE}'] a")).await;
    assert_eq!(hostile.text().await.unwrap(), HOSTILE);
    assert!(browser.client.get_alert_text().await.is_err(), "no script ran");
    browser.screenshot("subjects").await;

    // Keyboard navigation: Tab to the subject's link, Enter follows it.
    let target = "/ui/subjects/platonic-solid-value";
    let mut reached = false;
    for _ in 0..30 {
        let active = browser.client.active_element().await.unwrap();
        if active.attr("href").await.unwrap().as_deref() == Some(target) {
            active.send_keys(&char::from(Key::Enter).to_string()).await.unwrap();
            reached = true;
            break;
        }
        active.send_keys(&char::from(Key::Tab).to_string()).await.unwrap();
    }
    assert!(reached, "Tab never reached the subject's link");
    let deadline = Instant::now() + Duration::from_secs(10);
    while browser.client.current_url().await.unwrap().path() != target {
        assert!(Instant::now() < deadline, "Enter did not follow the link");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The subject's history shows its three versions.
    browser.only_local_requests(target).await;
    for version in ["1", "2", "3"] {
        browser.find(&format!("#versions tr[data-version='{version}']")).await;
    }
    assert_eq!(browser.find("#level").await.text().await.unwrap(), "BACKWARD");
    let referrer = browser.find("#references ul[aria-label='Referenced by'] a").await;
    assert_eq!(referrer.text().await.unwrap(), "solid-catalog-value v1");
    browser.screenshot("subject").await;

    // The diff of v2 → v3: edges breaks BACKWARD, not FORWARD.
    browser.open("/ui/subjects/platonic-solid-value/diff?from=2&to=3").await;
    let edges = "tr.change[data-element='edges']";
    assert_eq!(browser.attr(edges, "data-kind").await, "FIELD_ADDED_WITHOUT_DEFAULT");
    assert_eq!(browser.attr(edges, "data-backward").await, "breaks");
    assert_eq!(browser.attr(edges, "data-forward").await, "compatible");
    let cells = browser
        .find(edges)
        .await
        .find_all(Locator::Css("td .verdict"))
        .await
        .unwrap();
    assert_eq!(cells[0].text().await.unwrap(), "breaks");
    assert_eq!(cells[1].text().await.unwrap(), "compatible");
    browser.find(".texts span.added").await;
    browser.screenshot("diff").await;

    // The matrix of the latest version.
    browser.open("/ui/subjects/platonic-solid-value/matrix").await;
    assert_eq!(
        browser.attr("#modes tr[data-mode='BACKWARD']", "data-verdict").await,
        "breaks"
    );
    assert_eq!(
        browser.attr("#modes tr[data-mode='FORWARD']", "data-verdict").await,
        "compatible"
    );
    browser.screenshot("matrix").await;

    // The sandbox: a pasted draft that turns `faces` into a string.
    browser.open("/ui/subjects/platonic-solid-value/sandbox").await;
    let draft = browser.find("#draft").await;
    draft.clear().await.unwrap();
    let text = example_schema("01-platonic-solid-v2.yaml").replace(r#""type": "int""#, r#""type": "string""#);
    assert!(text.contains(r#""faces", "type": "string""#), "{text}");
    draft.send_keys(&text).await.unwrap();
    browser.find("#check-draft").await.click().await.unwrap();
    let outcome = browser.find("#outcome").await.text().await.unwrap();
    assert!(outcome.contains("the draft is incompatible"), "{outcome}");
    assert!(outcome.contains("Nothing was registered"), "{outcome}");
    browser.only_local_requests("sandbox").await;
    browser.screenshot("sandbox").await;

    // A version page: the author's text laid out in the author's key order,
    // with a copy button, and the version that refers to it.
    browser.open("/ui/subjects/platonic-solid-value/versions/2").await;
    let text = browser.find("#schema-text").await.text().await.unwrap();
    let at = |key: &str| {
        text.find(&format!("\"{key}\":"))
            .unwrap_or_else(|| panic!("no {key}: {text}"))
    };
    assert!(at("type") < at("name") && at("name") < at("fields"), "{text}");
    assert!(text.starts_with("{\n  \"type\": \"record\""), "{text}");
    browser.find("button[data-copies='schema-text']").await;
    let referrer = browser.find("#references ul[aria-label='Referenced by'] a").await;
    assert_eq!(referrer.text().await.unwrap(), "solid-catalog-value v1");
    browser.screenshot("version").await;

    // A field search from the list's form (issue 41 item 3): `id` is a
    // field of the Protobuf order and a property of the JSON Schema one.
    browser.open("/ui/").await;
    browser.find("#search-text").await.send_keys("id").await.unwrap();
    browser
        .find("#schema-search button[type='submit']")
        .await
        .click()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while browser.client.current_url().await.unwrap().path() != "/ui/search" {
        assert!(Instant::now() < deadline, "the form did not lead to the search page");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rows = browser
        .find("#search-results")
        .await
        .find_all(Locator::Css("tbody tr"))
        .await
        .unwrap();
    let mut exact = Vec::new();
    for row in &rows {
        let mut cells = Vec::new();
        for cell in row.find_all(Locator::Css("td")).await.unwrap() {
            cells.push(cell.text().await.unwrap());
        }
        if cells[0] == "id" {
            exact.push(cells.join(" | "));
        }
    }
    assert_eq!(
        exact,
        [
            "id | field | string | shop.Order.id | order-proto-value | version 1 (PROTOBUF, ID 8)",
            "id | field | string | #/properties/id | order-open-value | version 1 (JSON, ID 6)",
        ],
        "exact names first, newest first"
    );
    assert!(rows.len() > exact.len(), "names containing `id` follow");
    browser.only_local_requests("search").await;
    browser.screenshot("search").await;
    browser
        .find("#search-results a[href='/ui/subjects/order-proto-value/versions/1']")
        .await
        .click()
        .await
        .unwrap();
    let text = browser.find("#schema-text").await.text().await.unwrap();
    assert!(text.contains("string id = 1;"), "{text}");

    // A browser's visit to the root lands on the pages.
    browser.client.goto(&format!("{}/", browser.base)).await.unwrap();
    assert_eq!(browser.client.current_url().await.unwrap().path(), "/ui/");

    // A page for bad input.
    browser.open("/ui/subjects/no-such-subject").await;
    let error = browser.find("p.error").await.text().await.unwrap();
    assert!(error.contains("not found"), "{error}");
}
