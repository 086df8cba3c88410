//! The web pages in a real browser (issues 21 and 41): headless Chromium
//! from Debian's `chromium` package, driven through `chromedriver`
//! (Debian's `chromium-driver`) over WebDriver with the `fantoccini`
//! client, against a real `schemaops registry` process on 127.0.0.1.
//!
//! The registry first holds what a reader gets by applying
//! `examples/evolution/` and `examples/contracts/` in order (each Schema
//! manifest registered under its subject's level; those the examples say
//! are refused, refused). On those pages: the subject list; the
//! keyboard alone reaches a subject (Tab to its link, Enter); the
//! PlatonicSolid subject and its version 2 in the author's key order; the
//! diff of versions 1 and 2; the orders in two lineages, compatible within
//! their group; the customer's data contract (owner, PII, the CEL rule);
//! the sandbox refusing step 3 of the story and accepting the Protobuf
//! order with the import it carries over; and a field search for `id`.
//! Each of those pages is saved as a screenshot in `docs/src/images/ui/`,
//! where the book and the README show them, so they cannot go stale.
//!
//! Then, with no screenshot, the hostile part: a subject named like a
//! script shows as text and runs nothing, a catalog refers to a version,
//! and a page for bad input says so. On every page, no request goes
//! anywhere but the registry's own origin (the browser's resource timing
//! entries, and the CSP header).
//!
//! Skipped when chromium or chromedriver is missing, unless
//! `SCHEMAOPS_REQUIRE_ALL=1` (CI installs both).

mod support;

use std::collections::HashMap;
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

/// The documents of every manifest in `examples/{folder}/`, file by file in name order.
fn example_documents(folder: &str) -> Vec<(String, Value)> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "yaml"))
        .collect();
    files.sort();
    let mut documents = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let all: Vec<Value> = serde_saphyr::from_multiple(&std::fs::read_to_string(&file).unwrap()).unwrap();
        documents.extend(all.into_iter().map(|document| (name.clone(), document)));
    }
    documents
}

/// Applies `examples/{folder}/` to the registry at `url` as a reader would,
/// manifest by manifest: a SubjectConfig sets its subject's level and
/// group, a Schema is registered (its text inline or from a ConfigMap) or
/// refused as incompatible. Returns the files refused.
async fn apply_examples(url: &str, folder: &str) -> Vec<String> {
    let client = support::http_client();
    let mut config_maps: HashMap<(String, String), String> = HashMap::new();
    let mut refused = Vec::new();
    for (file, document) in example_documents(folder) {
        let spec = &document["spec"];
        let subject = spec["subject"].as_str().unwrap_or_default();
        let (method, path, body) = match document["kind"].as_str() {
            Some("ConfigMap") => {
                let name = document["metadata"]["name"].as_str().unwrap().to_owned();
                for (key, value) in document["data"].as_object().unwrap() {
                    config_maps.insert((name.clone(), key.clone()), value.as_str().unwrap().to_owned());
                }
                continue;
            }
            Some("SubjectConfig") => {
                let mut body = json!({"compatibility": spec["compatibility"]});
                if let Some(group) = spec.get("compatibilityGroup") {
                    body["compatibilityGroup"] = group.clone();
                }
                (reqwest::Method::PUT, format!("/config/{subject}"), body)
            }
            Some("Schema") => {
                let text = match spec.get("schemaFrom") {
                    Some(from) => {
                        let key = &from["configMapKeyRef"];
                        let at = (
                            key["name"].as_str().unwrap().to_owned(),
                            key["key"].as_str().unwrap().to_owned(),
                        );
                        config_maps[&at].clone()
                    }
                    None => spec["schema"].as_str().expect("spec.schema").to_owned(),
                };
                let mut body = json!({"schema": text});
                for (from, to) in [
                    ("schemaType", "schemaType"),
                    ("references", "references"),
                    ("metadata", "metadata"),
                    ("ruleSet", "ruleSet"),
                ] {
                    if let Some(value) = spec.get(from) {
                        body[to] = value.clone();
                    }
                }
                (reqwest::Method::POST, format!("/subjects/{subject}/versions"), body)
            }
            other => panic!("{file}: a manifest of kind {other:?}"),
        };
        let response = client
            .request(method, format!("{url}{path}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let answer = response.text().await.unwrap();
        if status == reqwest::StatusCode::CONFLICT {
            refused.push(file);
        } else {
            assert!(status.is_success(), "{file}: {status} {answer}");
        }
    }
    refused
}

/// The fixtures of the hostile part: a catalog referring to version 2 of
/// PlatonicSolid, and a subject named like a script.
async fn seed_fixtures(url: &str) {
    let client = support::http_client();
    let catalog = r#"{"type": "record", "name": "Catalog", "namespace": "dev.schemaops.examples", "fields": [
        {"name": "solids", "type": {"type": "array", "items": "dev.schemaops.examples.PlatonicSolid"}}]}"#;
    let reference =
        json!({"name": "dev.schemaops.examples.PlatonicSolid", "subject": "platonic-solid-value", "version": 2});
    for (path, body) in [
        (
            "/subjects/solid-catalog-value/versions",
            json!({"schema": catalog, "references": [reference]}),
        ),
        (
            "/subjects/%3Cscript%3Ealert(1)%3C%2Fscript%3E/versions",
            json!({"schema": "\"string\""}),
        ),
    ] {
        let response = client.post(format!("{url}{path}")).json(&body).send().await.unwrap();
        assert!(
            response.status().is_success(),
            "{path}: {}",
            response.text().await.unwrap()
        );
    }
}

/// The WebDriver session, the registry's address, and where screenshots go.
struct Browser {
    client: Client,
    base: String,
    /// `docs/src/images/ui/`, where the book and the README show them.
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

    /// Scrolls the element with `id` to the top of the window.
    async fn scroll_to(&self, id: &str) {
        self.client
            .execute(
                "document.getElementById(arguments[0]).scrollIntoView();",
                vec![json!(id)],
            )
            .await
            .unwrap();
    }

    /// Saves the window as `docs/src/images/ui/{name}.png`.
    async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
        std::fs::write(self.shots.join(format!("{name}.png")), png).unwrap();
    }
}

/// The files of the examples a registry refuses, as their comments say.
const REFUSED_EXAMPLES: &[&str] = &[
    "02-platonic-solid-v3.yaml",
    "12-rsvp-v2.yaml",
    "21-order-open-v2.yaml",
    "32-order-proto-v2.yaml",
    "13-orders-v2-breaking.yaml",
];

#[tokio::test]
async fn the_pages_work_in_headless_chromium() {
    if !browser_present() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let registry = RegistryProcess::start(data.path()).await;
    let mut refused = apply_examples(&registry.url, "evolution").await;
    refused.extend(apply_examples(&registry.url, "contracts").await);
    assert_eq!(refused, REFUSED_EXAMPLES, "the examples refused, and only those");
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
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/images/ui");
    std::fs::create_dir_all(&shots).unwrap();
    let browser = Browser {
        client,
        base: registry.url.clone(),
        shots,
    };
    // Close the session (and so the browser) even when a check fails.
    let outcome = std::panic::AssertUnwindSafe(async {
        examples(&browser).await;
        seed_fixtures(&registry.url).await;
        hostile(&browser).await;
    })
    .catch_unwind()
    .await;
    browser.client.clone().close().await.unwrap();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Waits until the browser is at `path`.
async fn arrive(browser: &Browser, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while browser.client.current_url().await.unwrap().path() != path {
        assert!(Instant::now() < deadline, "the browser never reached {path}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The pages over the examples alone, each saved as a screenshot.
async fn examples(browser: &Browser) {
    // The subject list.
    browser.open("/ui/").await;
    let referenced_by = browser
        .find("#subjects tr[data-subject='shop-money'] td:last-child")
        .await;
    assert_eq!(
        referenced_by.text().await.unwrap(),
        "1",
        "the Protobuf order imports it"
    );
    browser.find("#subjects tr[data-subject='customers-value']").await;
    browser.screenshot("subjects").await;

    // Keyboard navigation: Tab to the subject's link, Enter follows it.
    let target = "/ui/subjects/platonic-solid-value";
    let mut reached = false;
    for _ in 0..40 {
        let active = browser.client.active_element().await.unwrap();
        if active.attr("href").await.unwrap().as_deref() == Some(target) {
            active.send_keys(&char::from(Key::Enter).to_string()).await.unwrap();
            reached = true;
            break;
        }
        active.send_keys(&char::from(Key::Tab).to_string()).await.unwrap();
    }
    assert!(reached, "Tab never reached the subject's link");
    arrive(browser, target).await;

    // The subject: versions 1 and 2; step 3 of the story was refused.
    browser.only_local_requests(target).await;
    for version in ["1", "2"] {
        browser.find(&format!("#versions tr[data-version='{version}']")).await;
    }
    let rows = browser
        .client
        .find_all(Locator::Css("#versions tbody tr"))
        .await
        .unwrap();
    assert_eq!(rows.len(), 2, "version 3 was refused");
    assert_eq!(browser.find("#level").await.text().await.unwrap(), "BACKWARD");
    browser.screenshot("subject").await;

    // Version 2: the author's text in the author's key order, with a copy button.
    browser.open("/ui/subjects/platonic-solid-value/versions/2").await;
    let text = browser.find("#schema-text").await.text().await.unwrap();
    let at = |key: &str| {
        text.find(&format!("\"{key}\":"))
            .unwrap_or_else(|| panic!("no {key}: {text}"))
    };
    assert!(at("type") < at("name") && at("name") < at("fields"), "{text}");
    assert!(text.starts_with("{\n  \"type\": \"record\""), "{text}");
    browser.find("button[data-copies='schema-text']").await;
    browser.screenshot("version").await;

    // The diff of versions 1 and 2: `vertices` added with a default, both
    // texts in the author's key order.
    browser.open("/ui/subjects/platonic-solid-value/diff?from=1&to=2").await;
    let vertices = "tr.change[data-element='vertices']";
    assert_eq!(browser.attr(vertices, "data-kind").await, "FIELD_ADDED_WITH_DEFAULT");
    assert_eq!(browser.attr(vertices, "data-backward").await, "compatible");
    assert_eq!(browser.attr(vertices, "data-forward").await, "compatible");
    browser.find(".texts span.added").await;
    let mut added = Vec::new();
    for line in browser
        .client
        .find_all(Locator::Css(".texts span.added"))
        .await
        .unwrap()
    {
        added.push(line.text().await.unwrap());
    }
    assert!(
        added.iter().any(|line| line.trim() == "\"name\": \"vertices\","),
        "{added:?}"
    );
    let earlier = browser.find(".texts section pre").await.text().await.unwrap();
    assert!(
        earlier.starts_with("{\n  \"type\": \"record\""),
        "the author's order: {earlier}"
    );
    browser.screenshot("diff").await;

    // The orders in two lineages: major version 3 is compatible within its
    // group; version 1, of major version 2, is another lineage.
    browser.open("/ui/subjects/orders-value/matrix").await;
    assert_eq!(
        browser.attr("#modes tr[data-mode='BACKWARD']", "data-verdict").await,
        "compatible"
    );
    let lineage = browser.find("#lineage").await.text().await.unwrap();
    assert!(
        lineage.contains("application.major_version") && lineage.contains("lineage 3"),
        "{lineage}"
    );
    let cells = browser
        .find("#rows tr[data-version='1']")
        .await
        .find_all(Locator::Css("td"))
        .await
        .unwrap();
    let mut texts = Vec::new();
    for cell in &cells {
        texts.push(cell.text().await.unwrap());
    }
    assert_eq!(texts[1..], ["2", "other lineage", "other lineage"], "{texts:?}");
    browser.screenshot("matrix").await;

    // A data contract: the owner and the PII element among the facts, the rule in full.
    browser.open("/ui/subjects/customers-value/versions/1").await;
    assert_eq!(browser.find("#owner").await.text().await.unwrap(), "team-a");
    assert_eq!(browser.find("#pii").await.text().await.unwrap(), "PII Customer.ssn");
    let pii = browser.find("#tags .tag.pii").await;
    assert_eq!(pii.text().await.unwrap(), "PII");
    let colour = pii.css_value("color").await.unwrap();
    assert_ne!(
        colour,
        browser.find("#tags td").await.css_value("color").await.unwrap(),
        "PII stands out"
    );
    let mut rule = Vec::new();
    for cell in browser
        .find("#rules tr[data-rule='ageIsNotNegative']")
        .await
        .find_all(Locator::Css("td"))
        .await
        .unwrap()
    {
        rule.push(cell.text().await.unwrap());
    }
    assert_eq!(
        rule,
        [
            "ageIsNotNegative\nA customer's age is zero or more.",
            "Domain",
            "CONDITION",
            "WRITE",
            "CEL",
            "the whole record",
            "message.age >= 0",
            "—",
            "—",
            "ERROR",
        ]
    );
    browser.scroll_to("contract").await;
    browser.screenshot("contract").await;

    // The Protobuf order in the sandbox: its import is carried over, so
    // its own text checks as it stands.
    browser.open("/ui/subjects/order-proto-value/sandbox").await;
    let references = browser
        .find("#references")
        .await
        .prop("value")
        .await
        .unwrap()
        .unwrap_or_default();
    assert!(references.contains("\"shop/money.proto\""), "{references}");
    browser.find("#check-draft").await.click().await.unwrap();
    let outcome = browser.find("#outcome").await.text().await.unwrap();
    assert!(outcome.contains("the draft would be accepted"), "{outcome}");

    // The sandbox: step 3 of the story, pasted before applying it.
    browser.open("/ui/subjects/platonic-solid-value/sandbox").await;
    let draft = browser.find("#draft").await;
    draft.clear().await.unwrap();
    let step_3 = example_documents("evolution")
        .into_iter()
        .find(|(file, _)| file == "02-platonic-solid-v3.yaml")
        .map(|(_, manifest)| manifest["spec"]["schema"].as_str().unwrap().to_owned())
        .unwrap();
    draft.send_keys(&step_3).await.unwrap();
    browser.find("#check-draft").await.click().await.unwrap();
    let outcome = browser.find("#outcome").await.text().await.unwrap();
    assert!(outcome.contains("the draft is incompatible"), "{outcome}");
    assert!(outcome.contains("Nothing was registered"), "{outcome}");
    browser.only_local_requests("sandbox").await;
    browser.scroll_to("outcome").await;
    browser.screenshot("sandbox").await;

    // A field search from the list's form (issue 41 item 3).
    browser.open("/ui/").await;
    browser.find("#search-text").await.send_keys("id").await.unwrap();
    browser
        .find("#schema-search button[type='submit']")
        .await
        .click()
        .await
        .unwrap();
    arrive(browser, "/ui/search").await;
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
            "id | field | string | dev.schemaops.examples.contracts.Customer.id | customers-value | version 1 (AVRO, ID 9)",
            "id | field | string | shop.Order.id | order-proto-value | version 1 (PROTOBUF, ID 8)",
            "id | field | string | #/properties/id | order-closed-value | version 2 (JSON, ID 6)",
            "id | field | string | #/properties/id | order-closed-value | version 1 (JSON, ID 5)",
            "id | field | string | #/properties/id | order-open-value | version 1 (JSON, ID 4)",
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
}

/// Fixtures a reader never applies, with no screenshot: hostile names and references.
async fn hostile(browser: &Browser) {
    // The hostile name shows as text on the list, and runs nothing.
    browser.open("/ui/").await;
    let hostile = browser.find(&format!("#subjects tr[data-subject='{HOSTILE}'] a")).await;
    assert_eq!(hostile.text().await.unwrap(), HOSTILE);
    assert!(browser.client.get_alert_text().await.is_err(), "no script ran");
    let referenced_by = browser
        .find("#subjects tr[data-subject='platonic-solid-value'] td:last-child")
        .await;
    assert_eq!(
        referenced_by.text().await.unwrap(),
        "1",
        "solid-catalog-value refers to it"
    );
    for page in [
        "/ui/subjects/platonic-solid-value",
        "/ui/subjects/platonic-solid-value/versions/2",
    ] {
        browser.open(page).await;
        let referrer = browser.find("#references ul[aria-label='Referenced by'] a").await;
        assert_eq!(referrer.text().await.unwrap(), "solid-catalog-value v1", "{page}");
    }
    browser
        .open(&format!("/ui/subjects/{}", schemaops::ui::html::segment(HOSTILE)))
        .await;
    let heading = browser.find("h1").await.text().await.unwrap();
    assert!(heading.contains(HOSTILE), "{heading}");
    assert!(browser.client.get_alert_text().await.is_err(), "no script ran");

    // A browser's visit to the root lands on the pages.
    browser.client.goto(&format!("{}/", browser.base)).await.unwrap();
    assert_eq!(browser.client.current_url().await.unwrap().path(), "/ui/");

    // A page for bad input.
    browser.open("/ui/subjects/no-such-subject").await;
    let error = browser.find("p.error").await.text().await.unwrap();
    assert!(error.contains("not found"), "{error}");
}
