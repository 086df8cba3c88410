//! The web pages (issue 21) through the router, with no socket: escaping
//! of hostile names, the error pages, the security headers, the read
//! credentials, the diff's verdicts and a sandbox that registers nothing.
//! The same pages in a real browser: `tests/ui_browser.rs`.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use schemaops::compat::Checker;
use schemaops::registry::api::{ApiState, Auth, Credential, router};
use schemaops::registry::embedded::EmbeddedRegistry;
use schemaops::registry::embedded::sqlite::SqliteStore;
use serde_json::{Value, json};
use tower::ServiceExt as _;

const HOSTILE: &str = "<script>alert(1)</script>";

fn solid(extra: &str) -> String {
    format!(
        r#"{{"type":"record","name":"PlatonicSolid","fields":[{{"name":"name","type":"string"}},
        {{"name":"vertices","type":["null","int"],"default":null}}{extra}]}}"#
    )
}

async fn app(auth: Option<Arc<Auth>>) -> (Router, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("registry.db")).unwrap());
    let registry = EmbeddedRegistry::open(store, Checker::default()).await.unwrap();
    let state = ApiState {
        registry: Arc::new(registry),
        body_limit: 1 << 20,
        auth,
        policies: None,
        admission: None,
    };
    (schemaops::ui::beside_api(router(state.clone()), state, None), dir)
}

struct Answer {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: String,
}

async fn send(app: &Router, request: Request<Body>) -> Answer {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    Answer { status, headers, body }
}

async fn get(app: &Router, uri: &str) -> Answer {
    send(app, Request::get(uri).body(Body::empty()).unwrap()).await
}

async fn api(app: &Router, method: &str, uri: &str, body: serde_json::Value) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .header("authorization", "Bearer writer-token")
        .body(Body::from(body.to_string()))
        .unwrap();
    let answer = send(app, request).await;
    assert_eq!(answer.status, StatusCode::OK, "{method} {uri}: {}", answer.body);
}

/// v1, v2 under BACKWARD; v3 (a field without a default) under NONE.
async fn history(app: &Router) {
    api(app, "POST", "/subjects/solid/versions", json!({ "schema": solid("") })).await;
    api(
        app,
        "POST",
        "/subjects/solid/versions",
        json!({ "schema": solid(r#",{"name":"faces","type":"int","default":4}"#) }),
    )
    .await;
    api(app, "PUT", "/config/solid", json!({"compatibility": "NONE"})).await;
    let v3 = solid(r#",{"name":"faces","type":"int","default":4},{"name":"edges","type":"int"}"#);
    api(app, "POST", "/subjects/solid/versions", json!({ "schema": v3 })).await;
    api(app, "PUT", "/config/solid", json!({"compatibility": "BACKWARD"})).await;
}

fn assert_secured(answer: &Answer) {
    let policy = answer.headers["content-security-policy"].to_str().unwrap();
    assert!(policy.starts_with("default-src 'none'"), "{policy}");
    assert!(
        policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"),
        "{policy}"
    );
    assert_eq!(answer.headers["x-content-type-options"], "nosniff");
}

#[tokio::test]
async fn a_subject_named_like_a_script_is_shown_as_text_everywhere() {
    let (app, _dir) = app(None).await;
    let encoded = "%3Cscript%3Ealert%281%29%3C%2Fscript%3E";
    api(
        &app,
        "POST",
        &format!("/subjects/{encoded}/versions"),
        json!({"schema": "\"string\""}),
    )
    .await;
    for uri in [
        "/ui/".to_owned(),
        format!("/ui/subjects/{encoded}"),
        format!("/ui/subjects/{encoded}/matrix"),
        format!("/ui/subjects/{encoded}/sandbox"),
        format!("/ui/subjects/{encoded}/versions/1"),
    ] {
        let answer = get(&app, &uri).await;
        assert_eq!(answer.status, StatusCode::OK, "{uri}: {}", answer.body);
        assert_secured(&answer);
        assert!(!answer.body.contains(HOSTILE), "{uri} carries the name unescaped");
        assert!(answer.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{uri}");
    }
}

#[tokio::test]
async fn bad_input_gets_a_page_that_says_so() {
    let (app, _dir) = app(None).await;
    history(&app).await;
    for (uri, status, says) in [
        (
            "/ui/subjects/nobody",
            StatusCode::NOT_FOUND,
            "subject `nobody` not found",
        ),
        (
            "/ui/subjects/solid/diff?from=1&to=9",
            StatusCode::NOT_FOUND,
            "version 9 of subject `solid` not found",
        ),
        (
            "/ui/subjects/solid/diff?from=one",
            StatusCode::UNPROCESSABLE_ENTITY,
            "the version `one` is not valid",
        ),
        (
            "/ui/subjects/solid/matrix?version=7",
            StatusCode::NOT_FOUND,
            "version 7",
        ),
        ("/ui/no/such/page", StatusCode::NOT_FOUND, "there is no such page"),
        ("/ui/subjects/%FF%FE", StatusCode::BAD_REQUEST, "UTF-8"),
    ] {
        let answer = get(&app, uri).await;
        assert_eq!(answer.status, status, "{uri}: {}", answer.body);
        assert_eq!(answer.headers["content-type"], "text/html; charset=utf-8", "{uri}");
        assert_secured(&answer);
        assert!(answer.body.contains(says), "{uri}: {}", answer.body);
    }
}

/// Issue 41 item 3: the search page, reached from the subject list's form.
#[tokio::test]
async fn the_search_page_links_each_hit_to_its_version_and_escapes_names_and_the_query() {
    let (app, _dir) = app(None).await;
    history(&app).await;
    let encoded = "%3Cscript%3Ealert%281%29%3C%2Fscript%3E";
    let hostile_property =
        json!({"type": "object", "properties": {HOSTILE: {"type": "string"}, "vertices": {"type": "integer"}}});
    api(
        &app,
        "POST",
        &format!("/subjects/{encoded}/versions"),
        json!({"schemaType": "JSON", "schema": hostile_property.to_string()}),
    )
    .await;

    let list = get(&app, "/ui/").await;
    assert!(
        list.body
            .contains("<form class=\"inline\" method=\"get\" action=\"/ui/search\""),
        "the list offers the search: {}",
        list.body
    );

    let found = get(&app, "/ui/search?q=VERTICES").await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.body);
    assert_secured(&found);
    // Every version of solid holds `vertices`, and the hostile subject's JSON Schema does.
    assert!(
        found.body.contains("<p class=\"muted\" id=\"search-count\">4 hits."),
        "{}",
        found.body
    );
    for link in [
        "href=\"/ui/subjects/solid/versions/3\"",
        "href=\"/ui/subjects/solid/versions/2\"",
        "href=\"/ui/subjects/solid/versions/1\"",
        "href=\"/ui/subjects/%3Cscript%3Ealert",
    ] {
        assert!(found.body.contains(link), "{link}: {}", found.body);
    }
    assert!(
        found.body.contains("<code>null | int</code>"),
        "the Avro type: {}",
        found.body
    );
    assert!(
        found.body.contains("<code>integer</code>"),
        "the JSON Schema type: {}",
        found.body
    );

    for uri in [
        format!("/ui/search?q={encoded}"),
        format!("/ui/search?q={encoded}&kind=subject"),
        "/ui/search?q=script".to_owned(),
    ] {
        let answer = get(&app, &uri).await;
        assert_eq!(answer.status, StatusCode::OK, "{uri}: {}", answer.body);
        assert_secured(&answer);
        assert!(!answer.body.contains(HOSTILE), "{uri} carries a name unescaped");
        assert!(answer.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{uri}");
    }
    let subjects = get(&app, &format!("/ui/search?q={encoded}&kind=subject")).await;
    assert!(subjects.body.contains("1 hit."), "{}", subjects.body);

    let many = get(&app, "/ui/search?q=e&limit=2").await;
    assert!(many.body.contains("id=\"search-more\""), "{}", many.body);
    let empty_form = get(&app, "/ui/search").await;
    assert_eq!(empty_form.status, StatusCode::OK);
    assert!(empty_form.body.contains("id=\"search-text\""));
    for (uri, says) in [
        ("/ui/search?q=id&kind=column", "unknown kind `column`"),
        ("/ui/search?q=%20", "the search text is empty"),
    ] {
        let answer = get(&app, uri).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{uri}: {}", answer.body);
        assert!(answer.body.contains(says), "{uri}: {}", answer.body);
    }
    let nothing = get(&app, "/ui/search?q=no_such_field").await;
    assert!(nothing.body.contains("Nothing matches."), "{}", nothing.body);
}

#[tokio::test]
async fn the_diff_page_marks_edges_as_breaking_backward_and_not_forward() {
    let (app, _dir) = app(None).await;
    history(&app).await;
    let answer = get(&app, "/ui/subjects/solid/diff?from=2&to=3").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(
        answer.body.contains(
            "data-kind=\"FIELD_ADDED_WITHOUT_DEFAULT\" data-element=\"edges\" data-backward=\"breaks\" \
             data-forward=\"compatible\""
        ),
        "{}",
        answer.body
    );
    assert!(
        answer.body.contains("<span class=\"added\" data-mark=\"+\">"),
        "the new line is marked"
    );
    let timeline = get(&app, "/ui/subjects/solid").await;
    assert!(timeline.body.contains("data-version=\"3\"") && timeline.body.contains("diff 2 → 3"));
}

#[tokio::test]
async fn the_diff_page_shows_both_texts_in_the_authors_key_order() {
    let (app, _dir) = app(None).await;
    history(&app).await;
    let answer = get(&app, "/ui/subjects/solid/diff?from=1&to=2").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let texts = &answer.body[answer.body.find("<h2>Texts</h2>").expect("a texts section")..];
    for side in texts.split("<section>").skip(1) {
        let at = |line: &str| side.find(line).unwrap_or_else(|| panic!("no line {line}: {side}"));
        assert!(
            at("&quot;type&quot;: &quot;record&quot;") < at("&quot;name&quot;: &quot;PlatonicSolid&quot;")
                && at("&quot;name&quot;: &quot;PlatonicSolid&quot;") < at("&quot;fields&quot;: ["),
            "type, name, fields as the author wrote them: {side}"
        );
    }
    assert!(
        texts.contains("<span class=\"added\" data-mark=\"+\">      &quot;name&quot;: &quot;faces&quot;,</span>"),
        "the added field is marked, inside its object: {texts}"
    );
}

/// The spec of a manifest in `examples/`.
fn example_spec(path: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(path);
    let manifest: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["spec"].clone()
}

/// The registration a Schema manifest of `examples/` asks for: its text, metadata and rules.
fn example_registration(path: &str) -> Value {
    let spec = example_spec(path);
    let mut body = json!({ "schema": spec["schema"] });
    for key in ["metadata", "ruleSet"] {
        if let Some(value) = spec.get(key) {
            body[key] = value.clone();
        }
    }
    body
}

/// The orders story of `examples/contracts/`: lineages by major version,
/// version 1 of major version 2, version 2 of major version 3.
async fn orders_in_lineages(app: &Router) {
    let config = example_spec("contracts/10-orders-config.yaml");
    let body = json!({"compatibility": config["compatibility"], "compatibilityGroup": config["compatibilityGroup"]});
    api(app, "PUT", "/config/orders-value", body).await;
    for file in ["contracts/11-orders-v2.yaml", "contracts/12-orders-v3.yaml"] {
        api(
            app,
            "POST",
            "/subjects/orders-value/versions",
            example_registration(file),
        )
        .await;
    }
}

#[tokio::test]
async fn the_matrix_and_the_diff_judge_a_version_only_within_its_lineage() {
    let (app, _dir) = app(None).await;
    orders_in_lineages(&app).await;
    let matrix = get(&app, "/ui/subjects/orders-value/matrix").await;
    assert_eq!(matrix.status, StatusCode::OK, "{}", matrix.body);
    assert!(
        matrix
            .body
            .contains("data-mode=\"BACKWARD\" data-verdict=\"compatible\""),
        "major version 3 starts a lineage of its own: {}",
        matrix.body
    );
    assert!(
        matrix.body.contains(
            "Compatibility group <code>application.major_version</code>: version 2 is in lineage \
             <code class=\"lineage\">3</code>"
        ),
        "{}",
        matrix.body
    );
    let row = &matrix.body[matrix
        .body
        .find("<tr data-version=\"1\">")
        .expect("a row for version 1")..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(row.contains("<code class=\"lineage\">2</code>"), "{row}");
    assert_eq!(row.matches(">other lineage</span>").count(), 2, "{row}");
    assert!(!row.contains("verdict breaks"), "{row}");

    let diff = get(&app, "/ui/subjects/orders-value/diff?from=1&to=2").await;
    assert_eq!(diff.status, StatusCode::OK, "{}", diff.body);
    let summary = &diff.body[diff.body.find("id=\"summary\"").unwrap()..];
    let summary = &summary[..summary.find("</p>").unwrap()];
    assert!(summary.contains(">other lineage</span>"), "{summary}");
    assert!(
        summary.contains("Version 2 is in lineage <code class=\"lineage\">3</code> and version 1 is in lineage <code class=\"lineage\">2</code>"),
        "{summary}"
    );
    assert!(!summary.contains("verdict breaks"), "{summary}");
    assert!(
        diff.body.contains("data-backward=\"breaks\""),
        "the changes still say what breaks across lineages"
    );

    let subject = get(&app, "/ui/subjects/orders-value").await;
    assert!(
        subject
            .body
            .contains("<th scope=\"col\">Lineage (<code>application.major_version</code>)</th>"),
        "{}",
        subject.body
    );
    assert!(
        subject
            .body
            .contains("matrix</a></td><td class=\"keep\"><code class=\"lineage\">3</code></td></tr>")
    );

    let pair = get(&app, "/subjects/orders-value/versions/1/diff/2").await;
    let pair: Value = serde_json::from_str(&pair.body).unwrap();
    assert_eq!(pair["otherLineage"], true, "{pair}");
    assert_eq!(
        pair["compatible"]["BACKWARD"], false,
        "what would break across lineages: {pair}"
    );

    let json = get(&app, "/compatibility/subjects/orders-value/versions/latest/matrix").await;
    let json: Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(json["compatibilityGroup"], "application.major_version");
    assert_eq!(json["lineage"], "3");
    assert_eq!(json["rows"][0]["otherLineage"], true, "{json}");
    assert_eq!(json["rows"][0]["lineage"], "2", "{json}");

    // A third version in lineage 3 is judged against the second, and says so.
    let mut third = example_registration("contracts/12-orders-v3.yaml");
    let text = third["schema"].as_str().unwrap().replace(
        r#"{"name": "currency", "type": "string", "default": "EUR"}"#,
        r#"{"name": "currency", "type": "string", "default": "EUR"}, {"name": "note", "type": ["null", "string"], "default": null}"#,
    );
    assert!(text.contains("\"note\""), "{text}");
    third["schema"] = json!(text);
    api(&app, "POST", "/subjects/orders-value/versions", third).await;
    let diff = get(&app, "/ui/subjects/orders-value/diff?from=2&to=3").await;
    assert!(
        diff.body
            .contains("Both are in lineage <code class=\"lineage\">3</code> of compatibility group"),
        "{}",
        diff.body
    );
    assert!(
        diff.body.contains("FULL <span class=\"verdict ok\">compatible</span>"),
        "{}",
        diff.body
    );
}

#[tokio::test]
async fn the_sandbox_judges_a_draft_and_registers_nothing() {
    let (app, _dir) = app(None).await;
    history(&app).await;
    let form = |schema: &str| {
        let body = format!("schema_type=AVRO&schema={}", schemaops::ui::html::segment(schema));
        Request::post("/ui/subjects/solid/sandbox")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap()
    };
    let answer = send(&app, form(&solid(r#",{"name":"faces","type":"string"}"#))).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert!(
        answer.body.contains("BACKWARD, the draft is incompatible"),
        "{}",
        answer.body
    );
    assert!(answer.body.contains("data-mode=\"FORWARD\" data-verdict=\"breaks\""));
    let broken = send(&app, form("{not a schema")).await;
    assert_eq!(broken.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(broken.body.contains("The draft cannot be checked"), "{}", broken.body);
    let versions = get(&app, "/subjects/solid/versions").await;
    assert_eq!(versions.body, "[1,2,3]", "a draft is never registered");
    let without_schema = Request::post("/ui/subjects/solid/sandbox")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from("schema_type=AVRO"))
        .unwrap();
    let answer = send(&app, without_schema).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    assert!(answer.body.contains("missing field `schema`"), "{}", answer.body);
    assert_eq!(answer.headers["content-type"], "text/html; charset=utf-8");
}

/// A form post to a subject's sandbox.
fn draft(subject: &str, fields: &[(&str, &str)]) -> Request<Body> {
    let body: Vec<String> = fields
        .iter()
        .map(|(name, value)| format!("{name}={}", schemaops::ui::html::segment(value)))
        .collect();
    Request::post(format!("/ui/subjects/{subject}/sandbox"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(body.join("&")))
        .unwrap()
}

/// The text of a textarea of a page, unescaped.
fn textarea(body: &str, id: &str) -> String {
    let start = body
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id}: {body}"));
    let start = start + body[start..].find('>').unwrap() + 1;
    let end = start + body[start..].find("</textarea>").unwrap();
    body[start..end]
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[tokio::test]
async fn the_sandbox_checks_with_the_latest_versions_references_and_the_drafts_metadata() {
    let (app, _dir) = app(None).await;
    let money = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/evolution/30-money-proto.yaml"),
    )
    .unwrap();
    let documents: Vec<Value> = serde_saphyr::from_multiple(&money).unwrap();
    let money = documents[0]["data"]["money.proto"].clone();
    api(
        &app,
        "POST",
        "/subjects/shop-money/versions",
        json!({"schemaType": "PROTOBUF", "schema": money}),
    )
    .await;
    let order = example_spec("evolution/31-order-proto-v1.yaml");
    let body = json!({"schemaType": "PROTOBUF", "schema": order["schema"], "references": order["references"]});
    api(&app, "POST", "/subjects/order-proto-value/versions", body).await;

    // The latest Protobuf order, as the form holds it, checks: its import is carried over.
    let form = get(&app, "/ui/subjects/order-proto-value/sandbox").await;
    assert_eq!(form.status, StatusCode::OK, "{}", form.body);
    let references = textarea(&form.body, "references");
    let listed: Value = serde_json::from_str(&references).unwrap();
    assert_eq!(
        listed,
        json!([{"name": "shop/money.proto", "subject": "shop-money", "version": 1}])
    );
    let text = textarea(&form.body, "draft");
    let fields = [
        ("schema_type", "PROTOBUF"),
        ("schema", text.as_str()),
        ("references", references.as_str()),
    ];
    let answer = send(&app, draft("order-proto-value", &fields)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert!(
        answer.body.contains("BACKWARD, the draft would be accepted"),
        "{}",
        answer.body
    );
    assert_eq!(
        textarea(&answer.body, "references"),
        references,
        "the form keeps what was sent"
    );
    let dropped = [
        ("schema_type", "PROTOBUF"),
        ("schema", text.as_str()),
        ("references", ""),
    ];
    let answer = send(&app, draft("order-proto-value", &dropped)).await;
    assert_eq!(
        answer.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "without its import it cannot be read"
    );
    let garbled = [
        ("schema_type", "PROTOBUF"),
        ("schema", text.as_str()),
        ("references", "[{"),
    ];
    let answer = send(&app, draft("order-proto-value", &garbled)).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        answer.body.contains("the references are not a JSON array"),
        "{}",
        answer.body
    );

    // The draft's metadata picks its lineage.
    orders_in_lineages(&app).await;
    let breaking = example_spec("contracts/13-orders-v2-breaking.yaml");
    let breaking = breaking["schema"].as_str().unwrap();
    let in_lineage = |major: &str| format!(r#"{{"properties": {{"application.major_version": "{major}"}}}}"#);
    let lineage_2 = in_lineage("2");
    let answer = send(
        &app,
        draft("orders-value", &[("schema", breaking), ("metadata", &lineage_2)]),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert!(
        answer.body.contains("BACKWARD, the draft is incompatible"),
        "{}",
        answer.body
    );
    assert!(
        answer
            .body
            .contains("the draft is in lineage <code class=\"lineage\">2</code>"),
        "{}",
        answer.body
    );
    let row = &answer.body[answer
        .body
        .find("<tr data-version=\"1\">")
        .expect("a row for version 1")..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(
        row.contains("<code class=\"lineage\">2</code></td><td><span class=\"verdict breaks\">"),
        "version 1, of lineage 2, is what it breaks: {row}"
    );
    let lineage_4 = in_lineage("4");
    let answer = send(
        &app,
        draft("orders-value", &[("schema", breaking), ("metadata", &lineage_4)]),
    )
    .await;
    assert!(
        answer.body.contains("BACKWARD, the draft would be accepted"),
        "a new lineage: {}",
        answer.body
    );
    assert_eq!(
        answer.body.matches(">other lineage</span>").count(),
        4,
        "both versions, both directions"
    );
    let versions = get(&app, "/subjects/orders-value/versions").await;
    assert_eq!(versions.body, "[1,2]", "a draft is never registered");
}

async fn get_accepting(app: &Router, uri: &str, accept: &str) -> Answer {
    send(
        app,
        Request::get(uri).header("accept", accept).body(Body::empty()).unwrap(),
    )
    .await
}

#[tokio::test]
async fn the_root_sends_a_browser_to_the_pages_and_answers_api_clients_with_an_empty_object() {
    let (app, _dir) = app(None).await;
    let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8";
    for accept in [browser, "text/html", "application/json;q=0.5, text/html"] {
        let answer = get_accepting(&app, "/", accept).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{accept}: {}", answer.body);
        assert_eq!(answer.headers["location"], "/ui/", "{accept}");
    }
    for accept in [
        "",
        "*/*",
        "application/json",
        "application/vnd.schemaregistry.v1+json",
        "application/json, text/html",
        "text/html;q=0.5, application/*",
    ] {
        let answer = get_accepting(&app, "/", accept).await;
        assert_eq!(answer.status, StatusCode::OK, "{accept:?}: {}", answer.body);
        assert_eq!(answer.body, "{}", "{accept:?}");
    }
    let elsewhere = get_accepting(&app, "/subjects", browser).await;
    assert_eq!(elsewhere.body, "[]", "only the root sends browsers on");
}

#[tokio::test]
async fn an_empty_registry_shows_how_to_register_a_first_schema() {
    let (app, _dir) = app(None).await;
    let request = Request::get("/ui/").header("host", "registry.example:8081");
    let empty = send(&app, request.body(Body::empty()).unwrap()).await;
    assert_eq!(empty.status, StatusCode::OK);
    assert!(empty.body.contains("id=\"first-schema\""), "{}", empty.body);
    assert!(
        empty
            .body
            .contains("http://registry.example:8081/subjects/my-topic-value/versions"),
        "{}",
        empty.body
    );
    let hostile = Request::get("/ui/").header("host", "a\"><b>x");
    let hostile = send(&app, hostile.body(Body::empty()).unwrap()).await;
    assert!(!hostile.body.contains("<b>x"), "the Host header is escaped");
    api(
        &app,
        "POST",
        "/subjects/first/versions",
        json!({"schema": "\"string\""}),
    )
    .await;
    let list = get(&app, "/ui/").await;
    assert!(!list.body.contains("first-schema"), "{}", list.body);
    let none_found = get(&app, "/ui/?q=zzz").await;
    assert!(none_found.body.contains("No subjects match") && !none_found.body.contains("first-schema"));
}

#[tokio::test]
async fn a_one_version_subject_has_no_broken_diff_link() {
    let (app, _dir) = app(None).await;
    api(
        &app,
        "POST",
        "/subjects/single/versions",
        json!({"schema": "\"string\""}),
    )
    .await;
    let subject = get(&app, "/ui/subjects/single").await;
    assert_eq!(subject.status, StatusCode::OK);
    assert!(!subject.body.contains("Diff of two versions"), "{}", subject.body);
    let diff = get(&app, "/ui/subjects/single/diff").await;
    assert_eq!(diff.status, StatusCode::OK, "{}", diff.body);
    assert!(diff.body.contains("id=\"nothing-to-compare\""), "{}", diff.body);
    api(
        &app,
        "POST",
        "/subjects/single/versions",
        json!({"schema": "\"bytes\""}),
    )
    .await;
    api(&app, "PUT", "/config/single", json!({"compatibility": "NONE"})).await;
    let two = get(&app, "/ui/subjects/single").await;
    assert!(two.body.contains("Diff of two versions"), "{}", two.body);
}

#[tokio::test]
async fn a_version_page_shows_the_authors_text_references_and_contract() {
    let (app, _dir) = app(None).await;
    let customer = r#"{"type": "record", "name": "Customer", "fields": [{"name": "id", "type": "string"}]}"#;
    api(
        &app,
        "POST",
        "/subjects/customer/versions",
        json!({ "schema": customer }),
    )
    .await;
    let order = r#"{"type":"record","name":"Order","doc":"</code><script>x</script>",
        "fields":[{"name":"customer","type":"Customer"},{"name":"card","type":"string"}]}"#;
    api(
        &app,
        "POST",
        "/subjects/orders/versions",
        json!({
            "schema": order,
            "references": [{"name": "Customer", "subject": "customer", "version": 1}],
            "metadata": {"tags": {"Order.card": ["PII"]}, "properties": {"owner": "payments-team"}},
            "ruleSet": {"domainRules": [{"name": "cardIsMasked", "kind": "CONDITION", "mode": "WRITE",
                "type": "CEL", "expr": "message.card.size() == 4", "params": {"strict": "<yes>"},
                "onSuccess": "NONE", "onFailure": "DLQ"}]}
        }),
    )
    .await;
    let page = get(&app, "/ui/subjects/orders/versions/1").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert_secured(&page);
    let key = |name: &str| {
        page.body
            .find(&format!("<span class=\"tok-key\">&quot;{name}&quot;</span>"))
            .unwrap_or_else(|| panic!("no key {name}: {}", page.body))
    };
    assert!(
        key("type") < key("name") && key("name") < key("doc") && key("doc") < key("fields"),
        "the author's key order"
    );
    assert!(
        page.body.contains("{\n  <span class=\"tok-key\">"),
        "laid out: {}",
        page.body
    );
    assert!(!page.body.contains("<script>x"), "the text is escaped");
    assert!(page.body.contains("data-copies=\"schema-text\""));
    assert!(page.body.contains("href=\"/ui/subjects/orders/versions/1/text\""));
    assert!(page.body.contains("id=\"schema-guid\""));
    assert!(
        page.body.contains("<span class=\"tag pii\">PII</span>"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("<dt>Owner</dt><dd id=\"owner\">payments-team</dd>"),
        "the owner among the facts: {}",
        page.body
    );
    assert!(
        page.body
            .contains("<dd id=\"pii\"><span class=\"tag pii\">PII</span> <code>Order.card</code></dd>"),
        "the elements tagged PII among the facts"
    );
    let rule = &page.body[page
        .body
        .find("<tr data-rule=\"cardIsMasked\">")
        .expect("a row for the rule")..];
    let rule = &rule[..rule.find("</tr>").unwrap()];
    for cell in [
        "<td>Domain</td><td>CONDITION</td><td>WRITE</td><td><code>CEL</code></td>",
        "<td><code>message.card.size() == 4</code></td>",
        "<td><code>strict</code> = <code>&lt;yes&gt;</code><br></td>",
        "<td><code>NONE</code></td><td><code>DLQ</code></td>",
    ] {
        assert!(rule.contains(cell), "{cell} in {rule}");
    }
    assert!(
        page.body
            .contains("href=\"/ui/subjects/customer/versions/1\">customer v1</a>")
    );
    let referenced = get(&app, "/ui/subjects/customer/versions/1").await;
    assert!(
        referenced
            .body
            .contains("href=\"/ui/subjects/orders/versions/1\">orders v1</a>"),
        "{}",
        referenced.body
    );
    assert!(referenced.body.contains("No metadata and no rules."));
    let file = get(&app, "/ui/subjects/orders/versions/1/text").await;
    assert_eq!(file.status, StatusCode::OK);
    assert_eq!(
        file.headers["content-disposition"],
        "attachment; filename=\"orders-v1.avsc\""
    );
    assert!(
        file.body
            .starts_with("{\n  \"type\": \"record\",\n  \"name\": \"Order\""),
        "{}",
        file.body
    );
    let subject = get(&app, "/ui/subjects/orders").await;
    assert!(subject.body.contains("href=\"/ui/subjects/orders/versions/1\""));
    assert!(subject.body.contains("id=\"latest-text\""), "{}", subject.body);
    let missing = get(&app, "/ui/subjects/orders/versions/9").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[test]
fn the_registry_logs_the_address_of_its_pages_at_start_up() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["registry", "--listen", "127.0.0.1:0", "--data"])
        .arg(data.path())
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the schemaops binary starts");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let address = first
        .trim()
        .strip_prefix("listening on ")
        .expect("the address")
        .to_owned();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (lines, logged) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let wanted = format!("http://{address}/ui/");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut found = None;
    while let Ok(line) = logged.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
        if line.contains(&wanted) {
            found = Some(line);
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(found.is_some(), "no log line names {wanted}");
}

#[tokio::test]
async fn pages_need_the_apis_read_credentials() {
    let reader = Credential::parse("reader-token").unwrap();
    let writer = Credential::parse("writer-token").unwrap();
    let (app, _dir) = app(Auth::new(&[reader], &[writer]).map(Arc::new)).await;
    let anonymous = get(&app, "/ui/").await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert!(
        anonymous.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Basic")
    );
    let request = Request::get("/ui/").header("authorization", "Bearer reader-token");
    let allowed = send(&app, request.body(Body::empty()).unwrap()).await;
    assert_eq!(allowed.status, StatusCode::OK);
    let sandbox = Request::post("/ui/subjects/s/sandbox")
        .header("authorization", "Bearer reader-token")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from("schema=%22int%22"))
        .unwrap();
    assert_eq!(
        send(&app, sandbox).await.status,
        StatusCode::OK,
        "a reader may try drafts"
    );
}

#[tokio::test]
async fn one_unreadable_stored_schema_breaks_neither_the_list_nor_the_subject_page() {
    let dir = {
        let (app, dir) = app(None).await;
        history(&app).await;
        api(&app, "POST", "/subjects/other/versions", json!({"schema": "\"int\""})).await;
        dir
    };
    // A stored text the engine cannot read (as after a hand edit, or an
    // engine grown stricter), written behind the registry's back.
    let connection = rusqlite::Connection::open(dir.path().join("registry.db")).unwrap();
    let changed = connection
        .execute(
            "UPDATE schemas SET text = '{\"type\": \"record\", broken' WHERE id = 2",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(connection);
    let store = Arc::new(SqliteStore::open(&dir.path().join("registry.db")).unwrap());
    let registry = EmbeddedRegistry::open(store, Checker::default()).await.unwrap();
    let state = ApiState {
        registry: Arc::new(registry),
        body_limit: 1 << 20,
        auth: None,
        policies: None,
        admission: None,
    };
    let app = schemaops::ui::router(state, None);
    let list = get(&app, "/ui/").await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    assert!(list.body.contains("data-subject=\"solid\"") && list.body.contains("data-subject=\"other\""));
    assert_eq!(get(&app, "/ui/subjects/solid").await.status, StatusCode::OK);
    let diff = get(&app, "/ui/subjects/solid/diff?from=2&to=3").await;
    assert_eq!(diff.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", diff.body);
    assert!(
        diff.body.contains("version 2 of subject `solid` cannot be read"),
        "{}",
        diff.body
    );
    assert!(!diff.body.contains("panicked"));
    let fine = get(&app, "/ui/subjects/solid/diff?from=1&to=3").await;
    assert_eq!(fine.status, StatusCode::OK, "the other versions still compare");
}

/// The operator's cache, as the pages see it: one stalled Schema object.
struct StalledOwner;

impl schemaops::ui::owners::Owners for StalledOwner {
    fn of_subject(&self, subject: &str) -> Vec<schemaops::ui::owners::Owner> {
        use schemaops::ui::owners::{Owner, OwnerState};
        if subject != "solid" {
            return Vec::new();
        }
        vec![Owner {
            object: "default/<b>solid</b>".to_owned(),
            version: Some(2),
            state: OwnerState::Stalled {
                reason: "IncompatibleSchema".to_owned(),
                message: "refused under BACKWARD".to_owned(),
            },
            incompatibilities: vec!["READER_FIELD_MISSING_DEFAULT_VALUE at /fields/3 (version 2): edges".to_owned()],
            total: 3,
            policy_warning: Some("level <b>NONE</b> is below the floor".to_owned()),
        }]
    }
}

#[tokio::test]
async fn under_the_operator_a_subject_shows_its_schema_objects_and_their_state() {
    let (api_app, dir) = app(None).await;
    history(&api_app).await;
    let store = Arc::new(SqliteStore::open(&dir.path().join("registry.db")).unwrap());
    let registry = EmbeddedRegistry::open(store, Checker::default()).await.unwrap();
    let state = ApiState {
        registry: Arc::new(registry),
        body_limit: 1 << 20,
        auth: None,
        policies: None,
        admission: None,
    };
    let app = schemaops::ui::router(state, Some(Arc::new(StalledOwner)));
    let page = get(&app, "/ui/subjects/solid").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("<table id=\"owners\">"), "{}", page.body);
    assert!(page.body.contains("default/&lt;b&gt;solid&lt;/b&gt;"));
    assert!(
        page.body
            .contains("Stalled</span> IncompatibleSchema: refused under BACKWARD")
    );
    assert!(
        page.body
            .contains("READER_FIELD_MISSING_DEFAULT_VALUE at /fields/3 (version 2): edges")
    );
    assert!(page.body.contains("and 2 more"));
    assert!(
        page.body
            .contains("SchemaPolicy warning</span> level &lt;b&gt;NONE&lt;/b&gt; is below the floor"),
        "{}",
        page.body
    );
    let without = get(&api_app, "/ui/subjects/solid").await;
    assert!(
        !without.body.contains("id=\"owners\""),
        "schemaops registry has no Schema objects"
    );
}

/// Issue 41 item 4: `schemaops registry --data` on a folder `apply` wrote
/// shows each subject's last refused attempt and the policies' verdicts,
/// read from the `objects.json` there.
#[tokio::test]
async fn on_an_apply_folder_a_subject_shows_its_last_refused_attempt_and_policy_verdicts() {
    let (api_app, dir) = app(None).await;
    history(&api_app).await;
    let condition = |kind: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": "True", "reason": reason, "message": message,
               "lastTransitionTime": "2026-12-06T10:00:00Z"})
    };
    let schema = |name: &str, conditions: Value, compatibility: Value| {
        json!({
            "apiVersion": "schemaops.dev/v1alpha1", "kind": "Schema",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"subject": "solid", "schemaType": "AVRO", "schema": "\"int\""},
            "status": {"subject": "solid", "version": 2, "conditions": conditions, "compatibility": compatibility},
        })
    };
    let objects = json!({"schemas": [
        schema(
            "solid-refused",
            json!([condition("Stalled", "IncompatibleSchema", "the schema is not BACKWARD compatible with version 3")]),
            json!({"mode": "BACKWARD", "checkedVersions": [3], "total": 1, "incompatibilities": [
                {"kind": "READER_FIELD_MISSING_DEFAULT_VALUE", "path": "/fields/4", "version": 3,
                 "message": "field `<i>edges</i>` has no default"}]}),
        ),
        schema(
            "solid-warned",
            json!([condition("Ready", "Registered", ""),
                   condition("PolicyWarning", "PolicyViolation", "policy team-floor: BACKWARD is below FULL")]),
            Value::Null,
        ),
    ]});
    assert!(
        schemaops::ui::owners::AppliedObjects::in_folder(dir.path()).is_none(),
        "no objects.json yet"
    );
    std::fs::write(dir.path().join("objects.json"), objects.to_string()).unwrap();
    let applied = schemaops::ui::owners::AppliedObjects::in_folder(dir.path()).unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("registry.db")).unwrap());
    let registry = EmbeddedRegistry::open(store, Checker::default()).await.unwrap();
    let state = ApiState {
        registry: Arc::new(registry),
        body_limit: 1 << 20,
        auth: None,
        policies: None,
        admission: None,
    };
    let app = schemaops::ui::router(state, Some(Arc::new(applied)));
    let page = get(&app, "/ui/subjects/solid").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    for says in [
        "<td>shop/solid-refused</td>",
        "Stalled</span> IncompatibleSchema: the schema is not BACKWARD compatible with version 3",
        "READER_FIELD_MISSING_DEFAULT_VALUE at /fields/4 (version 3): field `&lt;i&gt;edges&lt;/i&gt;` has no default",
        "<td>shop/solid-warned</td>",
        "SchemaPolicy warning</span> policy team-floor: BACKWARD is below FULL",
    ] {
        assert!(page.body.contains(says), "{says}: {}", page.body);
    }
}
