//! Every CRD as YAML: what `schemaops crds` prints and `crds/*.yaml` holds.
//!
//! YAML through serde-saphyr: it quotes `on`, `no`, `yes` and the like, which
//! kubectl would otherwise read as booleans (serde_yaml is archived and does not).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use super::{ClusterSchemaRegistry, Schema, SchemaPolicy, SchemaRegistry, SubjectConfig};

/// Every CRD, with the file name it is kept under in `crds/`.
pub fn definitions() -> Vec<(&'static str, CustomResourceDefinition)> {
    vec![
        ("schema.yaml", Schema::crd()),
        ("subjectconfig.yaml", SubjectConfig::crd()),
        ("schemapolicy.yaml", SchemaPolicy::crd()),
        ("schemaregistry.yaml", SchemaRegistry::crd()),
        ("clusterschemaregistry.yaml", ClusterSchemaRegistry::crd()),
    ]
}

/// One CRD as a YAML document.
///
/// # Errors
/// When serialization fails, which the CRD types rule out in practice.
pub fn to_yaml(definition: &CustomResourceDefinition) -> Result<String, serde_saphyr::ser::Error> {
    serde_saphyr::to_string(definition)
}
