//! A registry double for the external-registry tests: a fault-injecting
//! HTTP proxy in front of a real `schemaops registry` process, which can
//! answer as real Karapace or Confluent 7.x does where they differ from ours
//! ([`Flavour`]; each such answer cites the server source it follows, and
//! the house rule is that it answers exactly as that server does), and can
//! fail the way a real deployment does.
//!
//! Every request is forwarded to the real registry unless a fault set on
//! [`Faults`] says otherwise. Faults can change while a run is under way, so
//! a test can make the registry elect a leader, lack a feature, hang, reset
//! connections, or die and come back in the middle of an `apply`; and
//! [`Faults::replies`] makes it answer chosen requests with a given wrong
//! answer, or one far too large (generated while it is sent).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use super::registry::RegistryProcess;

/// Karapace's answer to a write while no leader is known.
pub const NO_LEADER: &str = "Error while forwarding the request to the master";

/// What the double does instead of forwarding faithfully. Each field can be
/// changed at any time; requests already under way are not affected.
#[derive(Default)]
pub struct Faults {
    /// Writes answer `500` with Karapace's "no leader" body while reads work:
    /// a registry electing its leader.
    pub writes_fail: AtomicBool,
    /// The next this-many writes answer `500` as `writes_fail` does, then
    /// writes work again: a leader elected in the middle of a run.
    pub failing_writes_left: AtomicUsize,
    /// Answer the mode endpoints as Karapace does (see [`Forward::karapace_mode`]):
    /// `GET /mode/{subject}` is 404 (40401) for a subject it does not hold
    /// and 200 with the *global* mode for one it does, whatever
    /// `defaultToGlobal` says; every `PUT`/`DELETE` on `/mode` is 405.
    pub karapace_modes: AtomicBool,
    /// Data contracts as Karapace takes them (see [`karapace_contract_body`]):
    /// `metadata` and `ruleSet` of registrations, lookups and checks are
    /// accepted and dropped; a `PUT /config` without `compatibility` is 422
    /// with a pydantic validation body; its other fields are dropped.
    pub karapace_contracts: AtomicBool,
    /// Data contracts as Confluent 7.x before data contracts takes them (see
    /// [`confluent7_contract_body`]): unknown fields of registrations are
    /// ignored, and a `PUT /config` without a level is 422 (42203).
    pub confluent7_contracts: AtomicBool,
    /// `deletedOnly` is not a parameter this server knows: it is dropped
    /// from the query, so the live list is returned, and a version's answer
    /// has no `deleted` field. Karapace 5.x reads only `deleted` on `GET
    /// /subjects` and `GET /subjects/{s}/versions` (`subjects_get` and
    /// `subjects_subject_versions_list` in karapace/api/routers/subjects.py;
    /// FastAPI ignores parameters a route does not declare), and its
    /// `SubjectSchemaVersionResponse` (routers/requests.py) has no `deleted`.
    pub karapace_deleted_only: AtomicBool,
    /// No GUIDs: `/schemas/guids/…` has no route, and answers carry no
    /// `guid` field. Karapace 5.x's schemas router
    /// (karapace/api/routers/schemas.py) has no GUID route and its response
    /// models (requests.py) no `guid`; Confluent added GUIDs in 8.0.
    pub no_guids: AtomicBool,
    /// No contexts: `/contexts` has no route (Karapace 5.x registers no
    /// contexts router; see karapace/api/routers/).
    pub no_contexts: AtomicBool,
    /// No `POST /compatibility/subjects/{s}/versions` (a check against every
    /// version the level implies): Karapace 5.x's compatibility router
    /// (karapace/api/routers/compatibility.py) has `…/versions/{version}` only.
    pub no_all_versions_check: AtomicBool,
    /// `offset` and `limit` are not parameters this server knows: they are
    /// dropped from every query, so a listing comes whole. Karapace 5.x's
    /// routers (karapace/api/routers/subjects.py) declare only `deleted`
    /// on `GET /subjects` and `GET /subjects/{s}/versions`.
    pub no_paging: AtomicBool,
    /// Compatibility checks as Karapace 5.x answers them (see
    /// [`Forward::karapace_check`]): `verbose` is not a parameter it knows,
    /// an invalid schema is 422 (42201) whatever was asked, and an
    /// incompatible answer always lists its `messages`.
    pub karapace_checks: AtomicBool,
    /// Every request needs HTTP basic credentials with this password (any
    /// user name), or is answered 401 as Karapace answers it (`get_current_user`
    /// in karapace/api/user.py: `{"message": "Unauthorized"}` with a
    /// `WWW-Authenticate: Basic realm="Karapace Schema Registry"` header). Checked
    /// after `delay_ms`, so a request held back while the password changes
    /// meets the new one: a password rotated under a request in flight.
    pub password: Mutex<Option<String>>,
    /// Return stored text canonicalized, as Confluent and Karapace do: Avro
    /// as compact JSON, Protobuf re-rendered (here: whitespace collapsed).
    pub canonical_text: AtomicBool,
    /// Strip `messages` from compatibility answers (no `verbose` support).
    pub no_verbose: AtomicBool,
    /// Hold every answer back this long (a registry that hangs).
    pub delay_ms: AtomicUsize,
    /// Close every new connection without an answer.
    pub reset_connections: AtomicBool,
    /// After forwarding this many more registrations (`POST
    /// /subjects/{s}/versions`), forward the next one, drop its answer, and
    /// go down: the registration lands while the client sees a dead registry.
    pub die_after_registrations: Mutex<Option<usize>>,
    /// After answering this many more registrations (at least one), accept
    /// every later request and never answer it: a registry that stalls mid-run.
    pub stall_after_registrations: Mutex<Option<usize>>,
    /// Set once `stall_after_registrations` ran out: requests hang.
    pub stalled: AtomicBool,
    /// Stored texts served in place of the real ones, keyed by subject and
    /// version: what a registry that stores schemas we refuse would return.
    pub substitutes: Mutex<Vec<(String, i32, String)>>,
    /// Answers given instead of forwarding, to the requests they match; the
    /// first match wins, and every other request is forwarded as usual.
    pub replies: Mutex<Vec<Reply>>,
}

/// Which real server the double answers as, where the servers differ from
/// schemaops' own registry. A flavour only sets [`Faults`] flags, so a test
/// can still add faults on top of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// Aiven's Karapace (5.x, at its June 2026 head): modes read-only and
    /// global, no data contracts, no `deletedOnly`, no GUIDs, no contexts, no
    /// check against all versions, stored text normalized.
    Karapace,
    /// Confluent Schema Registry 7.x before data contracts (7.0–7.3):
    /// per-subject modes, contexts and `deletedOnly`, but no data-contract
    /// settings, metadata or rule sets, and no GUIDs.
    Confluent7,
}

impl Flavour {
    /// The name the scenario tests print.
    pub fn name(self) -> &'static str {
        match self {
            Self::Karapace => "Karapace",
            Self::Confluent7 => "Confluent 7.x",
        }
    }
}

/// An answer the double gives to one kind of request instead of the real
/// registry's: a registry that answers another question than the one asked.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The request's method.
    pub method: Method,
    /// The request's path, exactly (the query is not compared).
    pub path: String,
    /// The answer's status.
    pub status: u16,
    /// The answer's body.
    pub body: ReplyBody,
}

/// The body of a [`Reply`].
#[derive(Debug, Clone)]
pub enum ReplyBody {
    /// This JSON.
    Json(serde_json::Value),
    /// A JSON array of subject names of about this many bytes, generated in
    /// 64 KiB chunks as the client reads (never held whole), sent chunked,
    /// or with its `Content-Length` when `announced`.
    Subjects {
        /// The body's size, in bytes.
        bytes: u64,
        /// Whether the length is announced in `Content-Length`.
        announced: bool,
    },
}

impl Reply {
    /// `status` with `body` as JSON for `method path`.
    pub fn json(method: Method, path: &str, status: u16, body: serde_json::Value) -> Self {
        Self {
            method,
            path: path.to_owned(),
            status,
            body: ReplyBody::Json(body),
        }
    }
}

/// The real registry behind a fault-injecting proxy.
pub struct RegistryDouble {
    /// The proxy's base URL: what clients are given.
    pub url: String,
    /// The real registry's base URL, for checking what it holds.
    pub backend_url: String,
    /// The faults in force.
    pub faults: Arc<Faults>,
    state: Arc<ProxyState>,
    _backend: RegistryProcess,
}

struct ProxyState {
    address: SocketAddr,
    up: AtomicBool,
    changed: Notify,
    registrations: AtomicUsize,
    subject_mode_writes: AtomicUsize,
    config_writes_without_level: Mutex<Vec<String>>,
    unauthorized: AtomicUsize,
    held: AtomicUsize,
}

impl RegistryDouble {
    /// Starts a real registry on `data` and the proxy in front of it.
    pub async fn start(data: &Path) -> Self {
        let backend = RegistryProcess::start(data).await;
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free loopback port");
        let address = listener.local_addr().expect("a bound address");
        let faults = Arc::new(Faults::default());
        let state = Arc::new(ProxyState {
            address,
            up: AtomicBool::new(true),
            changed: Notify::new(),
            registrations: AtomicUsize::new(0),
            subject_mode_writes: AtomicUsize::new(0),
            config_writes_without_level: Mutex::new(Vec::new()),
            unauthorized: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
        });
        let client = super::http::http_client();
        tokio::spawn(accept_loop(
            listener,
            Arc::clone(&state),
            Arc::new(Forward {
                backend: backend.url.clone(),
                client,
                faults: Arc::clone(&faults),
                state: Arc::clone(&state),
            }),
        ));
        Self {
            url: format!("http://{address}"),
            backend_url: backend.url.clone(),
            faults,
            state,
            _backend: backend,
        }
    }

    /// Answers as `flavour` does from now on (see [`Flavour`]).
    pub fn set_flavour(&self, flavour: Flavour) {
        let faults = &self.faults;
        let karapace = flavour == Flavour::Karapace;
        faults.karapace_modes.store(karapace, Ordering::SeqCst);
        faults.karapace_contracts.store(karapace, Ordering::SeqCst);
        faults.karapace_deleted_only.store(karapace, Ordering::SeqCst);
        faults.no_contexts.store(karapace, Ordering::SeqCst);
        faults.no_all_versions_check.store(karapace, Ordering::SeqCst);
        faults.canonical_text.store(karapace, Ordering::SeqCst);
        faults.no_paging.store(karapace, Ordering::SeqCst);
        faults.karapace_checks.store(karapace, Ordering::SeqCst);
        faults
            .confluent7_contracts
            .store(flavour == Flavour::Confluent7, Ordering::SeqCst);
        faults.no_guids.store(true, Ordering::SeqCst);
    }

    /// Stops listening: new connections are refused, as by a dead process.
    pub fn go_down(&self) {
        self.state.up.store(false, Ordering::SeqCst);
        self.state.changed.notify_waiters();
    }

    /// Listens again on the same port.
    pub fn come_back(&self) {
        self.state.up.store(true, Ordering::SeqCst);
        self.state.changed.notify_waiters();
    }

    /// Whether the proxy is listening.
    pub fn is_up(&self) -> bool {
        self.state.up.load(Ordering::SeqCst)
    }

    /// How many registrations were forwarded to the real registry.
    pub fn registrations(&self) -> usize {
        self.state.registrations.load(Ordering::SeqCst)
    }

    /// How many requests were refused for their credentials (see [`Faults::password`]).
    pub fn unauthorized(&self) -> usize {
        self.state.unauthorized.load(Ordering::SeqCst)
    }

    /// How many requests are being held back by [`Faults::delay_ms`] right now.
    pub fn held(&self) -> usize {
        self.state.held.load(Ordering::SeqCst)
    }

    /// Takes only `password` from now on (see [`Faults::password`]).
    pub fn require_password(&self, password: &str) {
        *self.faults.password.lock().unwrap() = Some(password.to_owned());
    }

    /// How many `PUT`/`DELETE /mode/{subject}` requests arrived.
    pub fn subject_mode_writes(&self) -> usize {
        self.state.subject_mode_writes.load(Ordering::SeqCst)
    }

    /// The paths of the `PUT /config…` requests that carried no
    /// `compatibility` (data-contract settings only), in arrival order.
    pub fn config_writes_without_level(&self) -> Vec<String> {
        self.state.config_writes_without_level.lock().unwrap().clone()
    }

    /// `POST path` with a JSON body on the real registry, bypassing every fault.
    pub async fn backend_post(&self, path: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
        let answer = super::http::http_client()
            .post(format!("{}{path}", self.backend_url))
            .header("content-type", "application/vnd.schemaregistry.v1+json")
            .body(body.to_string())
            .send()
            .await
            .expect("the real registry answers");
        let status = answer.status().as_u16();
        let body = answer.json().await.unwrap_or(serde_json::Value::Null);
        (status, body)
    }

    /// `GET path` on the real registry, bypassing every fault.
    pub async fn backend_get(&self, path: &str) -> (u16, serde_json::Value) {
        let answer = super::http::http_client()
            .get(format!("{}{path}", self.backend_url))
            .send()
            .await
            .expect("the real registry answers");
        let status = answer.status().as_u16();
        let body = answer.json().await.unwrap_or(serde_json::Value::Null);
        (status, body)
    }
}

async fn accept_loop(mut listener: TcpListener, state: Arc<ProxyState>, forward: Arc<Forward>) {
    loop {
        let changed = state.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if !state.up.load(Ordering::SeqCst) {
            drop(listener);
            while !state.up.load(Ordering::SeqCst) {
                let changed = state.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if state.up.load(Ordering::SeqCst) {
                    break;
                }
                changed.await;
            }
            listener = rebind(state.address).await;
            continue;
        }
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                if forward.faults.reset_connections.load(Ordering::SeqCst) {
                    drop(stream);
                    continue;
                }
                let forward = Arc::clone(&forward);
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        let forward = Arc::clone(&forward);
                        async move { forward.handle(request).await }
                    });
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                });
            }
            () = &mut changed => {}
        }
    }
}

/// Binds the same address again; the port may take a moment to be free.
async fn rebind(address: SocketAddr) -> TcpListener {
    for _ in 0..200 {
        if let Ok(listener) = TcpListener::bind(address).await {
            return listener;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the proxy could not listen on {address} again");
}

struct Forward {
    backend: String,
    client: reqwest::Client,
    faults: Arc<Faults>,
    state: Arc<ProxyState>,
}

/// Why a request got no answer at all (the connection is dropped).
#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the registry double dropped the connection")
    }
}

impl std::error::Error for Dropped {}

type Answer = Response<BoxBody<Bytes, std::convert::Infallible>>;

/// Karapace's answer to missing or wrong credentials (see [`Faults::password`]).
fn unauthorized_answer() -> Answer {
    Response::builder()
        .status(StatusCode::UNAUTHORIZED)
        .header("content-type", "application/json")
        .header("www-authenticate", "Basic realm=\"Karapace Schema Registry\"")
        .body(Full::new(Bytes::from(r#"{"message":"Unauthorized"}"#)).boxed())
        .expect("a valid response")
}

fn json_answer(status: StatusCode, body: &serde_json::Value) -> Answer {
    Response::builder()
        .status(status)
        .header("content-type", "application/vnd.schemaregistry.v1+json")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .expect("a valid response")
}

/// Subject names in a generated listing: `"s0000000000000000001",` is 23 bytes.
const GENERATED_ENTRY: u64 = 23;

/// Entries per generated chunk (about 64 KiB).
const GENERATED_CHUNK_ENTRIES: u64 = 2_850;

/// A JSON array of about `bytes` bytes of subject names, generated chunk by chunk.
fn generated_subjects(bytes: u64, announced: bool) -> Answer {
    let entries = (bytes / GENERATED_ENTRY).max(1);
    let chunks = entries.div_ceil(GENERATED_CHUNK_ENTRIES);
    let stream = futures::stream::iter((0..chunks).map(move |chunk| {
        let first = chunk * GENERATED_CHUNK_ENTRIES;
        let last = (first + GENERATED_CHUNK_ENTRIES).min(entries);
        let mut text = String::with_capacity(((last - first) * GENERATED_ENTRY + 2) as usize);
        if chunk == 0 {
            text.push('[');
        }
        for entry in first..last {
            text.push_str(&format!("\"s{entry:019}\""));
            text.push(if entry + 1 == entries { ']' } else { ',' });
        }
        Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from(text)))
    }));
    let mut response = Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/vnd.schemaregistry.v1+json");
    if announced {
        // `[`, then each entry with its `,` or the closing `]`.
        response = response.header("content-length", 1 + entries * GENERATED_ENTRY);
    }
    response
        .body(StreamBody::new(stream).boxed())
        .expect("a valid response")
}

/// A write that goes to the leader in Karapace: registrations, config and
/// mode changes, deletions. Lookups and compatibility checks are reads.
fn is_write(method: &Method, path: &str) -> bool {
    match *method {
        Method::PUT | Method::DELETE => true,
        Method::POST => path.ends_with("/versions") && path.starts_with("/subjects/"),
        _ => false,
    }
}

fn is_registration(method: &Method, path: &str) -> bool {
    *method == Method::POST && path.starts_with("/subjects/") && path.ends_with("/versions")
}

impl Forward {
    async fn handle(&self, request: Request<Incoming>) -> Result<Answer, Dropped> {
        let delay = self.faults.delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            self.state.held.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(delay as u64)).await;
            self.state.held.fetch_sub(1, Ordering::SeqCst);
        }
        if !self.state.up.load(Ordering::SeqCst) {
            return Err(Dropped);
        }
        if self.faults.stalled.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        if !self.authorized(request.headers()) {
            self.state.unauthorized.fetch_add(1, Ordering::SeqCst);
            return Ok(unauthorized_answer());
        }
        let method = request.method().clone();
        let path = request.uri().path().to_owned();
        let mut query = request.uri().query().map(str::to_owned);
        if self.faults.karapace_deleted_only.load(Ordering::SeqCst) {
            query = query.map(|query| without_parameter(&query, "deletedOnly"));
        }
        if self.faults.no_paging.load(Ordering::SeqCst) {
            query = query.map(|query| without_parameter(&without_parameter(&query, "offset"), "limit"));
        }
        if let Some(reply) = self.reply(&method, &path) {
            return Ok(match reply.body {
                ReplyBody::Json(body) => {
                    json_answer(StatusCode::from_u16(reply.status).expect("a valid status"), &body)
                }
                ReplyBody::Subjects { bytes, announced } => generated_subjects(bytes, announced),
            });
        }
        if method != Method::GET && path.strip_prefix("/mode/").is_some_and(|subject| !subject.is_empty()) {
            self.state.subject_mode_writes.fetch_add(1, Ordering::SeqCst);
        }
        if is_write(&method, &path) && self.write_fails() {
            return Ok(json_answer(
                StatusCode::INTERNAL_SERVER_ERROR,
                &serde_json::json!({"error_code": 50003, "message": NO_LEADER}),
            ));
        }
        if self.faults.karapace_modes.load(Ordering::SeqCst)
            && let Some(answer) = self.karapace_mode(&method, &path).await
        {
            return Ok(answer);
        }
        if let Some(answer) = self.missing_route(&method, &path) {
            return Ok(answer);
        }
        let dies_now = is_registration(&method, &path) && self.registration_kills();
        let headers = request.headers().clone();
        let body = request.into_body().collect().await.map_err(|_| Dropped)?.to_bytes();
        if method == Method::PUT
            && is_config_path(&path)
            && serde_json::from_slice::<serde_json::Value>(&body)
                .is_ok_and(|value| value.get("compatibility").is_none_or(serde_json::Value::is_null))
        {
            self.state
                .config_writes_without_level
                .lock()
                .unwrap()
                .push(path.clone());
        }
        let body = if self.faults.karapace_contracts.load(Ordering::SeqCst) {
            match karapace_contract_body(&method, &path, body) {
                Ok(body) => body,
                Err((status, refusal)) => return Ok(json_answer(status, &refusal)),
            }
        } else if self.faults.confluent7_contracts.load(Ordering::SeqCst) {
            match confluent7_contract_body(&method, &path, body) {
                Ok(body) => body,
                Err((status, refusal)) => return Ok(json_answer(status, &refusal)),
            }
        } else {
            body
        };
        if self.faults.karapace_checks.load(Ordering::SeqCst)
            && method == Method::POST
            && path.starts_with("/compatibility/")
        {
            return self.karapace_check(&path, query.as_deref(), &headers, body).await;
        }
        let url = match &query {
            Some(query) => format!("{}{path}?{query}", self.backend),
            None => format!("{}{path}", self.backend),
        };
        let mut forwarded = self.client.request(method.clone(), url).body(body.to_vec());
        for name in ["content-type", "accept", "authorization"] {
            if let Some(value) = headers.get(name) {
                forwarded = forwarded.header(name, value);
            }
        }
        let answer = forwarded.send().await.map_err(|_| Dropped)?;
        if is_registration(&method, &path) {
            self.state.registrations.fetch_add(1, Ordering::SeqCst);
            self.count_down_to_stall();
        }
        let status = answer.status();
        let content_type = answer.headers().get("content-type").cloned();
        let bytes = answer.bytes().await.map_err(|_| Dropped)?;
        if dies_now {
            self.state.up.store(false, Ordering::SeqCst);
            self.state.changed.notify_waiters();
            return Err(Dropped);
        }
        let bytes = if method == Method::GET || path.starts_with("/compatibility/") {
            self.rewrite(&path, bytes)
        } else if self.faults.no_guids.load(Ordering::SeqCst) {
            without_guids(bytes)
        } else {
            bytes
        };
        let mut response = Response::builder().status(status.as_u16());
        if let Some(content_type) = content_type {
            response = response.header("content-type", content_type);
        }
        Ok(response.body(Full::new(bytes).boxed()).expect("a valid response"))
    }

    /// Whether `headers` carry the password [`Faults::password`] asks for (always, when none is set).
    fn authorized(&self, headers: &hyper::HeaderMap) -> bool {
        let Some(password) = self.faults.password.lock().unwrap().clone() else {
            return true;
        };
        headers
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Basic "))
            .and_then(|encoded| base64::engine::general_purpose::STANDARD.decode(encoded).ok())
            .and_then(|decoded| String::from_utf8(decoded).ok())
            .is_some_and(|pair| pair.split_once(':').is_some_and(|(_, given)| given == password))
    }

    /// A compatibility check as Karapace 5.x answers it. Its route
    /// (karapace/api/routers/compatibility.py) declares no `verbose`, and its
    /// controller's `compatibility_check` parses the candidate first: an
    /// invalid one is 422 with 42201 `Invalid {type} schema`; an incompatible
    /// one is `{"is_compatible": false, "messages": [...]}` whatever was asked
    /// (the messages here are the real registry's own texts, not Karapace's).
    async fn karapace_check(
        &self,
        path: &str,
        query: Option<&str>,
        headers: &hyper::HeaderMap,
        body: Bytes,
    ) -> Result<Answer, Dropped> {
        let query = query
            .map(|query| without_parameter(query, "verbose"))
            .unwrap_or_default();
        let ask = |verbose: bool| {
            let mut parameters: Vec<&str> = query.split('&').filter(|pair| !pair.is_empty()).collect();
            if verbose {
                parameters.push("verbose=true");
            }
            let mut forwarded = self
                .client
                .post(format!("{}{path}?{}", self.backend, parameters.join("&")))
                .body(body.to_vec());
            for name in ["content-type", "accept", "authorization"] {
                if let Some(value) = headers.get(name) {
                    forwarded = forwarded.header(name, value);
                }
            }
            forwarded.send()
        };
        let answer = ask(false).await.map_err(|_| Dropped)?;
        let status = answer.status();
        let reply: serde_json::Value = answer.json().await.map_err(|_| Dropped)?;
        if status == StatusCode::UNPROCESSABLE_ENTITY && reply["error_code"] == 42201 {
            let kind = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|request| request["schemaType"].as_str().map(str::to_owned))
                .unwrap_or_else(|| "AVRO".to_owned());
            let refusal = serde_json::json!({"error_code": 42201, "message": format!("Invalid {kind} schema")});
            return Ok(json_answer(status, &refusal));
        }
        if status.is_success() && reply["is_compatible"] == false {
            let verbose: serde_json::Value = ask(true)
                .await
                .map_err(|_| Dropped)?
                .json()
                .await
                .map_err(|_| Dropped)?;
            return Ok(json_answer(status, &verbose));
        }
        Ok(json_answer(status, &reply))
    }

    /// The reply set for `method path`, if any.
    fn reply(&self, method: &Method, path: &str) -> Option<Reply> {
        self.faults
            .replies
            .lock()
            .unwrap()
            .iter()
            .find(|reply| reply.method == method && reply.path == path)
            .cloned()
    }

    fn write_fails(&self) -> bool {
        if self.faults.writes_fail.load(Ordering::SeqCst) {
            return true;
        }
        self.faults
            .failing_writes_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| left.checked_sub(1))
            .is_ok()
    }

    /// Counts one answered registration against `stall_after_registrations`.
    fn count_down_to_stall(&self) {
        let mut left = self.faults.stall_after_registrations.lock().unwrap();
        match *left {
            Some(0 | 1) => {
                *left = None;
                self.faults.stalled.store(true, Ordering::SeqCst);
            }
            Some(n) => *left = Some(n - 1),
            None => {}
        }
    }

    fn registration_kills(&self) -> bool {
        let mut left = self.faults.die_after_registrations.lock().unwrap();
        match *left {
            Some(0) => {
                *left = None;
                true
            }
            Some(n) => {
                *left = Some(n - 1);
                false
            }
            None => false,
        }
    }

    /// The mode endpoints as Karapace 5.x answers them. Its mode router
    /// (karapace/api/routers/mode.py) has `GET /mode` and `GET
    /// /mode/{subject}` only, so FastAPI answers any other method on either
    /// path with 405 and, through Karapace's exception handler
    /// (karapace/api/http_handlers), the bare JSON string `"Method Not
    /// Allowed"`. `GET /mode/{subject}` (the controller's `get_subject_mode`)
    /// ignores `defaultToGlobal`: 404 with 40401 `Subject '…' not found.` when
    /// the subject is unknown (soft-deleted ones are known), else 200 with
    /// the global mode: Karapace has no per-subject mode.
    async fn karapace_mode(&self, method: &Method, path: &str) -> Option<Answer> {
        if path != "/mode" && !path.starts_with("/mode/") {
            return None;
        }
        if *method != Method::GET {
            return Some(json_answer(
                StatusCode::METHOD_NOT_ALLOWED,
                &serde_json::json!("Method Not Allowed"),
            ));
        }
        let encoded = path.strip_prefix("/mode/").filter(|subject| !subject.is_empty())?;
        let known = self
            .client
            .get(format!("{}/subjects/{encoded}/versions?deleted=true", self.backend))
            .send()
            .await
            .ok()?
            .status()
            .is_success();
        if !known {
            let subject = percent_encoding::percent_decode_str(encoded).decode_utf8_lossy();
            return Some(json_answer(
                StatusCode::NOT_FOUND,
                &serde_json::json!({"error_code": 40401, "message": format!("Subject '{subject}' not found.")}),
            ));
        }
        let global = self
            .client
            .get(format!("{}/mode", self.backend))
            .send()
            .await
            .ok()?
            .json::<serde_json::Value>()
            .await
            .ok()?;
        Some(json_answer(StatusCode::OK, &global))
    }

    /// The answer of a server without the route `method path`, per the
    /// flavour flags. Karapace's unknown routes answer 404 with the bare
    /// JSON string `"Not Found"` (Starlette's default detail, passed through
    /// karapace/api/http_handlers); Confluent's (Jersey) answer 404 with
    /// `{"error_code": 404, "message": "HTTP 404 Not Found"}`.
    fn missing_route(&self, method: &Method, path: &str) -> Option<Answer> {
        let karapace = self.faults.karapace_modes.load(Ordering::SeqCst);
        let missing = (self.faults.no_guids.load(Ordering::SeqCst) && path.starts_with("/schemas/guids/"))
            || (self.faults.no_contexts.load(Ordering::SeqCst)
                && (path == "/contexts" || path.starts_with("/contexts/")))
            || (self.faults.no_all_versions_check.load(Ordering::SeqCst)
                && *method == Method::POST
                && path.starts_with("/compatibility/subjects/")
                && path.ends_with("/versions"));
        if !missing {
            return None;
        }
        let body = if karapace {
            serde_json::json!("Not Found")
        } else {
            serde_json::json!({"error_code": 404, "message": "HTTP 404 Not Found"})
        };
        Some(json_answer(StatusCode::NOT_FOUND, &body))
    }

    fn rewrite(&self, path: &str, bytes: Bytes) -> Bytes {
        let Ok(mut body) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            return bytes;
        };
        if path.starts_with("/compatibility/") {
            if self.faults.no_verbose.load(Ordering::SeqCst)
                && let Some(object) = body.as_object_mut()
            {
                object.remove("messages");
            }
            return Bytes::from(body.to_string());
        }
        if self.faults.no_guids.load(Ordering::SeqCst) {
            strip_guids(&mut body);
        }
        if let Some(object) = body.as_object_mut() {
            if self.faults.karapace_deleted_only.load(Ordering::SeqCst) {
                object.remove("deleted");
            }
            if let (Some(subject), Some(version)) = (
                object.get("subject").and_then(|s| s.as_str()).map(str::to_owned),
                object.get("version").and_then(serde_json::Value::as_i64),
            ) {
                let substitutes = self.faults.substitutes.lock().unwrap();
                if let Some((_, _, text)) = substitutes
                    .iter()
                    .find(|(s, v, _)| *s == subject && i64::from(*v) == version)
                {
                    object.insert("schema".to_owned(), serde_json::Value::String(text.clone()));
                }
            }
            if self.faults.canonical_text.load(Ordering::SeqCst)
                && let Some(text) = object.get("schema").and_then(|s| s.as_str())
            {
                let kind = object.get("schemaType").and_then(|t| t.as_str()).unwrap_or("AVRO");
                let canonical = canonical_text(kind, text);
                object.insert("schema".to_owned(), serde_json::Value::String(canonical));
            }
        }
        Bytes::from(body.to_string())
    }
}

/// An answer given instead of forwarding: its status and JSON body.
type Refusal = (StatusCode, serde_json::Value);

/// What Karapace 5.x makes of a request body that may carry data-contract
/// fields, or the answer it gives instead.
///
/// - Schema requests (registration, lookup, compatibility check) are its
///   pydantic `SchemaRequest` (karapace/api/routers/requests.py): `metadata`
///   and `ruleSet` are accepted as `Any` and never stored, so they are dropped
///   here.
/// - `PUT /config` and `PUT /config/{subject}` are its `CompatibilityRequest`,
///   whose one field `compatibility` is required: a body without it is 422
///   with `{"error_code": 422, "message": [pydantic errors]}` (the
///   `RequestValidationError` handler in karapace/api/http_handlers), and any
///   other field is ignored.
fn karapace_contract_body(method: &Method, path: &str, body: Bytes) -> Result<Bytes, Refusal> {
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return Ok(body);
    };
    let Some(object) = value.as_object_mut() else {
        return Ok(body);
    };
    if is_config_path(path) && *method == Method::PUT {
        let Some(level) = object.get("compatibility").cloned() else {
            let input = serde_json::Value::Object(object.clone());
            return Err((
                StatusCode::UNPROCESSABLE_ENTITY,
                serde_json::json!({
                    "error_code": 422,
                    "message": [{
                        "type": "missing",
                        "loc": ["body", "compatibility"],
                        "msg": "Field required",
                        "input": input,
                    }],
                }),
            ));
        };
        return Ok(Bytes::from(serde_json::json!({ "compatibility": level }).to_string()));
    }
    if is_schema_request(method, path) {
        object.remove("metadata");
        object.remove("ruleSet");
        return Ok(Bytes::from(value.to_string()));
    }
    Ok(body)
}

/// What Confluent 7.x (before data contracts, 7.4) makes of a request body
/// that may carry data-contract fields, or the answer it gives instead. Its
/// request types ignore unknown JSON properties, so `metadata` and `ruleSet`
/// of schema requests are dropped; its `ConfigUpdateRequest` holds the level
/// only, and `ConfigResource` refuses a missing one as an invalid level: 422
/// with 42203.
fn confluent7_contract_body(method: &Method, path: &str, body: Bytes) -> Result<Bytes, Refusal> {
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return Ok(body);
    };
    let Some(object) = value.as_object_mut() else {
        return Ok(body);
    };
    if is_config_path(path) && *method == Method::PUT {
        let Some(level) = object.get("compatibility").cloned().filter(|level| !level.is_null()) else {
            return Err((
                StatusCode::UNPROCESSABLE_ENTITY,
                serde_json::json!({
                    "error_code": 42203,
                    "message": "Invalid compatibility level. Valid values are none, backward, forward, full, \
                                backward_transitive, forward_transitive, and full_transitive",
                }),
            ));
        };
        return Ok(Bytes::from(serde_json::json!({ "compatibility": level }).to_string()));
    }
    if is_schema_request(method, path) {
        object.remove("metadata");
        object.remove("ruleSet");
        return Ok(Bytes::from(value.to_string()));
    }
    Ok(body)
}

fn is_config_path(path: &str) -> bool {
    path == "/config" || path.starts_with("/config/")
}

/// A registration, a lookup or a compatibility check: a body with a schema.
fn is_schema_request(method: &Method, path: &str) -> bool {
    *method == Method::POST && (path.starts_with("/subjects/") || path.starts_with("/compatibility/"))
}

/// `query` without the parameter `name`.
fn without_parameter(query: &str, name: &str) -> String {
    query
        .split('&')
        .filter(|pair| pair.split('=').next() != Some(name))
        .collect::<Vec<_>>()
        .join("&")
}

/// The answer without its `guid` fields, when it is JSON.
fn without_guids(bytes: Bytes) -> Bytes {
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(mut body) => {
            strip_guids(&mut body);
            Bytes::from(body.to_string())
        }
        Err(_) => bytes,
    }
}

/// Removes every `guid` field of an answer (an object or a list of them).
fn strip_guids(body: &mut serde_json::Value) {
    match body {
        serde_json::Value::Object(object) => {
            object.remove("guid");
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_guids),
        _ => {}
    }
}

/// The text as Confluent and Karapace return it: Avro (and JSON Schema) as
/// compact JSON; Protobuf re-rendered, here with runs of whitespace collapsed.
fn canonical_text(kind: &str, text: &str) -> String {
    match kind {
        "PROTOBUF" => text.split_whitespace().collect::<Vec<_>>().join(" "),
        _ => serde_json::from_str::<serde_json::Value>(text).map_or_else(|_| text.to_owned(), |v| v.to_string()),
    }
}
