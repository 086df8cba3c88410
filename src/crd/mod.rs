//! The custom resources schemaops serves: [`Schema`] (one subject, managed
//! declaratively), [`SubjectConfig`] (the policy of one subject) and the
//! cluster-scoped [`SchemaPolicy`] (a platform team's rules over both), and
//! the registry connections [`SchemaRegistry`] and [`ClusterSchemaRegistry`]
//! that the first two can pick with `spec.registryRef`, in the group `schemaops.dev`, version `v1alpha1`. The Rust types are the source
//! of the CRDs (`schemaops crds`, `crds/*.yaml`); field docs become what
//! `kubectl explain` shows.
//!
//! Knows nothing of registries or controllers.

pub mod conditions;
mod connection;
pub mod render;
mod schema;
mod schema_policy;
mod schema_registry;
mod subject_config;
pub mod validate;

pub use connection::{
    BasicAuth, BearerAuth, CaSource, ConfigMapKeySelector, ConnectionSpec, ConnectionStatus, EmbeddedRegistry,
    ExternalRegistrySpec, RegistryAuth, RegistryCapabilities, RegistryKind, RegistryRef, RegistryTimeouts, RegistryTls,
    SecretKeyRef, SecretRef,
};
pub use schema::{
    CompatibilityStatus, ConfigMapKeyRef, DeletionPolicy, IncompatibilityStatus, ManagementPolicy, Observation, Schema,
    SchemaFrom, SchemaReferenceSpec, SchemaSpec, SchemaStatus, SchemaType,
};
pub use schema_policy::{
    CelValidation, CompatibilityRule, ModeName, NamingRule, PolicyMatch, PolicyRegistry, PolicyRegistryKind,
    PolicyRules, RegistriesRule, SchemaPolicy, SchemaPolicySpec, SchemaPolicyStatus, SubjectsRule, ValidationAction,
};
pub use schema_registry::{
    AllowedNamespaces, ClusterSchemaRegistry, ClusterSchemaRegistrySpec, SchemaRegistry, SchemaRegistrySpec,
};
pub use subject_config::{
    CompatibilityLevel, ConfigObservation, SettingSource, SubjectConfig, SubjectConfigSpec, SubjectConfigStatus,
    SubjectMode,
};

/// Which of the two resources an object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ResourceKind {
    /// A [`Schema`].
    Schema,
    /// A [`SubjectConfig`].
    SubjectConfig,
}

impl ResourceKind {
    /// The Kubernetes kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceKind::Schema => "Schema",
            ResourceKind::SubjectConfig => "SubjectConfig",
        }
    }
}

/// The API group of every schemaops resource.
pub const API_GROUP: &str = "schemaops.dev";

/// The API version served.
pub const API_VERSION: &str = "v1alpha1";
