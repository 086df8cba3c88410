//! The validating admission webhook: a `Schema` that the controller would
//! refuse (incompatible, invalid, or claiming another Schema's subject) is
//! refused before it is stored, with the message its status would show.
//!
//! - [`review`]: one AdmissionReview to one response, through the
//!   controller's own read and decide steps.
//! - [`tls`]: the serving certificate, from files or generated.
//! - [`server`]: the axum router and HTTPS serving.
//!
//! The operator's caches and a kube client reach the webhook through
//! [`CachedView`] and [`KubeConfigMaps`]; nothing else here knows kube's client.

pub mod review;
pub mod server;
pub mod tls;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::reflector::Store;

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
