//! An in-memory, faithful subset of the Kubernetes API server, for tests.
//!
//! [`TestApiServer::start`] serves it on `127.0.0.1:0` from a background thread with its own tokio
//! runtime. Real `kubectl` and kube-rs clients talk to it: discovery, a minimal OpenAPI v3,
//! CustomResourceDefinitions and the kinds they define, namespaces, configmaps, secrets, events and
//! leases, and (stored as plain objects) the kinds a Helm chart installs: service accounts,
//! services, persistent volume claims, deployments, pod disruption budgets, network policies, RBAC
//! roles and bindings, validating webhook configurations; get, list (selectors, Table output),
//! watch, create, update, merge/JSON/strategic/apply patches, delete with finalizers, the status
//! subresource, generation and resourceVersion rules.
//!
//! Set `SCHEMAOPS_APISERVER_LOG=1` to print every request to stderr.
//!
//! Include it with `#[path = "support/apiserver/mod.rs"] mod apiserver;` (not from
//! `tests/support/mod.rs`, which every test binary compiles). For example:
//!
//! ```ignore
//! let server = TestApiServer::start();
//! let applied = server.kubectl().args(["apply", "-f", "crds/"]).output()?;
//! let mut config = kube::Config::new(server.url().parse()?);
//! config.default_namespace = "default".into();
//! let client = kube::Client::try_from(config)?;
//! // or run a binary with KUBECONFIG=server.kubeconfig()
//! ```
//!
//! Approximations: no schema validation, pruning or CEL; server-side apply tracks only apply
//! managers (no `managedFields` in objects, and updates by non-apply writers never conflict);
//! `limit` returns everything without a continue token; namespaces, garbage collection and
//! deletion of a CRD's objects happen at once; protobuf is read only for the kinds kubectl's typed
//! commands create (namespaces, configmaps, secrets), and answers are always JSON.
#![allow(dead_code)]

mod apply;
mod body;
mod discovery;
mod events;
mod handlers;
mod openapi;
mod patch;
mod protobuf;
mod resources;
mod selectors;
mod status;
mod store;
mod table;
mod time;
mod verbs;
mod watch;
mod write;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use store::Store;

/// State shared by every request.
pub(crate) struct Shared {
    store: Mutex<Store>,
    /// The latest resourceVersion; watches wait on it.
    changes: tokio::sync::watch::Sender<u64>,
    /// Whether to print every request.
    log: bool,
    /// `127.0.0.1:PORT`, for discovery.
    address: String,
    /// How many requests have been answered, for benches.
    requests: std::sync::atomic::AtomicU64,
    /// The first requests, as `METHOD /path?query USER-AGENT`, for tests of what a client asked for.
    log_lines: Mutex<Vec<String>>,
}

/// How many request lines are kept.
const LOGGED_REQUESTS: usize = 100_000;

impl Shared {
    /// The store, locked. Never held across an await.
    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps `METHOD /path?query USER-AGENT` of a request, up to [`LOGGED_REQUESTS`].
    fn record(&self, request: &axum::extract::Request) {
        let agent = request
            .headers()
            .get(axum::http::header::USER_AGENT)
            .and_then(|agent| agent.to_str().ok())
            .unwrap_or("-");
        let mut lines = self.log_lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if lines.len() < LOGGED_REQUESTS {
            lines.push(format!("{} {} {agent}", request.method(), request.uri()));
        }
    }

    /// Wakes the watches after a write.
    fn notify(&self, store: &Store) {
        self.changes.send_replace(store.revision());
    }
}

/// The state handlers see.
pub(crate) type App = Arc<Shared>;

/// The axum router of the whole server.
fn router(app: App) -> axum::Router {
    axum::Router::new().fallback(handlers::handle).with_state(app)
}

/// A running in-memory API server. Dropping it shuts it down.
pub struct TestApiServer {
    url: String,
    app: App,
    kubeconfig: PathBuf,
    cache: PathBuf,
    _directory: tempfile::TempDir,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestApiServer {
    /// Starts a server on `127.0.0.1:0` on a background thread with its own runtime, and writes a
    /// kubeconfig for it.
    pub fn start() -> TestApiServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
        listener.set_nonblocking(true).expect("a non-blocking listener");
        let address = listener.local_addr().expect("the listener's address").to_string();
        let url = format!("http://{address}");
        let (changes, _) = tokio::sync::watch::channel(0);
        let app = Arc::new(Shared {
            store: Mutex::new(Store::new()),
            changes,
            log: std::env::var("SCHEMAOPS_APISERVER_LOG").is_ok_and(|value| value == "1"),
            address,
            requests: std::sync::atomic::AtomicU64::new(0),
            log_lines: Mutex::new(Vec::new()),
        });
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let shared = Arc::clone(&app);
        let thread = std::thread::Builder::new()
            .name("test-apiserver".into())
            .spawn(move || {
                // Its threads are named after it, so that a bench can tell its CPU time apart.
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("test-apiserver")
                    .enable_all()
                    .build()
                    .expect("a tokio runtime");
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                    tokio::select! {
                        result = axum::serve(listener, router(app)) => {
                            if let Err(error) = result {
                                eprintln!("test apiserver stopped: {error}");
                            }
                        }
                        _ = stopped => {}
                    }
                });
                runtime.shutdown_background();
            })
            .expect("spawning the apiserver thread");

        let directory = tempfile::tempdir().expect("a temporary directory");
        let kubeconfig = directory.path().join("kubeconfig");
        let cache = directory.path().join("kube-cache");
        std::fs::write(&kubeconfig, kubeconfig_text(&url)).expect("writing the kubeconfig");
        TestApiServer {
            url,
            app: shared,
            kubeconfig,
            cache,
            _directory: directory,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// How many requests the server has answered (watches count once, when they start).
    pub fn requests(&self) -> u64 {
        self.app.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The requests answered so far (the first 100,000), each as `METHOD /path?query USER-AGENT`.
    pub fn request_lines(&self) -> Vec<String> {
        self.app
            .log_lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// A kubeconfig pointing at the server: namespace `default`, no authentication.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// `/usr/bin/kubectl` with `--kubeconfig` and a private `--cache-dir`.
    pub fn kubectl(&self) -> Command {
        let mut command = Command::new("/usr/bin/kubectl");
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache);
        command.env_remove("KUBECONFIG");
        command
    }
}

impl Drop for TestApiServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn kubeconfig_text(url: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: {url}
contexts:
- name: test
  context:
    cluster: test
    namespace: default
    user: test
current-context: test
preferences: {{}}
users:
- name: test
  user: {{}}
"
    )
}
