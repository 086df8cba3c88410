//! What kinds the server serves: the built-in ones and every kind a CRD defines.

use std::sync::Arc;

use serde_json::{Value, json};

use super::store::Store;

/// The group, plural of CustomResourceDefinitions.
pub const CRD_GROUP: &str = "apiextensions.k8s.io";
/// The plural of CustomResourceDefinitions.
pub const CRD_PLURAL: &str = "customresourcedefinitions";
/// The group of Roles and their bindings.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// One served resource (group, version, plural) and what is known about it.
#[derive(Debug, Clone)]
pub struct Resource {
    /// The API group; empty for the core group.
    pub group: String,
    /// The version, e.g. `v1`.
    pub version: String,
    /// The plural, the name in URLs.
    pub plural: String,
    /// The singular name.
    pub singular: String,
    /// The kind.
    pub kind: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// kubectl short names.
    pub short_names: Vec<String>,
    /// kubectl categories.
    pub categories: Vec<String>,
    /// Whether `.status` is a subresource (writes to the main resource ignore it).
    pub status_subresource: bool,
    /// `additionalPrinterColumns` of a CRD version.
    pub printer_columns: Vec<Value>,
    /// The `openAPIV3Schema` of a CRD version (for list-map keys).
    pub schema: Option<Arc<Value>>,
    /// Whether a CRD defines it.
    pub custom: bool,
}

impl Resource {
    /// The group its objects are stored under: `events.k8s.io` Events share the core Events' storage.
    pub fn storage_group(&self) -> &str {
        if self.group == super::events::GROUP && self.plural == "events" {
            ""
        } else {
            &self.group
        }
    }
}

impl Resource {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group`, or `plural` for the core group, as error messages name it.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Whether this is the CustomResourceDefinition resource itself.
    pub fn is_crd(&self) -> bool {
        self.group == CRD_GROUP && self.plural == CRD_PLURAL
    }

    /// Whether this is the Namespace resource.
    pub fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.plural == "namespaces"
    }

    /// The verbs discovery lists.
    pub fn verbs(&self) -> Vec<&'static str> {
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }
}

fn builtin(
    group: &str,
    version: &str,
    plural: &str,
    kind: &str,
    namespaced: bool,
    short_names: &[&str],
    status_subresource: bool,
) -> Resource {
    Resource {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        namespaced,
        short_names: short_names.iter().map(|name| name.to_string()).collect(),
        categories: Vec::new(),
        status_subresource,
        printer_columns: Vec::new(),
        schema: None,
        custom: false,
    }
}

/// The built-in kinds.
pub fn builtins() -> Vec<Resource> {
    vec![
        builtin("", "v1", "namespaces", "Namespace", false, &["ns"], true),
        builtin("", "v1", "configmaps", "ConfigMap", true, &["cm"], false),
        builtin("", "v1", "secrets", "Secret", true, &[], false),
        builtin("", "v1", "events", "Event", true, &["ev"], false),
        builtin(
            CRD_GROUP,
            "v1",
            CRD_PLURAL,
            "CustomResourceDefinition",
            false,
            &["crd", "crds"],
            true,
        ),
        builtin("coordination.k8s.io", "v1", "leases", "Lease", true, &[], false),
        builtin("events.k8s.io", "v1", "events", "Event", true, &["ev"], false),
        // Stored and served as plain objects (no controllers, defaults or validation), so that
        // kubectl can apply what the Helm chart renders.
        builtin("", "v1", "serviceaccounts", "ServiceAccount", true, &["sa"], false),
        builtin("", "v1", "services", "Service", true, &["svc"], true),
        builtin(
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            true,
            &["pvc"],
            true,
        ),
        builtin("apps", "v1", "deployments", "Deployment", true, &["deploy"], true),
        builtin(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            true,
            &["pdb"],
            true,
        ),
        builtin(
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            "NetworkPolicy",
            true,
            &["netpol"],
            false,
        ),
        builtin(RBAC_GROUP, "v1", "roles", "Role", true, &[], false),
        builtin(RBAC_GROUP, "v1", "rolebindings", "RoleBinding", true, &[], false),
        builtin(RBAC_GROUP, "v1", "clusterroles", "ClusterRole", false, &[], false),
        builtin(
            RBAC_GROUP,
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            false,
            &[],
            false,
        ),
        builtin(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            false,
            &[],
            false,
        ),
    ]
}

/// The resources one CRD object defines, one per served version.
pub fn from_crd(crd: &Value) -> Vec<Resource> {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item.as_str())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let kind = text(&names["kind"]);
    let singular = match names["singular"].as_str() {
        Some(singular) if !singular.is_empty() => singular.to_string(),
        _ => kind.to_lowercase(),
    };
    let versions = spec["versions"].as_array().map(Vec::as_slice).unwrap_or_default();
    versions
        .iter()
        .filter(|version| version["served"].as_bool().unwrap_or(true))
        .map(|version| Resource {
            group: text(&spec["group"]),
            version: text(&version["name"]),
            plural: text(&names["plural"]),
            singular: singular.clone(),
            kind: kind.clone(),
            namespaced: spec["scope"].as_str() != Some("Cluster"),
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            status_subresource: version["subresources"].get("status").is_some(),
            printer_columns: version["additionalPrinterColumns"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
            schema: version["schema"].get("openAPIV3Schema").cloned().map(Arc::new),
            custom: true,
        })
        .collect()
}

/// Every served resource: built-ins first, then those of the CRDs, in name order.
pub fn all(store: &Store) -> Vec<Resource> {
    let mut resources = builtins();
    resources.extend_from_slice(store.crd_resources());
    resources
}

/// The resource served at `group/version/plural`.
///
/// Called for every request and every wake of every watch: the CRDs' resources are kept by the
/// store, with their schemas shared.
pub fn find(store: &Store, group: &str, version: &str, plural: &str) -> Option<Resource> {
    let wanted =
        |resource: &Resource| resource.group == group && resource.version == version && resource.plural == plural;
    builtins()
        .into_iter()
        .find(wanted)
        .or_else(|| store.crd_resources().iter().find(|resource| wanted(resource)).cloned())
}

/// The status a CRD gets from the server's controllers: Established, NamesAccepted, acceptedNames.
pub fn crd_status(crd: &Value, now: &str, previous: Option<&Value>) -> Value {
    let condition = |kind: &str, reason: &str, message: &str| {
        let since = previous
            .and_then(|status| status["conditions"].as_array())
            .and_then(|conditions| conditions.iter().find(|condition| condition["type"] == kind))
            .and_then(|condition| condition["lastTransitionTime"].as_str())
            .unwrap_or(now)
            .to_string();
        json!({"type": kind, "status": "True", "reason": reason, "message": message, "lastTransitionTime": since})
    };
    let stored: Vec<Value> = crd["spec"]["versions"]
        .as_array()
        .map(|versions| {
            versions
                .iter()
                .filter(|version| version["storage"] == true)
                .map(|version| version["name"].clone())
                .collect()
        })
        .unwrap_or_default();
    json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": crd["spec"]["names"].clone(),
        "storedVersions": stored,
    })
}

/// Fills in the `default`s of a CRD's structural schema, as the real server does on every write:
/// a missing field (or a null one that is not nullable) whose schema has a default gets it.
pub fn apply_defaults(object: &mut Value, schema: &Value) {
    match object {
        Value::Object(fields) => {
            if let Some(properties) = schema["properties"].as_object() {
                for (name, property) in properties {
                    if name == "metadata" && schema.get("x-kubernetes-embedded-resource").is_none() {
                        continue;
                    }
                    let missing = match fields.get(name) {
                        None => true,
                        Some(Value::Null) => property["nullable"] != true,
                        Some(_) => false,
                    };
                    if missing && let Some(default) = property.get("default") {
                        fields.insert(name.clone(), default.clone());
                    }
                    if let Some(field) = fields.get_mut(name) {
                        apply_defaults(field, property);
                    }
                }
            }
            if let Some(additional) = schema
                .get("additionalProperties")
                .filter(|additional| additional.is_object())
            {
                for (name, field) in fields.iter_mut() {
                    if schema["properties"].get(name).is_none() {
                        apply_defaults(field, additional);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    apply_defaults(item, item_schema);
                }
            }
        }
        _ => {}
    }
}
