//! Reading manifests: files and folders (in name order), multi-document
//! YAML or JSON, each document a Schema, SubjectConfig or ConfigMap, or a
//! cluster-scoped SchemaPolicy or Namespace.

use std::collections::HashSet;
use std::fmt;
use std::fs::{FileType, Metadata};
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use serde_json::Value;

use crate::crd::{API_GROUP, API_VERSION, Schema, SchemaPolicy, SubjectConfig};

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
    /// A SchemaPolicy (cluster-scoped).
    SchemaPolicy(Box<SchemaPolicy>),
    /// A Namespace (cluster-scoped): its labels are what policies select on.
    Namespace(Box<Namespace>),
}

/// Where a manifest came from: the file, the 1-based document number, and
/// the line where that document starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file.
    pub path: PathBuf,
    /// The document within it, from 1.
    pub document: usize,
    /// The 1-based line of the document's first content (its first line that
    /// is not blank, a comment or a bare `---`); 1 when unknown.
    pub line: usize,
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
    /// A folder entry named like a manifest is not a regular file (a FIFO,
    /// a socket, a device): it is refused before it is opened, since opening
    /// a FIFO waits for a writer.
    #[error("{} is {what}, not a regular file", path.display())]
    NotAFile {
        /// The entry.
        path: PathBuf,
        /// What it is instead, with its article ("a FIFO").
        what: &'static str,
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
/// # Guarantees
/// Each real folder is read once, however many paths lead to it: a symlink
/// to a folder already read (`loop -> .`, or a second argument naming the
/// same folder) is skipped, not an error, and not followed. Links to other
/// folders are followed. A file named by an argument is read as given (a
/// FIFO there is read like any file, as `cat` would).
///
/// # Errors
/// [`ManifestError`] naming the file, document and problem; inside a
/// folder, an entry named like a manifest that is not a regular file is
/// [`ManifestError::NotAFile`].
pub fn load(paths: &[PathBuf]) -> Result<Vec<(Origin, Manifest)>, ManifestError> {
    let mut walk = Walk::default();
    for path in paths {
        walk.argument(path)?;
    }
    let files = walk.files;
    let mut manifests = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|source| ManifestError::Read {
            path: file.clone(),
            source,
        })?;
        let documents: Vec<Value> =
            serde_saphyr::from_multiple_with_options(&text, yaml_options()).map_err(|error| ManifestError::Syntax {
                path: file.clone(),
                message: error.to_string(),
            })?;
        let starts = document_starts(&text);
        // Should the two counts ever disagree, the documents keep line 1 rather than a wrong line.
        let counted = starts.len() == documents.len();
        let line_of = |index: usize| if counted { starts[index] } else { 1 };
        for (index, document) in documents.into_iter().enumerate() {
            if document.is_null() {
                continue;
            }
            let origin = Origin {
                path: file.clone(),
                document: index + 1,
                line: line_of(index),
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

/// The 1-based start line of each YAML document in `text`, in order: the
/// line of its first content, or of its `---` marker when it has none.
///
/// A document begins at a `---` marker in column 0, or at content after the
/// previous document ended (`...`) or at the top of the file; comments,
/// blank lines and directives (`%YAML`) before content belong to no
/// document. Block scalars are indented in manifests, so a marker in column
/// 0 is always a marker.
/// How much YAML a manifest file may hold. The parser's default budget
/// stops at 1,024 documents, fewer than a generated bundle of manifests can
/// have; the limits that bound the work (events, nodes, scalar bytes,
/// nesting) are raised in proportion and stay finite.
fn yaml_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_documents = 100_000;
    budget.max_events *= 20;
    budget.max_nodes *= 20;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

fn document_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    // The open document: its marker line (if explicit) and its first content line.
    let mut open: Option<(Option<usize>, Option<usize>)> = None;
    let close = |open: &mut Option<(Option<usize>, Option<usize>)>, starts: &mut Vec<usize>| {
        if let Some((marker, content)) = open.take() {
            starts.push(content.or(marker).unwrap_or(1));
        }
    };
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let marker_rest = |marker: &str| {
            line.strip_prefix(marker)
                .filter(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
                .map(str::trim)
        };
        let is_content = |rest: &str| !rest.is_empty() && !rest.starts_with('#');
        if let Some(rest) = marker_rest("---") {
            close(&mut open, &mut starts);
            open = Some((Some(number), is_content(rest).then_some(number)));
        } else if marker_rest("...").is_some() {
            close(&mut open, &mut starts);
        } else if is_content(line.trim()) {
            match &mut open {
                Some((_, content @ None)) => *content = Some(number),
                Some(_) => {}
                None if line.starts_with('%') => {}
                None => open = Some((None, Some(number))),
            }
        }
    }
    close(&mut open, &mut starts);
    starts
}

/// What identifies a real folder, whatever path reached it.
#[cfg(unix)]
type FolderId = (u64, u64);
#[cfg(not(unix))]
type FolderId = PathBuf;

/// The device and inode of a folder.
#[cfg(unix)]
fn folder_id(_path: &Path, metadata: &Metadata) -> std::io::Result<FolderId> {
    use std::os::unix::fs::MetadataExt;
    Ok((metadata.dev(), metadata.ino()))
}

/// The folder's canonical path, where there are no inode numbers.
#[cfg(not(unix))]
fn folder_id(path: &Path, _metadata: &Metadata) -> std::io::Result<FolderId> {
    std::fs::canonicalize(path)
}

/// What a file that is neither a regular file nor a folder is, for messages.
#[cfg(unix)]
fn describe(file_type: FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_char_device() {
        "a character device"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn describe(_file_type: FileType) -> &'static str {
    "a special file"
}

/// The walk over the arguments: the files found, in order, and the folders
/// already read.
#[derive(Default)]
struct Walk {
    files: Vec<PathBuf>,
    visited: HashSet<FolderId>,
}

impl Walk {
    /// A path given on the command line: a folder is walked, anything else is read as given.
    fn argument(&mut self, path: &Path) -> Result<(), ManifestError> {
        let metadata = std::fs::metadata(path).map_err(|source| ManifestError::Read {
            path: path.to_owned(),
            source,
        })?;
        if metadata.is_dir() {
            self.folder(path, &metadata)
        } else {
            self.files.push(path.to_owned());
            Ok(())
        }
    }

    /// The manifests in `path` and below, unless this folder was read already.
    fn folder(&mut self, path: &Path, metadata: &Metadata) -> Result<(), ManifestError> {
        let read_error = |source| ManifestError::Read {
            path: path.to_owned(),
            source,
        };
        if !self.visited.insert(folder_id(path, metadata).map_err(read_error)?) {
            tracing::debug!(folder = %path.display(), "Skipping a folder already read");
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
            // Follows symlinks, and only looks: the file is opened later, once known to be one.
            let metadata = match std::fs::metadata(&entry) {
                Ok(metadata) => metadata,
                // A dangling link or unreadable entry with another name is none of ours.
                Err(_) if !is_manifest => continue,
                Err(source) => return Err(ManifestError::Read { path: entry, source }),
            };
            if metadata.is_dir() {
                self.folder(&entry, &metadata)?;
            } else if is_manifest && metadata.is_file() {
                self.files.push(entry);
            } else if is_manifest {
                let what = describe(metadata.file_type());
                return Err(ManifestError::NotAFile { path: entry, what });
            }
        }
        Ok(())
    }
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
        (version, "SchemaPolicy") if version == schemaops => Manifest::SchemaPolicy(Box::new(typed(document, &kind)?)),
        ("v1", "ConfigMap") => Manifest::ConfigMap(Box::new(typed(document, &kind)?)),
        ("v1", "Namespace") => Manifest::Namespace(Box::new(typed(document, &kind)?)),
        ("", _) | (_, "") => return Err("apiVersion and kind are required".to_owned()),
        _ => {
            return Err(format!(
                "{kind} ({api_version}) is not applied here: use Schema, SubjectConfig or SchemaPolicy \
                 ({schemaops}), or ConfigMap or Namespace (v1)"
            ));
        }
    };
    let (metadata, cluster_scoped) = match &mut manifest {
        Manifest::Schema(schema) => (&mut schema.metadata, false),
        Manifest::SubjectConfig(config) => (&mut config.metadata, false),
        Manifest::ConfigMap(config_map) => (&mut config_map.metadata, false),
        Manifest::SchemaPolicy(policy) => (&mut policy.metadata, true),
        Manifest::Namespace(namespace) => (&mut namespace.metadata, true),
    };
    if metadata.name.as_deref().is_none_or(str::is_empty) {
        return Err("metadata.name is required".to_owned());
    }
    if cluster_scoped {
        // As the API server does: a cluster-scoped object has no namespace.
        metadata.namespace = None;
    } else {
        metadata.namespace.get_or_insert_with(|| DEFAULT_NAMESPACE.to_owned());
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The start lines, checked against the parser's own count of documents.
    fn starts(text: &str) -> Vec<usize> {
        let documents: Vec<Value> = serde_saphyr::from_multiple(text).unwrap();
        let starts = document_starts(text);
        assert_eq!(starts.len(), documents.len(), "{text:?} parsed as {documents:?}");
        starts
    }

    #[test]
    fn a_single_document_starts_at_its_first_content_line_after_comments() {
        assert_eq!(starts("# a comment\n\napiVersion: v1\nkind: ConfigMap\n"), [3]);
    }

    #[test]
    fn documents_after_markers_start_below_the_marker() {
        assert_eq!(starts("a: 1\n---\n# about b\nb: 2\n---\nc: |\n  x\n  y\n"), [1, 4, 6]);
    }

    #[test]
    fn a_leading_marker_does_not_count_as_a_document_of_its_own() {
        assert_eq!(starts("# header\n---\na: 1\n"), [3]);
    }

    #[test]
    fn an_explicit_end_marker_ends_the_document() {
        assert_eq!(starts("a: 1\n...\n---\nb: 2\n"), [1, 4]);
    }

    #[test]
    fn content_on_the_marker_line_starts_there() {
        assert_eq!(starts("--- {a: 1}\n--- {b: 2}\n"), [1, 2]);
    }
}

#[cfg(test)]
mod large_files {
    use super::*;

    #[test]
    fn a_bundle_of_thousands_of_documents_is_read_whole() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("bundle.yaml");
        let documents: Vec<String> = (0..3_000)
            .map(|index| {
                format!(
                    "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: s{index}\nspec:\n  \
                     subject: s{index}-value\n  schema: '\"long\"'\n"
                )
            })
            .collect();
        std::fs::write(&path, documents.join("---\n")).unwrap();
        let manifests = load(&[path]).unwrap();
        assert_eq!(manifests.len(), 3_000);
    }
}
