//! `schemaops registry` authentication as a client meets it (issue 14, item
//! 3): it fails closed. Protected reads imply protected writes; configured
//! credentials that end up empty stop the start; readers may make the
//! read-only POSTs a serializer with `auto.register.schemas=false` makes.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::json;
use support::registry::RegistryProcess;

const SCHEMA: &str = r#"{"type":"record","name":"R","fields":[{"name":"f","type":"long"}]}"#;

fn basic(user_password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(user_password)
    )
}

async fn send(method: reqwest::Method, url: String, authorization: Option<&str>) -> StatusCode {
    let mut request = support::http_client().request(method.clone(), url);
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    if method == reqwest::Method::POST {
        request = request.json(&json!({ "schema": SCHEMA }));
    }
    if method == reqwest::Method::PUT {
        request = request.json(&json!({ "compatibility": "NONE" }));
    }
    request.send().await.unwrap().status()
}

#[tokio::test]
async fn with_only_read_credentials_nobody_anonymous_writes() {
    let data = tempfile::tempdir().unwrap();
    let server = RegistryProcess::start_with(data.path(), &["--read-credentials", "reader-token"]).await;
    let url = |path: &str| format!("{}{path}", server.url);
    use reqwest::Method;
    for (method, path) in [
        (Method::POST, "/subjects/s/versions"),
        (Method::PUT, "/config"),
        (Method::PUT, "/config/s"),
        (Method::DELETE, "/subjects/s"),
        (Method::DELETE, "/config"),
    ] {
        assert_eq!(
            send(method.clone(), url(path), None).await,
            StatusCode::UNAUTHORIZED,
            "anonymous {method} {path}"
        );
        assert_eq!(
            send(method.clone(), url(path), Some("Bearer reader-token")).await,
            StatusCode::UNAUTHORIZED,
            "a reader's {method} {path}"
        );
    }
    assert_eq!(
        send(Method::GET, url("/subjects"), None).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        send(Method::GET, url("/subjects"), Some("Bearer reader-token")).await,
        StatusCode::OK
    );
}

#[tokio::test]
async fn readers_may_look_up_and_test_compatibility_but_not_register() {
    let data = tempfile::tempdir().unwrap();
    let server = RegistryProcess::start_with(
        data.path(),
        &["--read-credentials", "reader-token", "--write-credentials", "ci:s3cret"],
    )
    .await;
    let url = |path: &str| format!("{}{path}", server.url);
    use reqwest::Method;
    let writer = basic("ci:s3cret");
    assert_eq!(
        send(Method::POST, url("/subjects/s/versions"), Some(&writer)).await,
        StatusCode::OK
    );
    let reader = Some("Bearer reader-token");
    assert_eq!(send(Method::POST, url("/subjects/s"), reader).await, StatusCode::OK);
    for path in [
        "/compatibility/subjects/s/versions",
        "/compatibility/subjects/s/versions/latest",
    ] {
        assert_eq!(send(Method::POST, url(path), reader).await, StatusCode::OK, "{path}");
        assert_eq!(
            send(Method::POST, url(path), None).await,
            StatusCode::UNAUTHORIZED,
            "anonymous {path}"
        );
    }
    assert_eq!(
        send(Method::POST, url("/subjects/s/versions"), reader).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        send(Method::POST, url("/subjects/s/versions?normalize=true"), reader).await,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn the_scheme_is_case_insensitive_and_a_bearer_token_may_hold_a_colon() {
    let data = tempfile::tempdir().unwrap();
    let credentials = data.path().join("writers");
    std::fs::write(&credentials, "# CI\nci:s3cret\nbearer abc:def==\n").unwrap();
    let server = RegistryProcess::start_with(
        data.path(),
        &["--write-credentials-file", credentials.to_str().unwrap()],
    )
    .await;
    let url = format!("{}/subjects/s/versions", server.url);
    let encoded = base64::engine::general_purpose::STANDARD.encode("ci:s3cret");
    for authorization in [
        format!("basic {encoded}"),
        format!("BASIC {encoded}"),
        format!("Basic  {encoded}"),
        "Bearer abc:def==".to_owned(),
        "bearer abc:def==".to_owned(),
    ] {
        assert_eq!(
            send(reqwest::Method::POST, url.clone(), Some(&authorization)).await,
            StatusCode::OK,
            "{authorization}"
        );
    }
    for wrong in [
        basic("ci:wrong"),
        "Bearer abc".to_owned(),
        "Bearer ci:s3cret".to_owned(),
        format!("Bearer {encoded}"),
        "Basic !!!".to_owned(),
    ] {
        assert_eq!(
            send(reqwest::Method::POST, url.clone(), Some(&wrong)).await,
            StatusCode::UNAUTHORIZED,
            "{wrong}"
        );
    }
}

/// Runs `schemaops registry` expecting it to refuse to start; returns its stderr.
fn refused_start(args: &[&str], env: &[(&str, &str)]) -> String {
    let data = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_schemaops"));
    command
        .args(["registry", "--listen", "127.0.0.1:0", "--data"])
        .arg(data.path())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the registry started with {args:?} {env:?}; it must refuse");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert_eq!(status.code(), Some(2), "{args:?} {env:?}: {stderr}");
    stderr
}

#[test]
fn configured_credentials_that_end_up_empty_stop_the_start() {
    let folder = tempfile::tempdir().unwrap();
    let empty = folder.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    let comments = folder.path().join("comments");
    std::fs::write(&comments, "# nobody yet\n\n   \n").unwrap();
    for file in [&empty, &comments] {
        for flag in ["--write-credentials-file", "--read-credentials-file"] {
            let stderr = refused_start(&[flag, file.to_str().unwrap()], &[]);
            assert!(
                stderr.contains(flag)
                    && stderr.contains(&file.display().to_string())
                    && stderr.contains("no credentials"),
                "{stderr}"
            );
        }
    }
    for value in ["", ",,,", " , "] {
        let stderr = refused_start(&[], &[("SCHEMAOPS_WRITE_CREDENTIALS", value)]);
        assert!(
            stderr.contains("SCHEMAOPS_WRITE_CREDENTIALS") && stderr.contains("no credentials"),
            "{value:?}: {stderr}"
        );
        let stderr = refused_start(&["--read-credentials", value], &[]);
        assert!(
            stderr.contains("--read-credentials") && stderr.contains("no credentials"),
            "{value:?}: {stderr}"
        );
    }
}

#[test]
fn the_start_log_says_how_requests_are_authenticated() {
    let cases: [(&[&str], &str); 3] = [
        (&[], "authentication is off"),
        (&["--read-credentials", "r"], "writes are refused"),
        (&["--write-credentials", "w"], "reads are open"),
    ];
    for (args, expected) in cases {
        let data = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_schemaops"))
            .args(["registry", "--listen", "127.0.0.1:0", "--data"])
            .arg(data.path())
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("listening on"), "{line}");
        let _ = child.kill();
        let _ = child.wait();
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// GitOps-only with protected reads: an anonymous client learns nothing (401), a reader or a
/// writer is told writes go through resources (403, 40301), an admin writes.
#[tokio::test]
async fn gitops_only_refuses_every_write_but_an_admins_and_keeps_reads_protected() {
    let data = tempfile::tempdir().unwrap();
    let server = RegistryProcess::start_with(
        data.path(),
        &[
            "--rest-writes",
            "gitops-only",
            "--read-credentials",
            "reader-token",
            "--write-credentials",
            "ci:s3cret",
            "--admin-credentials",
            "basic root:toor",
        ],
    )
    .await;
    let url = |path: &str| format!("{}{path}", server.url);
    use reqwest::Method;
    assert_eq!(
        send(Method::GET, url("/subjects"), None).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        send(Method::POST, url("/subjects/s/versions"), None).await,
        StatusCode::UNAUTHORIZED,
        "an anonymous client is not told what the registry is"
    );
    for who in ["Bearer reader-token", basic("ci:s3cret").as_str()] {
        assert_eq!(
            send(Method::POST, url("/subjects/s/versions"), Some(who)).await,
            StatusCode::FORBIDDEN,
            "{who}"
        );
        assert_eq!(
            send(Method::PUT, url("/config/s"), Some(who)).await,
            StatusCode::FORBIDDEN,
            "{who}"
        );
    }
    let admin = basic("root:toor");
    assert_eq!(
        send(Method::POST, url("/subjects/s/versions"), Some(&admin)).await,
        StatusCode::OK
    );
    assert_eq!(
        send(Method::GET, url("/subjects"), Some("Bearer reader-token")).await,
        StatusCode::OK
    );
    let answer = support::http_client()
        .delete(url("/subjects/s"))
        .bearer_auth("reader-token")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);
    let body: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(body["error_code"], 40301, "{body}");
}
