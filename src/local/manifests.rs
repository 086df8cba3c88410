//! Reading manifests: files and folders (in name order), multi-document
//! YAML or JSON, each document a Schema, SubjectConfig or ConfigMap.

use std::fmt;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;

use crate::crd::{API_GROUP, API_VERSION, Schema, SubjectConfig};

/// The namespace of a manifest that names none.
pub const DEFAULT_NAMESPACE: &str = "default";

/// One object from a manifest.
#[derive(Debug, Clone)]
pub enum Manifest {
    /// A Schema.
    Schema(Box<Schema>),
    /// A SubjectConfig.
    SubjectConfig(Box<SubjectConfig>),
    /// A ConfigMap (a source of schema text).
    ConfigMap(Box<ConfigMap>),
}

/// Where a manifest came from: the file and the 1-based document number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file.
    pub path: PathBuf,
    /// The document within it, from 1.
    pub document: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (document {})", self.path.display(), self.document)
    }
}

/// Why the manifests cannot be applied.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// A path could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid YAML.
    #[error("{} is not valid YAML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message, with the line and column.
        message: String,
    },
    /// A document is not an object schemaops understands.
    #[error("{origin}: {problem}")]
    Document {
        /// Where it is.
        origin: Origin,
        /// What is wrong.
        problem: String,
    },
    /// No manifest was found.
    #[error("no manifests found in {}", paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    Empty {
        /// The paths given.
        paths: Vec<PathBuf>,
    },
}

/// Reads every manifest under `paths`: files as given, folders' `.yaml`,
/// `.yml` and `.json` files (recursively) in name order.
///
/// # Errors
/// [`ManifestError`] naming the file, document and problem.
pub fn load(paths: &[PathBuf]) -> Result<Vec<(Origin, Manifest)>, ManifestError> {
    let mut files = Vec::new();
    for path in paths {
        collect_files(path, &mut files)?;
    }
    let mut manifests = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|source| ManifestError::Read {
            path: file.clone(),
            source,
        })?;
        let documents: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|error| ManifestError::Syntax {
            path: file.clone(),
            message: error.to_string(),
        })?;
        for (index, document) in documents.into_iter().enumerate() {
            if document.is_null() {
                continue;
            }
            let origin = Origin {
                path: file.clone(),
                document: index + 1,
            };
            let manifest = parse_document(document).map_err(|problem| ManifestError::Document {
                origin: origin.clone(),
                problem,
            })?;
            manifests.push((origin, manifest));
        }
    }
    if manifests.is_empty() {
        return Err(ManifestError::Empty { paths: paths.to_vec() });
    }
    Ok(manifests)
}

fn collect_files(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), ManifestError> {
    let read_error = |source| ManifestError::Read {
        path: path.to_owned(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(read_error)?;
    if !metadata.is_dir() {
        out.push(path.to_owned());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(read_error)?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<_, _>>()
        .map_err(read_error)?;
    entries.sort();
    for entry in entries {
        let is_manifest = entry
            .extension()
            .and_then(|extension| extension.to_str())
            .is_some_and(|extension| matches!(extension, "yaml" | "yml" | "json"));
        if entry.is_dir() || is_manifest {
            collect_files(&entry, out)?;
        }
    }
    Ok(())
}

/// One document as a typed object, checked as the API server would.
fn parse_document(document: Value) -> Result<Manifest, String> {
    let api_version = document
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let kind = document
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let schemaops = format!("{API_GROUP}/{API_VERSION}");
    let mut manifest = match (api_version.as_str(), kind.as_str()) {
        (version, "Schema") if version == schemaops => Manifest::Schema(Box::new(typed(document, &kind)?)),
        (version, "SubjectConfig") if version == schemaops => {
            Manifest::SubjectConfig(Box::new(typed(document, &kind)?))
        }
        ("v1", "ConfigMap") => Manifest::ConfigMap(Box::new(typed(document, &kind)?)),
        ("", _) | (_, "") => return Err("apiVersion and kind are required".to_owned()),
        _ => {
            return Err(format!(
                "{kind} ({api_version}) is not applied here: use Schema or SubjectConfig ({schemaops}), or ConfigMap (v1)"
            ));
        }
    };
    let metadata = match &mut manifest {
        Manifest::Schema(schema) => &mut schema.metadata,
        Manifest::SubjectConfig(config) => &mut config.metadata,
        Manifest::ConfigMap(config_map) => &mut config_map.metadata,
    };
    if metadata.name.as_deref().is_none_or(str::is_empty) {
        return Err("metadata.name is required".to_owned());
    }
    metadata.namespace.get_or_insert_with(|| DEFAULT_NAMESPACE.to_owned());
    if let Manifest::Schema(schema) = &manifest
        && schema.spec.schema.is_some() == schema.spec.schema_from.is_some()
    {
        return Err("spec: set exactly one of schema and schemaFrom".to_owned());
    }
    Ok(manifest)
}

fn typed<T: serde::de::DeserializeOwned>(document: Value, kind: &str) -> Result<T, String> {
    serde_json::from_value(document).map_err(|error| format!("not a valid {kind}: {error}"))
}
