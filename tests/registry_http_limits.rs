//! The registry's HTTP server against slow and idle clients (issue 14,
//! item 5): headers, idle keep-alive sockets and request bodies are cut off
//! after their limits, and stalled connections cannot exceed the connection
//! limit. Raw sockets play the misbehaving clients; every read has a deadline.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::registry::RegistryProcess;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Time a test allows beyond a limit for the server to act on it.
const SLACK: Duration = Duration::from_secs(3);

/// Starts a registry with short limits (in seconds) and any extra flags.
async fn start(data: &std::path::Path, header: u64, idle: u64, body: u64, extra: &[&str]) -> RegistryProcess {
    let (header, idle, body) = (header.to_string(), idle.to_string(), body.to_string());
    let mut args = vec![
        "--header-timeout-seconds",
        &header,
        "--idle-timeout-seconds",
        &idle,
        "--body-timeout-seconds",
        &body,
    ];
    args.extend_from_slice(extra);
    RegistryProcess::start_with(data, &args).await
}

async fn connect(server: &RegistryProcess) -> TcpStream {
    let address = server.url.strip_prefix("http://").expect("an http URL");
    TcpStream::connect(address)
        .await
        .expect("the registry accepts connections")
}

/// Reads until the server closes the connection (EOF or reset) and returns
/// what it sent, or `None` when it is still open after `limit`.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(limit, async {
        let mut buffer = [0_u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(count) => received.extend_from_slice(&buffer[..count]),
            }
        }
    });
    read.await.ok().map(|()| received)
}

/// Reads one whole response (head and `Content-Length` body) within `limit`.
async fn read_response(stream: &mut TcpStream, limit: Duration) -> String {
    let mut received = Vec::new();
    let read = tokio::time::timeout(limit, async {
        let mut buffer = [0_u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&received);
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if received.len() >= end + 4 + length {
                    return;
                }
            }
            let count = stream.read(&mut buffer).await.expect("the response is readable");
            assert!(count > 0, "the connection closed mid-response: {text:?}");
            received.extend_from_slice(&buffer[..count]);
        }
    });
    read.await.expect("the response arrives in time");
    String::from_utf8(received).expect("the response is text")
}

#[tokio::test]
async fn a_request_header_never_finished_is_closed_after_the_header_timeout() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), 1, 30, 30, &[]).await;
    let stream = connect(&server).await;
    let started = Instant::now();
    let (mut reader, mut writer) = stream.into_split();
    // A byte every 300 ms: the limit is on the whole head, not on each read.
    let trickle = tokio::spawn(async move {
        for byte in b"GET /subjects HTTP/1.1\r\nHost: registry\r\nX-Slow: ".iter().cycle() {
            if writer.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
    let closed = tokio::time::timeout(Duration::from_secs(1) + SLACK, async {
        let mut buffer = [0_u8; 1024];
        while let Ok(count) = reader.read(&mut buffer).await {
            if count == 0 {
                break;
            }
        }
    })
    .await;
    trickle.abort();
    assert!(
        closed.is_ok(),
        "the half-sent header is still open after {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() >= Duration::from_millis(800),
        "closed after {:?}, before the header timeout",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let data = tempfile::tempdir().unwrap();
    // The idle limit (3 s) differs from the header limit (1 s): each one counts.
    let server = start(data.path(), 1, 3, 30, &[]).await;
    let mut stream = connect(&server).await;
    stream
        .write_all(b"GET /subjects HTTP/1.1\r\nHost: registry\r\n\r\n")
        .await
        .unwrap();
    let response = read_response(&mut stream, Duration::from_secs(5)).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let answered = Instant::now();
    let rest = read_until_closed(&mut stream, Duration::from_secs(3) + SLACK).await;
    assert_eq!(
        rest.as_deref(),
        Some(&b""[..]),
        "the idle connection is closed without another byte, within the idle timeout"
    );
    assert!(
        answered.elapsed() >= Duration::from_millis(2500),
        "closed after {:?}: the idle timeout, not the header timeout, applies between requests",
        answered.elapsed()
    );
}

#[tokio::test]
async fn a_body_trickling_one_byte_per_half_second_is_answered_408_after_the_body_timeout() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), 5, 30, 2, &[]).await;
    let stream = connect(&server).await;
    let started = Instant::now();
    let (mut reader, mut writer) = stream.into_split();
    let trickle = tokio::spawn(async move {
        let head = "POST /subjects/slow/versions HTTP/1.1\r\nHost: registry\r\n\
                    Content-Type: application/vnd.schemaregistry.v1+json\r\nContent-Length: 1000\r\n\r\n";
        if writer.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for _ in 0..1000 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            if writer.write_all(b" ").await.is_err() {
                return;
            }
        }
    });
    let mut received = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(2) + SLACK, async {
        let mut buffer = [0_u8; 4096];
        while let Ok(count) = reader.read(&mut buffer).await {
            if count == 0 {
                break;
            }
            received.extend_from_slice(&buffer[..count]);
        }
    })
    .await;
    trickle.abort();
    assert!(
        closed.is_ok(),
        "the trickling body is still open after {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "cut off after {:?}, before the body timeout",
        started.elapsed()
    );
    // Usually the 408 arrives; a reset racing it may drop it, which is still a close.
    let response = String::from_utf8_lossy(&received);
    if !response.is_empty() {
        assert!(response.starts_with("HTTP/1.1 408"), "{response}");
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body)
            .unwrap_or_default();
        let error: Value = serde_json::from_str(body).expect("the 408 body is JSON");
        assert_eq!(error["error_code"], 408, "{error}");
        assert!(error["message"].as_str().is_some_and(|message| !message.is_empty()));
    }
}

#[tokio::test]
async fn stalled_connections_never_exceed_the_limit_and_the_server_answers_once_they_time_out() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), 2, 30, 30, &["--max-connections", "8"]).await;
    let mut stalled = Vec::new();
    for _ in 0..8 {
        let mut stream = connect(&server).await;
        stream.write_all(b"GET /subjects HTTP/1.1\r\nHost: ").await.unwrap();
        stalled.push(stream);
    }
    let started = Instant::now();
    // The kernel completes the handshake; the server takes the request only once a slot frees.
    let mut ninth = connect(&server).await;
    ninth
        .write_all(b"GET /subjects HTTP/1.1\r\nHost: registry\r\n\r\n")
        .await
        .unwrap();
    let response = read_response(&mut ninth, Duration::from_secs(2) + SLACK).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "answered after {:?}, while 8 stalled connections held every slot",
        started.elapsed()
    );
    for stream in &mut stalled {
        assert!(
            read_until_closed(stream, SLACK).await.is_some(),
            "every stalled connection is closed"
        );
    }
    let reply = support::http_client()
        .get(format!("{}/subjects", server.url))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .expect("a normal GET is served after the stalled connections time out");
    assert!(reply.status().is_success());
}

#[tokio::test]
async fn keep_alive_clients_making_many_requests_work_unchanged() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), 1, 2, 2, &[]).await;
    let client = support::http_client();
    let schema = json!({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]});
    let registered = client
        .post(format!("{}/subjects/orders/versions", server.url))
        .json(&json!({ "schema": schema.to_string() }))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .unwrap();
    assert!(registered.status().is_success(), "{}", registered.text().await.unwrap());
    // A few concurrent clients, each reusing its pooled connection.
    let requests = (0..4).map(|_| {
        let client = client.clone();
        let url = format!("{}/subjects/orders/versions", server.url);
        tokio::spawn(async move {
            for _ in 0..25 {
                let reply = client.get(&url).timeout(Duration::from_secs(5)).send().await.unwrap();
                let versions: Value = reply.json().await.unwrap();
                assert_eq!(versions, json!([1]));
            }
        })
    });
    for request in requests {
        request.await.unwrap();
    }
    // Pauses shorter and longer than the idle timeout: reused or reconnected, both work.
    for pause in [Duration::from_millis(1000), Duration::from_millis(3000)] {
        tokio::time::sleep(pause).await;
        let reply = client
            .get(format!("{}/subjects", server.url))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.json::<Value>().await.unwrap(), json!(["orders"]));
    }
}

/// Sends `request` on a new connection and returns the status, the
/// `Content-Type` and the JSON body of the answer.
async fn answer(server: &RegistryProcess, request: &[u8]) -> (u16, String, Value) {
    let mut stream = connect(server).await;
    stream.write_all(request).await.expect("the request is sent");
    let response = read_response(&mut stream, SLACK).await;
    let (head, body) = response.split_once("\r\n\r\n").expect("a whole response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {head}"));
    let content_type = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-type")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    let document = serde_json::from_str(body).unwrap_or_else(|_| panic!("a JSON body: {response:?}"));
    (status, content_type, document)
}

fn small_fields(count: usize) -> String {
    (0..count).map(|i| format!("X-{i:04}: v\r\n")).collect()
}

/// Issue 20: hyper copied room for as many header fields as fit in the byte
/// limit (1,639) on every request, a tenth of the registry's CPU under load.
/// The number of fields has its own limit now, 100 by default (Apache
/// httpd's and Tomcat's): a head with more is answered 431 with Confluent's
/// error JSON naming that limit (hyper answers beyond twice the limit, and
/// that answer carries the JSON too), and `--max-header-fields` raises it.
#[tokio::test]
async fn header_fields_beyond_their_number_limit_get_431_and_the_flag_raises_it() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), 10, 30, 30, &[]).await;
    let head = |count: usize| format!("GET /subjects HTTP/1.1\r\nHost: r\r\n{}\r\n", small_fields(count));

    let (status, _, document) = answer(&server, head(99).as_bytes()).await;
    assert_eq!((status, document), (200, json!([])), "100 fields with Host");
    let (status, content_type, document) = answer(&server, head(150).as_bytes()).await;
    assert_eq!(
        (status, content_type.as_str()),
        (431, "application/vnd.schemaregistry.v1+json")
    );
    assert_eq!(document["error_code"], 431, "{document}");
    assert_eq!(
        document["message"],
        "the request has 151 header fields, over the limit of 100"
    );
    let mut stream = connect(&server).await;
    stream.write_all(head(500).as_bytes()).await.unwrap();
    let response = read_response(&mut stream, SLACK).await;
    assert!(response.starts_with("HTTP/1.1 431 "), "{response}");

    drop(server);
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), 10, 30, 30, &["--max-header-fields", "1000"]).await;
    // Many small fields within both limits pass; over the byte limit they get 431.
    let (status, _, document) = answer(&server, head(700).as_bytes()).await;
    assert_eq!((status, document), (200, json!([])));
    let (status, _, document) = answer(&server, head(900).as_bytes()).await;
    assert_eq!((status, &document["error_code"]), (431, &json!(431)));
    let message = document["message"].as_str().unwrap();
    assert!(message.contains("over the limit of 8192 bytes"), "{message}");
}

/// Issue 14: hyper answered too-large heads itself, with empty bodies. A
/// long URI gets 414 and large header fields 431, each with Confluent's
/// error JSON naming the limit (8 KiB by default, or as the flags set it),
/// and the server goes on serving.
#[tokio::test]
async fn a_long_uri_and_large_headers_get_414_and_431_with_confluent_error_json() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), 10, 30, 30, &[]).await;
    let vnd = "application/vnd.schemaregistry.v1+json";

    let long_uri = format!(
        "GET /subjects/{} HTTP/1.1\r\nHost: registry\r\n\r\n",
        "a".repeat(20_000)
    );
    let (status, content_type, document) = answer(&server, long_uri.as_bytes()).await;
    assert_eq!((status, content_type.as_str()), (414, vnd));
    assert_eq!(document["error_code"], 414, "{document}");
    assert_eq!(
        document["message"],
        "the request URI is 20010 bytes, over the limit of 8192 bytes"
    );

    let large_header = format!(
        "GET /subjects HTTP/1.1\r\nHost: registry\r\nX-Large: {}\r\n\r\n",
        "b".repeat(20_000)
    );
    let (status, content_type, document) = answer(&server, large_header.as_bytes()).await;
    assert_eq!((status, content_type.as_str()), (431, vnd));
    assert_eq!(document["error_code"], 431, "{document}");
    let message = document["message"].as_str().unwrap();
    assert!(message.contains("over the limit of 8192 bytes"), "{message}");

    let (status, _, document) = answer(
        &server,
        b"GET /subjects HTTP/1.1\r\nHost: registry\r\nX-Fine: ok\r\n\r\n",
    )
    .await;
    assert_eq!((status, document), (200, json!([])));

    let client = support::http_client();
    let reply = client
        .get(format!("{}/subjects", server.url))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .expect("the server still answers");
    assert_eq!(reply.json::<Value>().await.unwrap(), json!([]));

    drop(server);
    let data = tempfile::tempdir().unwrap();
    let server = start(
        data.path(),
        10,
        30,
        30,
        &["--max-uri-bytes", "100", "--max-header-bytes", "200"],
    )
    .await;
    let (status, _, document) = answer(
        &server,
        format!("GET /{} HTTP/1.1\r\nHost: r\r\n\r\n", "c".repeat(100)).as_bytes(),
    )
    .await;
    assert_eq!(status, 414);
    assert!(
        document["message"]
            .as_str()
            .unwrap()
            .ends_with("over the limit of 100 bytes"),
        "{document}"
    );
    let (status, _, document) = answer(
        &server,
        format!("GET / HTTP/1.1\r\nHost: r\r\nX-A: {}\r\n\r\n", "d".repeat(200)).as_bytes(),
    )
    .await;
    assert_eq!(status, 431);
    assert!(
        document["message"]
            .as_str()
            .unwrap()
            .ends_with("over the limit of 200 bytes"),
        "{document}"
    );
}

/// Issue 37, item 10: heads far beyond the limits, and heads hyper cannot
/// parse at all, were answered by hyper itself with empty bodies. Every
/// such answer now carries Confluent's error JSON naming the limit or the
/// problem: a 70 KB URI (over hyper's own 64 KiB target limit) gets 414, a
/// 1 MB header field (over hyper's read buffer) 431, more fields than hyper
/// reads 431, and a malformed request line or header field 400. The server
/// goes on serving.
#[tokio::test]
async fn heads_hyper_refuses_itself_get_confluent_error_json_too() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), 10, 30, 30, &[]).await;
    let vnd = "application/vnd.schemaregistry.v1+json";

    let huge_uri = format!("GET /subjects/{} HTTP/1.1\r\nHost: r\r\n\r\n", "a".repeat(70_000));
    let (status, content_type, document) = answer(&server, huge_uri.as_bytes()).await;
    assert_eq!((status, content_type.as_str()), (414, vnd), "{document}");
    assert_eq!(document["error_code"], 414, "{document}");
    let message = document["message"].as_str().unwrap();
    assert!(message.contains("URI") && message.contains("8192 bytes"), "{message}");

    let huge_header = format!(
        "GET /subjects HTTP/1.1\r\nHost: r\r\nX-Huge: {}\r\n\r\n",
        "b".repeat(1024 * 1024)
    );
    let (status, content_type, document) = answer(&server, huge_header.as_bytes()).await;
    assert_eq!((status, content_type.as_str()), (431, vnd), "{document}");
    assert_eq!(document["error_code"], 431, "{document}");
    let message = document["message"].as_str().unwrap();
    assert!(message.contains("8192 bytes"), "{message}");

    let many_fields = format!("GET /subjects HTTP/1.1\r\nHost: r\r\n{}\r\n", small_fields(500));
    let (status, _, document) = answer(&server, many_fields.as_bytes()).await;
    assert_eq!((status, &document["error_code"]), (431, &json!(431)), "{document}");
    let message = document["message"].as_str().unwrap();
    assert!(message.contains("100"), "{message}");

    for malformed in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET /subjects HTTP/1.1\r\nHost: r\r\nNo colon here\r\n\r\n",
        b"GET /sub jects HTTP/1.1\r\nHost: r\r\n\r\n",
    ] {
        let (status, content_type, document) = answer(&server, malformed).await;
        assert_eq!((status, content_type.as_str()), (400, vnd), "{document}");
        assert_eq!(document["error_code"], 400, "{document}");
        let message = document["message"].as_str().unwrap();
        assert!(message.contains("HTTP/1.1"), "{message}");
    }

    let (status, _, document) = answer(&server, b"GET /subjects HTTP/1.1\r\nHost: r\r\n\r\n").await;
    assert_eq!((status, document), (200, json!([])));
}
