//! The validating admission webhook: a `Schema` that the controller would
//! refuse (incompatible, invalid, or claiming another Schema's subject) is
//! refused before it is stored, with the message its status would show.
//!
//! - [`review`]: one AdmissionReview to one response, through the
//!   controller's own read and decide steps.
//! - [`tls`]: the serving certificate, from files or generated.
//! - [`server`]: the axum router and HTTPS serving.
//! - [`warning`]: warnings split to what the API server passes on whole.
//!
//! The operator's caches and a kube client reach the webhook through
//! [`CachedView`] and [`KubeConfigMaps`]; nothing else here knows kube's client.

pub mod review;
pub mod server;
mod subject_config;
pub mod tls;
pub mod warning;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::reflector::Store;

use crate::cli::{WebhookCertificate, WebhookConfig};
use crate::crd::{Schema, SubjectConfig};
pub use review::{Admission, ConfigMapSource, FixedConfigMaps, FixedView, ViewSource};

/// The operator's caches as the webhook's view.
#[derive(Clone)]
pub struct CachedView {
    /// The Schema cache.
    pub schemas: Store<Schema>,
    /// The SubjectConfig cache.
    pub subject_configs: Store<SubjectConfig>,
}

impl ViewSource for CachedView {
    fn schemas(&self) -> Vec<Arc<Schema>> {
        self.schemas.state()
    }

    fn subject_configs(&self) -> Vec<Arc<SubjectConfig>> {
        self.subject_configs.state()
    }
}

/// ConfigMaps read from the API server.
#[derive(Clone)]
pub struct KubeConfigMaps(pub kube::Client);

#[async_trait]
impl ConfigMapSource for KubeConfigMaps {
    async fn data(&self, namespace: &str, name: &str) -> Result<Option<BTreeMap<String, String>>, String> {
        kube::Api::<ConfigMap>::namespaced(self.0.clone(), namespace)
            .get_opt(name)
            .await
            .map(|config_map| config_map.map(|config_map| config_map.data.unwrap_or_default()))
            .map_err(|error| error.to_string())
    }
}

/// Why the webhook could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The certificate could not be prepared.
    #[error("failed to prepare the webhook's certificate")]
    Certificate(#[source] tls::Error),
    /// The CA bundle could not be written.
    #[error("failed to write the CA bundle to {path}")]
    WriteCaBundle {
        /// The file.
        path: std::path::PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The address could not be bound.
    #[error("failed to listen on {address}")]
    Listen {
        /// The address.
        address: std::net::SocketAddr,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
}

/// A webhook ready to serve: its socket and its TLS configuration.
pub struct Bound {
    /// The bound socket.
    pub listener: std::net::TcpListener,
    /// The bound address (the real port when 0 was asked for).
    pub address: std::net::SocketAddr,
    /// The TLS configuration.
    pub tls: Arc<rustls::ServerConfig>,
}

/// Prepares the certificate (read or generated; its fingerprint logged, the
/// CA bundle written when asked) and binds the address.
///
/// # Errors
/// [`Error`] naming the step that failed.
pub fn bind(config: &WebhookConfig) -> Result<Bound, Error> {
    let identity = match &config.certificate {
        WebhookCertificate::Files { certificate, key } => tls::Identity::from_files(certificate, key),
        WebhookCertificate::Generated { names } => tls::Identity::generate(names),
    }
    .map_err(Error::Certificate)?;
    let generated = matches!(config.certificate, WebhookCertificate::Generated { .. });
    tracing::info!(fingerprint = identity.fingerprint(), generated, "Webhook certificate");
    if let Some(path) = &config.ca_bundle_out {
        std::fs::write(path, identity.ca_bundle()).map_err(|source| Error::WriteCaBundle {
            path: path.clone(),
            source,
        })?;
    }
    let tls = identity.server_config().map_err(Error::Certificate)?;
    let listen = |source| Error::Listen {
        address: config.listen,
        source,
    };
    let listener = std::net::TcpListener::bind(config.listen).map_err(listen)?;
    let address = listener.local_addr().map_err(listen)?;
    Ok(Bound { listener, address, tls })
}
