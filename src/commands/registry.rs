//! `schemaops registry`: the embedded registry served over HTTP (with the
//! limits of [`crate::http_server`]) until SIGTERM or Ctrl-C, when in-flight
//! requests finish (up to a timeout).

use std::io::Write;
use std::sync::Arc;

use super::Verdict;
use super::forward::{Forwarder, forward_writes};
use crate::cli::RegistryConfig;
use crate::compat::Checker;
use crate::http_server;
use crate::metrics::{Metrics, instrument};
use crate::policy::{PolicySet, SharedPolicies};
use crate::registry::api::{Admission, ApiState, Auth, router};
use crate::registry::embedded::kafka::election::{self, ElectionOptions, Leadership};
use crate::registry::embedded::kafka::topic_store::{KafkaOptions, KafkaStore};
use crate::registry::embedded::postgres::{PostgresOptions, PostgresStore};
use crate::registry::embedded::sqlite::SqliteStore;
use crate::registry::embedded::store::Store;
use crate::registry::embedded::{EmbeddedRegistry, stored_fingerprint};

/// Why the registry could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The data folder could not be created.
    #[error("failed to create the data folder {}", path.display())]
    CreateDataDir {
        /// The folder.
        path: std::path::PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The store could not be opened.
    #[error("failed to open the registry store {}", path.display())]
    OpenStore {
        /// The database file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The PostgreSQL store could not be reached or set up (the DSN is not
    /// shown: it may hold a password).
    #[error("failed to open the PostgreSQL registry store")]
    ConnectStore {
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The Kafka store's topic could not be reached, created or verified.
    #[error("failed to open the Kafka registry store on topic {topic}")]
    OpenKafkaStore {
        /// The topic.
        topic: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The stored data could not be loaded.
    #[error("failed to load the registry")]
    Load(#[source] crate::registry::Error),
    /// The address could not be bound.
    #[error("failed to listen on {address}")]
    Listen {
        /// The address.
        address: std::net::SocketAddr,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The server failed.
    #[error("the HTTP server failed")]
    Serve(#[source] std::io::Error),
    /// A `--policy` file cannot be read, holds another kind, or a policy is invalid.
    #[error("cannot use the --policy files")]
    Policies(#[source] crate::local::policies::PolicyError),
}

/// The policies of the `--policy` files, compiled; `None` without any.
fn read_policies(paths: &[std::path::PathBuf]) -> Result<Option<SharedPolicies>, Error> {
    use crate::local::policies::{PolicyError, load};
    if paths.is_empty() {
        return Ok(None);
    }
    // The REST API judges without namespaces: Namespace documents there change nothing.
    let policies = load(paths, &[]).map_err(Error::Policies)?.policies;
    let names: Vec<String> = policies
        .iter()
        .map(|policy| policy.metadata.name.clone().unwrap_or_default())
        .collect();
    let set = PolicySet::compile(
        names
            .iter()
            .map(String::as_str)
            .zip(policies.iter().map(|policy| &policy.spec)),
    );
    if !set.invalid().is_empty() {
        return Err(Error::Policies(PolicyError::Invalid {
            invalid: set.invalid().to_vec(),
        }));
    }
    tracing::info!(
        policies = set.policies().len(),
        "SchemaPolicies judge level and mode writes"
    );
    Ok(Some(SharedPolicies::new(set)))
}

/// Serves the registry until a shutdown signal.
///
/// # Errors
/// [`Error`] when the store cannot be opened or the address bound.
pub async fn run(config: &RegistryConfig) -> Result<Verdict, Error> {
    let policies = read_policies(&config.policies)?;
    let checker = Checker::new(config.limits).with_json_policy(config.json_policy);
    // A writing instance on a Kafka topic writes only while elected.
    let election = config
        .kafka
        .as_ref()
        .filter(|_| config.postgres.is_none())
        .and_then(|kafka| Some((kafka, kafka.election.clone()?)));
    let leadership = election.as_ref().map(|_| Leadership::new());
    let registry: Arc<dyn crate::registry::Registry> = Arc::new(
        open_registry_on(
            ChosenStore {
                database: &config.database,
                postgres: config.postgres.as_ref(),
                kafka: config.kafka.as_ref(),
                leadership: leadership.as_ref(),
            },
            checker,
        )
        .await?,
    );
    // `/metrics` on the API's own port: one port to expose and scrape; it is
    // outside `--readers`/`--writers` (it shows counts, never subjects).
    let mut metrics = Metrics::new(Some(Arc::clone(&registry)));
    if let Some(leadership) = &leadership {
        metrics = metrics.with_store_leadership(Arc::clone(leadership));
    }
    let metrics = Arc::new(metrics);
    let state_auth = Auth::from_policy(config.access.clone())
        .map(|auth| Arc::new(auth.counting_into(metrics.rest_write_counters())));
    let state = ApiState {
        registry,
        body_limit: config.body_limit,
        auth: state_auth.clone(),
        policies,
        admission: Some(Arc::new(Admission::new(config.admission, metrics.admission_metrics()))),
    };
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| Error::Listen {
            address: config.listen,
            source,
        })?;
    let address = listener.local_addr().map_err(Error::Serve)?;
    let forwarder = match (election, &leadership) {
        (Some((kafka, options)), Some(leadership)) => Some(Arc::new(
            join_store_election(
                kafka,
                options,
                leadership,
                address,
                Arc::clone(&state.registry),
                config.body_limit,
            )
            .await?,
        )),
        _ => None,
    };
    let store = match (&config.postgres, &config.kafka) {
        (Some(_), _) => "postgres".to_owned(),
        (None, Some(kafka)) if kafka.read_only => format!("kafka topic {} (read-only)", kafka.topic),
        (None, Some(kafka)) => format!("kafka topic {}", kafka.topic),
        (None, None) => config.database.display().to_string(),
    };
    tracing::info!(%address, %store, "Serving the schema registry");
    tracing::info!("{}", Auth::describe(state_auth.as_deref()));
    tracing::info!(pages = %crate::ui::pages_url(address), "Web pages for browsing the registry");
    // Scripts and tests read the bound address (port 0 picks one) from stdout.
    println!("listening on {address}");
    let _ = std::io::stdout().flush();
    let shutdown = async {
        shutdown_signal().await;
        // Requests being answered finish; checks stop at their next checkpoint.
        crate::compat::budget::shut_down();
        tracing::info!("Shutting down; letting in-flight requests finish and stopping running checks");
    };
    // The web pages under /ui/, beside the REST API, with the same credentials
    // and the same admission gate.
    // With a data folder `apply` wrote, the pages show its Schema objects'
    // state: the last refused attempt of each subject and policy verdicts.
    let applied = config
        .database
        .parent()
        .filter(|_| config.postgres.is_none())
        .and_then(crate::ui::owners::AppliedObjects::in_folder)
        .map(|objects| Arc::new(objects) as Arc<dyn crate::ui::owners::Owners>);
    let mut app = instrument(
        crate::ui::beside_api(router(state.clone()), state, applied),
        metrics,
        true,
    );
    if let Some(forwarder) = forwarder {
        app = app.layer(axum::middleware::from_fn_with_state(forwarder, forward_writes));
    }
    http_server::serve(listener, app, config.server_limits, shutdown).await;
    // Once the requests under way are answered, so that the others elect
    // again at once rather than after the session timeout.
    if let Some(leadership) = &leadership {
        leadership.leave(election::LEAVE_TIMEOUT).await;
    }
    Ok(Verdict::Compatible)
}

/// Joins the Kafka store's leader election as the instance serving the
/// registry API on `address` (the URL others forward writes to, unless
/// `options` advertises one), waits up to the store's timeout for a first
/// leader, and returns the forwarder of writes this instance cannot make.
///
/// # Errors
/// [`Error`] when the brokers' transport or the forwarding client cannot be set up.
pub async fn join_store_election(
    kafka: &KafkaOptions,
    mut options: ElectionOptions,
    leadership: &Arc<Leadership>,
    address: std::net::SocketAddr,
    registry: Arc<dyn crate::registry::Registry>,
    body_limit: usize,
) -> Result<Forwarder, Error> {
    if options.advertised_url.is_empty() {
        if address.ip().is_unspecified() {
            tracing::warn!(
                %address,
                "Listening on every interface without --store-advertised-url: \
                 other instances cannot forward writes to this one"
            );
        }
        options.advertised_url = format!("http://{address}");
    }
    tracing::info!(url = %options.advertised_url, eligible = options.eligible, "Joining the store's leader election");
    let group = election::Group {
        bootstrap: kafka.bootstrap.clone(),
        topic: kafka.topic.clone(),
        transactional_id: kafka.transactional_id.clone(),
        // Built as the store built it when it opened.
        transport: kafka.transport().map_err(|source| Error::OpenKafkaStore {
            topic: kafka.topic.clone(),
            source,
        })?,
    };
    let mut roles = leadership.subscribe();
    let session_timeout = options.session_timeout;
    tokio::spawn(election::run(group, options, Arc::clone(leadership)));
    // As Confluent's instances do, answer only once the group has
    // elected (a lone instance waits for the coordinator's join delay).
    let elected = roles.wait_for(|role| *role != election::Role::Unknown);
    if tokio::time::timeout(kafka.timeout, elected).await.is_err() {
        tracing::warn!("No leader of the store was elected in time; writes get 50004 until one is");
    }
    Forwarder::new(Arc::clone(leadership), registry, body_limit, session_timeout)
        .map_err(|message| Error::Serve(std::io::Error::other(message)))
}

/// Where the embedded registry keeps its data: PostgreSQL when given, else
/// a Kafka topic when given, else the SQLite file `database`.
#[derive(Debug, Clone, Copy)]
pub struct ChosenStore<'a> {
    /// The SQLite file.
    pub database: &'a std::path::Path,
    /// The PostgreSQL database.
    pub postgres: Option<&'a PostgresOptions>,
    /// The Kafka topic.
    pub kafka: Option<&'a KafkaOptions>,
    /// Who leads the Kafka topic's writers, when this instance is elected
    /// (`None`: it writes whenever asked, fencing any earlier writer).
    pub leadership: Option<&'a Arc<Leadership>>,
}

/// Opens (creating when missing) the embedded registry on the PostgreSQL
/// database `postgres` names, or else on a SQLite file (see [`open_registry_on`]).
///
/// # Errors
/// [`Error`] when the folder cannot be created or the store opened or loaded.
pub async fn open_registry(
    database: &std::path::Path,
    postgres: Option<&PostgresOptions>,
    checker: Checker,
) -> Result<EmbeddedRegistry, Error> {
    open_registry_on(
        ChosenStore {
            database,
            postgres,
            kafka: None,
            leadership: None,
        },
        checker,
    )
    .await
}

/// Opens (creating when missing) the embedded registry on the chosen
/// store: PostgreSQL (over TLS when its DSN says `sslmode=require`), a
/// Kafka topic (read to its end before this returns, so the registry
/// answers only once it holds everything written before it started), or
/// a SQLite file.
///
/// # Errors
/// [`Error`] when the folder cannot be created or the store opened or loaded.
pub async fn open_registry_on(store: ChosenStore<'_>, checker: Checker) -> Result<EmbeddedRegistry, Error> {
    let store = open_store(store, checker).await?;
    EmbeddedRegistry::open(store, checker).await.map_err(Error::Load)
}

/// Opens (creating when missing) the chosen store itself, without loading
/// a registry from it; `checker` computes the identities of the schemas a
/// Kafka topic holds.
///
/// # Errors
/// [`Error`] when the folder cannot be created or the store opened.
pub async fn open_store(store: ChosenStore<'_>, checker: Checker) -> Result<Arc<dyn Store>, Error> {
    let database = store.database;
    if let Some(options) = store.postgres {
        let store = PostgresStore::open(options)
            .await
            .map_err(|source| Error::ConnectStore { source })?;
        return Ok(Arc::new(store));
    }
    if let Some(options) = store.kafka {
        let kafka = KafkaStore::open(options.clone(), stored_fingerprint(checker))
            .await
            .map_err(|source| Error::OpenKafkaStore {
                topic: options.topic.clone(),
                source,
            })?;
        return Ok(match store.leadership {
            Some(leadership) => Arc::new(kafka.led_by(Arc::clone(leadership))),
            None => Arc::new(kafka),
        });
    }
    if let Some(folder) = database.parent().filter(|folder| !folder.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).map_err(|source| Error::CreateDataDir {
            path: folder.to_owned(),
            source,
        })?;
    }
    let store = SqliteStore::open(database).map_err(|source| Error::OpenStore {
        path: database.to_owned(),
        source,
    })?;
    Ok(Arc::new(store))
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}
