//! Several `schemaops registry --store kafka://…` processes on one topic
//! (issue 43, Tansu as the broker): one is elected through Kafka group
//! membership and writes; the others forward writes to it with the
//! caller's credentials and read them back at once. A paused leader
//! (SIGSTOP) is replaced, and once resumed it appends nothing and serves
//! its successor's writes. A registry whose broker connection drops keeps
//! serving reads from memory and writes again once the broker is back.
//! A registry reaches its broker over TLS (through a TLS-terminating proxy:
//! Tansu 0.6.0 cannot serve TLS itself, its `--cert` conflicts with `--key`).

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::broker::Broker;
use support::registry::RegistryProcess;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Short, so that a paused leader is replaced within a few seconds.
const SESSION_TIMEOUT_MS: &str = "3000";

/// How long an election or a reconnect may take.
const SETTLE: Duration = Duration::from_secs(20);

fn instance_args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--store",
        url,
        "--store-topic-replication-factor",
        "1",
        "--store-session-timeout-ms",
        SESSION_TIMEOUT_MS,
    ];
    args.extend_from_slice(extra);
    args
}

fn schema(name: &str) -> String {
    json!({"type": "record", "name": name, "fields": [{"name": "id", "type": "string"}]}).to_string()
}

/// Registers `name`'s schema under the subject `name`; the status and body.
async fn register(client: &reqwest::Client, base: &str, name: &str, credentials: Option<(&str, &str)>) -> (u16, Value) {
    let mut request = client
        .post(format!("{base}/subjects/{name}/versions"))
        .json(&json!({ "schema": schema(name) }))
        .timeout(Duration::from_secs(10));
    if let Some((user, password)) = credentials {
        request = request.basic_auth(user, Some(password));
    }
    match request.send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            let text = response.text().await.unwrap_or_default();
            (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
        }
        Err(error) => (0, Value::String(error.to_string())),
    }
}

/// Registers until an instance accepts it (while an election settles).
async fn register_within(client: &reqwest::Client, base: &str, name: &str, within: Duration) -> Value {
    let started = Instant::now();
    loop {
        let (status, body) = register(client, base, name, None).await;
        if status == 200 {
            return body;
        }
        assert!(
            started.elapsed() < within,
            "{base} did not accept a write within {within:?}: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The subject's versions with their IDs, as `base` serves them; `None`
/// when it does not know the subject.
async fn versions(client: &reqwest::Client, base: &str, subject: &str) -> Option<Vec<(i64, i64)>> {
    let response = client
        .get(format!("{base}/subjects/{subject}/versions"))
        .send()
        .await
        .unwrap();
    if response.status().as_u16() == 404 {
        return None;
    }
    assert_eq!(
        response.status().as_u16(),
        200,
        "GET {base}/subjects/{subject}/versions"
    );
    let list: Vec<i64> = response.json().await.unwrap();
    let mut out = Vec::new();
    for version in list {
        let body: Value = client
            .get(format!("{base}/subjects/{subject}/versions/{version}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        out.push((version, body["id"].as_i64().unwrap()));
    }
    Some(out)
}

async fn subjects(client: &reqwest::Client, base: &str) -> Vec<String> {
    let mut subjects: Vec<String> = client
        .get(format!("{base}/subjects"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    subjects.sort();
    subjects
}

fn signal(process: &RegistryProcess, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &process.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_forwards_writes_with_the_callers_credentials_and_reads_them_back() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let url = format!("kafka://{}/_schemas", broker.address);
    let (leader_data, follower_data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let client = support::http_client();
    // Only the leader checks credentials: a write the follower forwards is
    // accepted there only with the caller's own Authorization header.
    let leader = RegistryProcess::start_with(
        leader_data.path(),
        &instance_args(&url, &["--write-credentials", "writer:secret"]),
    )
    .await;
    let follower = RegistryProcess::start_with(
        follower_data.path(),
        &instance_args(&url, &["--store-leader-eligibility", "false"]),
    )
    .await;

    let started = Instant::now();
    let registered = loop {
        let (status, body) = register(&client, &follower.url, "Forwarded", Some(("writer", "secret"))).await;
        if status == 200 {
            break body;
        }
        // 50004 until the group has elected.
        assert!(
            started.elapsed() < SETTLE,
            "no write through the follower: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!("first write through the follower after {:?}", started.elapsed());
    let id = registered["id"].as_i64().unwrap();
    // Read-your-writes: the follower answered after reading the write back.
    assert_eq!(versions(&client, &follower.url, "Forwarded").await, Some(vec![(1, id)]));
    assert_eq!(versions(&client, &leader.url, "Forwarded").await, Some(vec![(1, id)]));

    // Without credentials the leader refuses what the follower forwards.
    let (status, body) = register(&client, &follower.url, "Anonymous", None).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(versions(&client, &leader.url, "Anonymous").await, None);

    // Many writes through the follower: each one readable on it at once.
    for n in 0..5 {
        let name = format!("Many{n}");
        let (status, body) = register(&client, &follower.url, &name, Some(("writer", "secret"))).await;
        assert_eq!(status, 200, "{body}");
        let id = body["id"].as_i64().unwrap();
        assert_eq!(versions(&client, &follower.url, &name).await, Some(vec![(1, id)]));
    }
    assert_eq!(
        subjects(&client, &follower.url).await,
        subjects(&client, &leader.url).await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_is_replaced_and_once_resumed_appends_nothing_and_serves_the_new_writes() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let url = format!("kafka://{}/_schemas", broker.address);
    let (first_data, second_data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let client = support::http_client();
    let test_started = Instant::now();

    // Alone in the group, the first instance leads; the second joins and
    // follows (a sitting leader keeps leading).
    let first = RegistryProcess::start_with(first_data.path(), &instance_args(&url, &[])).await;
    register_within(&client, &first.url, "BeforePause", SETTLE).await;
    let second = RegistryProcess::start_with(second_data.path(), &instance_args(&url, &[])).await;
    register_within(&client, &second.url, "ThroughFollower", SETTLE).await;

    signal(&first, "STOP");
    let paused = Instant::now();
    let taken_over = register_within(&client, &second.url, "AfterTakeOver", SETTLE).await;
    println!(
        "the second instance wrote {:?} after the leader was paused",
        paused.elapsed()
    );

    // Writes the paused leader holds in its sockets, answered once it
    // resumes: each either fails or is made once, by the new leader.
    let pending: Vec<_> = (0..2)
        .map(|n| {
            let (client, base) = (client.clone(), first.url.clone());
            tokio::spawn(async move { register(&client, &base, &format!("Pending{n}"), None).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    signal(&first, "CONT");
    let mut answers = Vec::new();
    for task in pending {
        answers.push(task.await.unwrap());
    }
    println!("the resumed leader answered its pending writes: {answers:?}");

    // The resumed instance serves the write made while it was paused...
    let expected = Some(vec![(1, taken_over["id"].as_i64().unwrap())]);
    let started = Instant::now();
    while versions(&client, &first.url, "AfterTakeOver").await != expected {
        assert!(
            started.elapsed() < SETTLE,
            "the resumed instance never read the new write"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // ...and a write it refused was never appended (its producer was fenced).
    tokio::time::sleep(Duration::from_millis(500)).await;
    for (n, (status, body)) in answers.iter().enumerate() {
        let made = versions(&client, &second.url, &format!("Pending{n}")).await;
        match status {
            200 => assert_eq!(made, Some(vec![(1, body["id"].as_i64().unwrap())])),
            0 => panic!("pending write {n} got no answer: {body}"),
            _ => assert_eq!(made, None, "a refused write was appended: {status} {body}"),
        }
    }
    // Writes through either instance reach the one leader.
    register_within(&client, &first.url, "AfterResume", SETTLE).await;
    register_within(&client, &second.url, "AfterResumeToo", SETTLE).await;
    let everything = subjects(&client, &second.url).await;
    assert_eq!(subjects(&client, &first.url).await, everything);
    let mut ids = Vec::new();
    for subject in &everything {
        let first_versions = versions(&client, &first.url, subject).await;
        assert_eq!(
            first_versions,
            versions(&client, &second.url, subject).await,
            "{subject}"
        );
        assert_eq!(first_versions.as_ref().map(Vec::len), Some(1), "{subject}: one version");
        ids.extend(first_versions.unwrap().into_iter().map(|(_, id)| id));
    }
    let unique: std::collections::BTreeSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "duplicate IDs: {ids:?}");
    println!("the pause test took {:?}", test_started.elapsed());
}

/// A TCP proxy in front of the broker whose connections can be cut, and
/// that may speak TLS to its clients.
struct Proxy {
    address: String,
    up: Arc<AtomicBool>,
    connections: Arc<std::sync::Mutex<Vec<JoinHandle<()>>>>,
    _accepting: JoinHandle<()>,
}

impl Proxy {
    /// Listens on a free port; connections go to `target` once it is set,
    /// after a TLS handshake with `tls` when given.
    async fn start(target: Arc<std::sync::OnceLock<SocketAddr>>, tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let up = Arc::new(AtomicBool::new(true));
        let connections = Arc::new(std::sync::Mutex::new(Vec::new()));
        let accepting = {
            let (up, connections) = (Arc::clone(&up), Arc::clone(&connections));
            tokio::spawn(async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    // While cut, a connection is closed as soon as it is made.
                    let Some(target) = target.get().copied().filter(|_| up.load(Ordering::SeqCst)) else {
                        continue;
                    };
                    let tls = tls.clone();
                    let task = tokio::spawn(async move {
                        let Ok(mut outbound) = TcpStream::connect(target).await else {
                            return;
                        };
                        match tls {
                            None => {
                                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            }
                            Some(tls) => {
                                if let Ok(mut inbound) = tls.accept(inbound).await {
                                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                                }
                            }
                        }
                    });
                    connections.lock().unwrap().push(task);
                }
            })
        };
        Self {
            address,
            up,
            connections,
            _accepting: accepting,
        }
    }

    /// Drops every connection and refuses new ones.
    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for task in self.connections.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_served_while_the_broker_is_away_and_writes_resume_when_it_is_back() {
    let target = Arc::new(std::sync::OnceLock::new());
    let proxy = Proxy::start(Arc::clone(&target), None).await;
    let Some(broker) = Broker::start_advertising_or_skip(&proxy.address) else {
        return;
    };
    target.set(broker.address.parse().unwrap()).unwrap();
    let url = format!("kafka://{}/_schemas", proxy.address);
    let data = tempfile::tempdir().unwrap();
    let client = support::http_client();
    let registry = RegistryProcess::start_with(data.path(), &instance_args(&url, &[])).await;
    let before = register_within(&client, &registry.url, "BeforeTheCut", SETTLE).await;
    let expected = Some(vec![(1, before["id"].as_i64().unwrap())]);

    proxy.cut();
    let cut = Instant::now();
    // Reads keep being answered from memory while the broker is away.
    while cut.elapsed() < Duration::from_secs(3) {
        assert_eq!(versions(&client, &registry.url, "BeforeTheCut").await, expected);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, body) = register(&client, &registry.url, "WhileAway", None).await;
    assert_eq!(status, 500, "a write without a broker: {body}");

    proxy.restore();
    let restored = Instant::now();
    let after = register_within(&client, &registry.url, "AfterTheCut", SETTLE).await;
    println!(
        "writes succeeded again {:?} after the broker came back",
        restored.elapsed()
    );
    assert_eq!(
        versions(&client, &registry.url, "AfterTheCut").await,
        Some(vec![(1, after["id"].as_i64().unwrap())])
    );
    assert_eq!(versions(&client, &registry.url, "BeforeTheCut").await, expected);
    assert_eq!(versions(&client, &registry.url, "WhileAway").await, None);
}

/// A CA (its PEM) and a TLS acceptor whose certificate it signed for 127.0.0.1.
fn test_tls() -> (String, tokio_rustls::TlsAcceptor) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, &ca_key);
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    (ca_cert.pem(), tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_reaches_its_broker_over_tls() {
    let (ca_pem, acceptor) = test_tls();
    let target = Arc::new(std::sync::OnceLock::new());
    let proxy = Proxy::start(Arc::clone(&target), Some(acceptor)).await;
    let Some(broker) = Broker::start_advertising_or_skip(&proxy.address) else {
        return;
    };
    target.set(broker.address.parse().unwrap()).unwrap();
    let data = tempfile::tempdir().unwrap();
    let ca_file = data.path().join("kafka-ca.pem");
    std::fs::write(&ca_file, ca_pem).unwrap();
    let url = format!("kafka://{}/_schemas", proxy.address);
    let ca_file = ca_file.to_str().unwrap();
    let client = support::http_client();
    let registry = RegistryProcess::start_with(
        data.path(),
        &instance_args(&url, &["--store-tls", "--store-ca-file", ca_file]),
    )
    .await;
    let registered = register_within(&client, &registry.url, "OverTls", SETTLE).await;
    assert_eq!(
        versions(&client, &registry.url, "OverTls").await,
        Some(vec![(1, registered["id"].as_i64().unwrap())])
    );

    // Without --store-tls the TLS listener is not understood: the registry does not start.
    let plain = std::process::Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["registry", "--listen", "127.0.0.1:0", "--data"])
        .arg(data.path().join("plain"))
        .args(instance_args(&url, &[]))
        .env("RUST_LOG", "off")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!plain.success(), "a plain-TCP registry started against a TLS listener");
}
