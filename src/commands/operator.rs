//! `schemaops operator`: the embedded registry's REST API, the health
//! endpoints, and the controllers, until SIGTERM or Ctrl-C.
//!
//! With an external registry (`--registry-url`) the controllers manage that
//! registry and no REST API is served on `--registry-listen`: clients use the
//! external registry directly. A pass-through would expose the operator's
//! own registry credentials to anyone who can reach the port.
//!
//! On a Kafka topic (`--store kafka://…`) two elections run, each for its
//! own job. The Kubernetes Lease (`--leader-election`) decides which replica
//! runs the reconcilers. The topic's group decides which instance writes
//! the topic: the embedded registry joins it exactly as `schemaops
//! registry` does, so operator replicas and registry instances on one
//! topic elect one writer among all of them, and a follower forwards the
//! REST writes it cannot make. Either way one writer appends: the elected
//! instance fences every earlier producer. The group is used for the store,
//! not the Lease, because a registry outside Kubernetes shares the topic
//! and cannot take part in a Lease; a Lease-driven store beside group-elected
//! registries would fence them and be fenced in turn. The reconciler's
//! writes land while its replica's instance leads the group; otherwise they
//! are refused (50004) and retried with the reconcile's backoff, so beside
//! an operator run registries with `--store-leader-eligibility false`.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;

use super::Verdict;
use super::forward::forward_writes;
use crate::cli::OperatorConfig;
use crate::connections::{Connections, KubeReads};
use crate::controller::judge::PolicySource;
use crate::controller::leader::{LeaderElection, Lost};
use crate::controller::operator::{self, Settings};
use crate::controller::policy_watch;
use crate::http_server;
use crate::metrics::{Metrics, instrument};
use crate::registry::Registry;
use crate::registry::api::{ApiState, Auth, router};
use crate::registry::embedded::kafka::election::Leadership;
use crate::registry::external::ExternalRegistry;
use crate::webhook;

/// Why the operator stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The registry could not be opened.
    #[error(transparent)]
    Registry(#[from] super::registry::Error),
    /// The admission webhook could not start.
    #[error("failed to start the admission webhook")]
    Webhook(#[source] crate::webhook::Error),
    /// The external registry's TLS files could not be used.
    #[error("failed to configure the external registry client")]
    ExternalRegistry(#[source] crate::registry::external::ConfigError),
    /// No Kubernetes client configuration was found or it is unusable.
    #[error("failed to configure the Kubernetes client")]
    KubeConfig(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// An address could not be bound.
    #[error("failed to listen on {address}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// This replica lost the leader Lease and stopped.
    #[error("lost the leader lease")]
    LeadershipLost(#[source] Lost),
    /// A server failed.
    #[error("the {server} server failed")]
    Serve {
        /// Which server.
        server: &'static str,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
}

/// Runs the operator until a shutdown signal.
///
/// # Errors
/// [`Error`] when a part cannot start.
pub async fn run(config: OperatorConfig) -> Result<Verdict, Error> {
    let client = kube_client(&config).await?;
    // An embedded registry on a Kafka topic writes only while its instance
    // is elected by the topic's group, as `schemaops registry` does.
    let store_election = config
        .kafka
        .as_ref()
        .filter(|_| config.external_registry.is_none() && config.postgres.is_none())
        .and_then(|kafka| Some((kafka, kafka.election.clone()?)));
    let leadership = store_election.as_ref().map(|_| Leadership::new());
    let registry: Arc<dyn Registry> = match &config.external_registry {
        Some(external) => {
            tracing::info!(url = %external.display_url(), "Managing an external registry");
            Arc::new(ExternalRegistry::new(external, config.checker).map_err(Error::ExternalRegistry)?)
        }
        None => Arc::new(
            super::registry::open_registry_on(
                super::registry::ChosenStore {
                    database: &config.database,
                    postgres: config.postgres.as_ref(),
                    kafka: config.kafka.as_ref(),
                    leadership: leadership.as_ref(),
                },
                config.checker,
            )
            .await?,
        ),
    };
    let ready = Arc::new(AtomicBool::new(false));
    let mut metrics = Metrics::new(Some(Arc::clone(&registry)));
    if let Some(leadership) = &leadership {
        metrics = metrics.with_store_leadership(Arc::clone(leadership));
    }
    let metrics = Arc::new(metrics);

    // The embedded registry's REST API; none in external mode (see the module docs).
    let registry_listener = match config.external_registry {
        Some(_) => None,
        None => Some(bind(config.registry_listen).await?),
    };
    let forwarder = match (store_election, &leadership, &registry_listener) {
        (Some((kafka, options)), Some(leadership), Some(listener)) => {
            let address = listener.local_addr().map_err(serve_error("registry"))?;
            let forwarder = super::registry::join_store_election(
                kafka,
                options,
                leadership,
                address,
                Arc::clone(&registry),
                config.body_limit,
            )
            .await?;
            Some(Arc::new(forwarder))
        }
        _ => None,
    };
    let health_listener = bind(config.health_listen).await?;
    let health_address = health_listener.local_addr().map_err(serve_error("health"))?;
    // Scripts and tests read the bound addresses (port 0 picks one) from stdout.
    match (&registry_listener, &config.external_registry) {
        (Some(listener), _) => {
            let registry_address = listener.local_addr().map_err(serve_error("registry"))?;
            let store = match (&config.postgres, &config.kafka) {
                (Some(_), _) => "postgres".to_owned(),
                (None, Some(kafka)) => format!("kafka topic {}", kafka.topic),
                (None, None) => config.database.display().to_string(),
            };
            tracing::info!(%registry_address, %health_address, %store, "Starting the operator");
            tracing::info!(pages = %crate::ui::pages_url(registry_address), "Web pages for browsing the registry");
            println!("registry listening on {registry_address}");
        }
        (None, Some(external)) => {
            tracing::info!(%health_address, registry = %external.display_url(), "Starting the operator");
            println!("registry external at {}", external.display_url());
        }
        (None, None) => {}
    }
    println!("health listening on {health_address}");
    let webhook = config
        .webhook
        .as_ref()
        .map(webhook::bind)
        .transpose()
        .map_err(Error::Webhook)?;
    if let Some(bound) = &webhook {
        tracing::info!(webhook_address = %bound.address, "Serving the admission webhook");
        println!("webhook listening on {}", bound.address);
    }
    let _ = std::io::stdout().flush();

    let (stopping, stopped) = tokio::sync::watch::channel(false);
    // Shared: a lost leadership stops everything, as a signal does.
    let stopping = Arc::new(stopping);
    let signal_stopping = Arc::clone(&stopping);
    let wait_for_stop = move || {
        let mut stopped = stopped.clone();
        async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        }
    };
    tokio::spawn(async move {
        super::registry::shutdown_signal().await;
        // Running checks (the registry API's and the controllers') stop at their next checkpoint.
        crate::compat::budget::shut_down();
        tracing::info!("Shutting down");
        let _ = signal_stopping.send(true);
    });

    // The policies in force, read before anything is judged, then kept
    // current on every replica (its webhook and registry port judge too).
    let policies = PolicySource::default();
    policy_watch::load_once(&client, &policies).await;
    let (_, policy_changes, keep_policies_current) = policy_watch::watch(&client, policies.clone(), wait_for_stop());
    tokio::spawn(keep_policies_current);

    // The registry port is set up below, once the Schema cache exists: its
    // pages show which Schema object manages each version.
    let api_metrics = Arc::clone(&metrics);
    let health = http_server::serve(
        health_listener,
        health_router(Arc::clone(&ready), Arc::clone(&metrics)),
        config.server_limits,
        wait_for_stop(),
    );
    let election_client = client.clone();
    // Objects without a registryRef use the registry of the flags; connections that say
    // `embedded: {}` use the embedded one, which runs only without --registry-url.
    let embedded = config.external_registry.is_none().then(|| Arc::clone(&registry));
    let connections = Arc::new(Connections::new(
        Arc::clone(&registry),
        embedded,
        Arc::new(KubeReads(client.clone())),
        config.checker,
    ));
    let controllers = operator::Controllers::new(
        client.clone(),
        Arc::clone(&connections),
        Settings {
            namespace: config.namespace.clone(),
            checker: config.checker,
            resync: config.resync,
            config_map_poll: config.config_map_poll,
            metrics,
            policies: policies.clone(),
            policy_changes: Some(policy_changes),
        },
    );
    // A follower's controllers do not run, so neither do their caches: its
    // webhook keeps caches of its own, or it would miss every conflict.
    let (view, keep_view_filled) = match (&webhook, &config.leader_election) {
        (Some(_), Some(_)) => {
            let (schemas, subject_configs, keep_filled) =
                operator::watched_caches(&client, config.namespace.clone(), wait_for_stop());
            let view = webhook::CachedView {
                schemas,
                subject_configs,
            };
            (view, Some(keep_filled))
        }
        _ => {
            let view = webhook::CachedView {
                schemas: controllers.schemas(),
                subject_configs: controllers.subject_configs(),
            };
            (view, None)
        }
    };
    let api = {
        let registry = Arc::clone(&registry);
        let owners: Arc<dyn crate::ui::owners::Owners> = Arc::new(view.schemas.clone());
        let stop = wait_for_stop();
        let body_limit = config.body_limit;
        let limits = config.server_limits;
        let metrics = api_metrics;
        let policies = policies.policies();
        let auth = Auth::from_policy(config.access.clone())
            .map(|auth| Arc::new(auth.counting_into(metrics.rest_write_counters())));
        if registry_listener.is_some() {
            tracing::info!("Registry API: {}", Auth::describe(auth.as_deref()));
        }
        async move {
            if let Some(listener) = registry_listener {
                // Counted here, scraped on the health port. The operator's
                // registry API takes the default check budgets.
                let state = ApiState {
                    registry,
                    body_limit,
                    auth,
                    policies: Some(policies),
                    admission: Some(Arc::new(crate::registry::api::Admission::new(
                        crate::registry::api::AdmissionConfig::default(),
                        metrics.admission_metrics(),
                    ))),
                };
                let api = router(state.clone());
                let mut app = instrument(crate::ui::beside_api(api, state, Some(owners)), metrics, false);
                if let Some(forwarder) = forwarder {
                    app = app.layer(axum::middleware::from_fn_with_state(forwarder, forward_writes));
                }
                http_server::serve(listener, app, limits, stop).await;
            }
        }
    };
    let admission = Arc::new(webhook::Admission {
        registry,
        connections: Some(connections),
        checker: config.checker,
        view: Arc::new(view),
        config_maps: Arc::new(webhook::KubeConfigMaps(client)),
        namespace: config.namespace.clone(),
        policies,
    });
    let webhook = async {
        match webhook {
            Some(bound) => {
                let router = webhook::server::router(admission);
                let serve =
                    webhook::server::serve(bound.listener, bound.tls, router, config.server_limits, wait_for_stop());
                match keep_view_filled {
                    Some(keep_filled) => futures::future::join(serve, keep_filled).await.0,
                    None => serve.await,
                }
            }
            None => Ok(()),
        }
    };
    let controllers = async {
        let Some(election) = config.leader_election.clone() else {
            controllers
                .run(wait_for_stop(), move || ready.store(true, Ordering::Release))
                .await;
            return Ok(());
        };
        // Every replica serves the registry API and health: ready once serving,
        // whether or not it leads.
        ready.store(true, Ordering::Release);
        lead(
            LeaderElection::new(election_client, election),
            controllers,
            &wait_for_stop,
            &stopping,
        )
        .await
    };
    let ((), (), webhook, led) = tokio::join!(api, health, webhook, controllers);
    // Leaves the store's election only now that nothing writes any more (see `schemaops registry`).
    if let Some(leadership) = &leadership {
        leadership
            .leave(crate::registry::embedded::kafka::election::LEAVE_TIMEOUT)
            .await;
    }
    webhook.map_err(serve_error("webhook"))?;
    led.map_err(Error::LeadershipLost)?;
    Ok(Verdict::Compatible)
}

/// Runs the controllers while holding the Lease: waits for it, runs them,
/// and stops them (and, through `stopping`, the whole process, which its
/// Deployment restarts as a fresh candidate) when the Lease is lost. On a
/// shutdown signal the controllers stop first, then the Lease is released.
async fn lead<S, F>(
    election: LeaderElection,
    controllers: operator::Controllers,
    wait_for_stop: &S,
    stopping: &tokio::sync::watch::Sender<bool>,
) -> Result<(), Lost>
where
    S: Fn() -> F,
    F: std::future::Future<Output = ()> + Send + Sync + 'static,
{
    tracing::info!(identity = %election.identity(), "Waiting for the leader lease");
    tokio::select! {
        () = election.acquire() => {}
        () = wait_for_stop() => return Ok(()),
    }
    let (lost_sender, mut lost_receiver) = tokio::sync::watch::channel(false);
    let stop = wait_for_stop();
    let controllers_stop = async move {
        tokio::select! {
            () = stop => {}
            _ = lost_receiver.wait_for(|lost| *lost) => {}
        }
    };
    let holding = async {
        tokio::select! {
            lost = election.hold() => {
                tracing::error!(error = &lost as &dyn std::error::Error, "Lost the leader lease; stopping");
                let _ = lost_sender.send(true);
                let _ = stopping.send(true);
                Err(lost)
            }
            () = wait_for_stop() => Ok(()),
        }
    };
    let ((), held) = tokio::join!(controllers.run(controllers_stop, || {}), holding);
    if held.is_ok() {
        election.release().await;
    }
    held
}

async fn kube_client(config: &OperatorConfig) -> Result<kube::Client, Error> {
    let boxed = |error: &dyn std::fmt::Display| Error::KubeConfig(error.to_string().into());
    let kube_config = match &config.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(|e| boxed(&e))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| boxed(&e))?
        }
        None => kube::Config::infer().await.map_err(|e| boxed(&e))?,
    };
    kube::Client::try_from(kube_config).map_err(|e| boxed(&e))
}

async fn bind(address: SocketAddr) -> Result<tokio::net::TcpListener, Error> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| Error::Listen { address, source })
}

fn serve_error(server: &'static str) -> impl Fn(std::io::Error) -> Error {
    move |source| Error::Serve { server, source }
}

/// `/healthz` answers while the process runs; `/readyz` once the controllers' caches are filled;
/// `/metrics` in the Prometheus text format.
fn health_router(ready: Arc<AtomicBool>, metrics: Arc<Metrics>) -> Router {
    let metrics = Router::new()
        .route("/metrics", get(crate::metrics::serve_metrics))
        .with_state(metrics);
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .merge(metrics)
        .route(
            "/readyz",
            get(move || {
                let ready = ready.load(Ordering::Acquire);
                async move {
                    if ready {
                        (StatusCode::OK, "ready")
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "starting")
                    }
                }
            }),
        )
}
