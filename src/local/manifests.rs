//! Reading manifests: files and folders (in name order) or standard input
//! (`-`), multi-document YAML or JSON, each document a Schema, SubjectConfig,
//! SchemaRegistry or ConfigMap, or a cluster-scoped SchemaPolicy,
//! ClusterSchemaRegistry or Namespace.
//!
//! A GitOps repository holds more than that, and reading it is never an
//! error for it: documents of other kinds are [`Skipped`] and counted, and so
//! are kustomizations and Helm charts (whose rendered output can be piped in
//! through `-`). The schemaops kinds are judged as the API server judges
//! them under strict field validation ([`crate::crd::validate`]): an unknown
//! field is an error, or a warning under [`Strictness::Lenient`].

use std::collections::HashSet;
use std::fmt;
use std::fs::{FileType, Metadata};
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use serde_json::Value;

use crate::crd::validate::{self, Segment, Violation};
use crate::crd::{API_GROUP, API_VERSION, ClusterSchemaRegistry, Schema, SchemaPolicy, SchemaRegistry, SubjectConfig};

/// The namespace of a manifest that names none.
pub const DEFAULT_NAMESPACE: &str = "default";

/// The path argument that reads standard input.
pub const STDIN_ARGUMENT: &str = "-";

/// How standard input is named in messages.
pub const STDIN_NAME: &str = "<stdin>";

/// How unknown fields in schemaops documents are taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Strictness {
    /// As the API server with `fieldValidation=Strict` (kubectl's default): an error.
    #[default]
    Strict,
    /// A warning, for manifests written before the schema was checked
    /// (`--lenient`). Wrong types and values stay errors.
    Lenient,
}

/// Everything read from the paths given.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The objects, in order.
    pub manifests: Vec<(Origin, Manifest)>,
    /// What was not read, in order.
    pub skipped: Vec<Skipped>,
    /// Unknown fields let through under [`Strictness::Lenient`], each a whole message.
    pub warnings: Vec<String>,
}

/// Something found among the paths that is not read as a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skipped {
    /// A document of a kind schemaops does not manage (a Deployment, a Service…).
    OtherKind {
        /// Where it is.
        origin: Origin,
        /// Its `apiVersion`.
        api_version: String,
        /// Its `kind`.
        kind: String,
    },
    /// A document that is no Kubernetes object: not a mapping, or one with
    /// neither `apiVersion` nor `kind` (a CI workflow, Helm values).
    NotAnObject {
        /// Where it is.
        origin: Origin,
    },
    /// A kustomization file (`kustomization.yaml`, `kustomization.yml`,
    /// `Kustomization`), never parsed.
    Kustomization {
        /// The file.
        path: PathBuf,
    },
    /// A Helm chart: a folder with a `Chart.yaml`, skipped whole (its
    /// templates are not manifests until rendered).
    HelmChart {
        /// The chart's folder.
        folder: PathBuf,
    },
}

impl Skipped {
    /// What to tell about a skipped kustomization or chart, with the command
    /// that checks what it renders (`command` is `check` or `apply`); `None`
    /// for documents, which [`skip_summary`] counts.
    pub fn note(&self, command: &str) -> Option<String> {
        match self {
            Skipped::Kustomization { path } => {
                let folder = path.parent().filter(|parent| !parent.as_os_str().is_empty());
                Some(format!(
                    "{}: a kustomization, skipped; to {command} what it renders: kustomize build {} | schemaops {command} -",
                    path.display(),
                    folder.map_or_else(|| ".".to_owned(), |folder| folder.display().to_string()),
                ))
            }
            Skipped::HelmChart { folder } => Some(format!(
                "{}: a Helm chart, skipped with its templates; to {command} what it renders: helm template {} | \
                 schemaops {command} -",
                folder.display(),
                folder.display()
            )),
            Skipped::OtherKind { .. } | Skipped::NotAnObject { .. } => None,
        }
    }
}

/// One line counting what was skipped: "skipped 3 documents of kinds
/// schemaops does not manage (2 apps/v1 Deployment, 1 v1 Service), 1
/// kustomization"; `None` when nothing was.
pub fn skip_summary(skipped: &[Skipped]) -> Option<String> {
    let mut kinds: Vec<(String, usize)> = Vec::new();
    let (mut others, mut not_objects, mut kustomizations, mut charts) = (0, 0, 0, 0);
    for skip in skipped {
        match skip {
            Skipped::OtherKind { api_version, kind, .. } => {
                others += 1;
                let name = format!("{api_version} {kind}");
                match kinds.iter_mut().find(|(known, _)| *known == name) {
                    Some((_, count)) => *count += 1,
                    None => kinds.push((name, 1)),
                }
            }
            Skipped::NotAnObject { .. } => not_objects += 1,
            Skipped::Kustomization { .. } => kustomizations += 1,
            Skipped::HelmChart { .. } => charts += 1,
        }
    }
    let plural = |count: usize, one: &str, many: &str| format!("{count} {}", if count == 1 { one } else { many });
    let mut parts = Vec::new();
    if others > 0 {
        let listed: Vec<String> = kinds.iter().map(|(name, count)| format!("{count} {name}")).collect();
        parts.push(format!(
            "{} of kinds schemaops does not manage ({})",
            plural(others, "document", "documents"),
            listed.join(", ")
        ));
    }
    if not_objects > 0 {
        parts.push(format!(
            "{} that {} no Kubernetes object",
            plural(not_objects, "document", "documents"),
            if not_objects == 1 { "is" } else { "are" }
        ));
    }
    if kustomizations > 0 {
        parts.push(plural(kustomizations, "kustomization", "kustomizations"));
    }
    if charts > 0 {
        parts.push(plural(charts, "Helm chart", "Helm charts"));
    }
    (!parts.is_empty()).then(|| format!("skipped {}", parts.join(", ")))
}

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
    /// A registry connection of one namespace.
    SchemaRegistry(Box<SchemaRegistry>),
    /// A registry connection for the namespaces it allows (cluster-scoped).
    ClusterSchemaRegistry(Box<ClusterSchemaRegistry>),
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
    /// Documents break their CRD's schema (unknown fields, wrong types or
    /// values); every such field of every document, one per line.
    #[error("{}", problems.join("\n"))]
    Fields {
        /// Each field's message, with its file, document and line.
        problems: Vec<String>,
    },
    /// No manifest was found.
    #[error(
        "no manifests found in {}{}",
        paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
        skip_summary(skipped).map(|skipped| format!(" ({skipped})")).unwrap_or_default()
    )]
    Empty {
        /// The paths given.
        paths: Vec<PathBuf>,
        /// What was skipped there.
        skipped: Vec<Skipped>,
    },
}

/// Reads every manifest under `paths`, strictly, keeping only the objects
/// ([`read`] says what else it finds).
///
/// # Errors
/// As [`read`].
pub fn load(paths: &[PathBuf]) -> Result<Vec<(Origin, Manifest)>, ManifestError> {
    read(paths, Strictness::Strict).map(|loaded| loaded.manifests)
}

/// Reads every manifest under `paths`: files as given, folders' `.yaml`,
/// `.yml` and `.json` files (recursively) in name order, and standard input
/// for `-` (named `<stdin>` in messages). A UTF-8 BOM and Windows line
/// endings are read as any YAML parser reads them; empty documents are
/// passed over.
///
/// # Guarantees
/// Each real folder is read once, however many paths lead to it: a symlink
/// to a folder already read (`loop -> .`, or a second argument naming the
/// same folder) is skipped, not an error, and not followed. Links to other
/// folders are followed. A file named by an argument is read as given (a
/// FIFO there is read like any file, as `cat` would). Documents of other
/// kinds, kustomizations and Helm charts are [`Skipped`], never an error.
///
/// # Errors
/// [`ManifestError`] naming the file, document and problem; inside a
/// folder, an entry named like a manifest that is not a regular file is
/// [`ManifestError::NotAFile`]. Fields that break a CRD's schema are
/// gathered from every document into one [`ManifestError::Fields`].
pub fn read(paths: &[PathBuf], strictness: Strictness) -> Result<Loaded, ManifestError> {
    let mut walk = Walk::default();
    for path in paths {
        walk.argument(path)?;
    }
    let mut loaded = Loaded {
        skipped: walk.skipped,
        ..Loaded::default()
    };
    let mut problems = Vec::new();
    for input in walk.inputs {
        let (file, text) = input.read()?;
        // A BOM is no part of the first document.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let documents: Vec<Value> =
            serde_saphyr::from_multiple_with_options(text, yaml_options()).map_err(|error| ManifestError::Syntax {
                path: file.clone(),
                message: error.to_string(),
            })?;
        let starts = document_starts(text);
        // The parser passes over empty documents; each one it returns is the
        // next with content, numbered as a reader counts them (empty ones too).
        let with_content: Vec<(usize, usize)> = (1..)
            .zip(&starts)
            .filter(|(_, (_, content))| *content)
            .map(|(number, (line, _))| (number, *line))
            .collect();
        // Should the two counts ever disagree (a document holding only a null), each
        // document keeps line 1 rather than a wrong line.
        let counted = with_content.len() == documents.len();
        let lines: Vec<&str> = text.lines().collect();
        // A `List` (what `kubectl get … -o yaml` writes) stands for its items, each
        // named by the List's document.
        let documents = documents.into_iter().enumerate().flat_map(|(index, document)| {
            let items: Vec<Value> = match list_items(&document) {
                Some(items) => items.to_vec(),
                None => vec![document],
            };
            items.into_iter().map(move |item| (index, item))
        });
        for (index, document) in documents {
            if document.is_null() {
                continue;
            }
            let (number, line) = if counted { with_content[index] } else { (index + 1, 1) };
            let origin = Origin {
                path: file.clone(),
                document: number,
                line,
            };
            let kind = match kind_of(&document) {
                Ok(DocumentKind::Read(kind)) => kind,
                Ok(DocumentKind::Other { api_version, kind }) => {
                    loaded.skipped.push(Skipped::OtherKind {
                        origin,
                        api_version,
                        kind,
                    });
                    continue;
                }
                Ok(DocumentKind::NotAnObject) => {
                    loaded.skipped.push(Skipped::NotAnObject { origin });
                    continue;
                }
                Err(problem) => return Err(ManifestError::Document { origin, problem }),
            };
            // ConfigMaps and Namespaces are not schemaops' kinds: `validate` passes them by.
            let violations = validate::validate(kind.name(), &document).unwrap_or_default();
            let (warnings, errors): (Vec<Violation>, Vec<Violation>) = violations
                .into_iter()
                .partition(|violation| strictness == Strictness::Lenient && violation.is_unknown_field());
            // The document's own lines (to the next document's start), for the line of each field.
            let end = match starts.get(number) {
                Some((next, _)) if counted => next - 1,
                _ => lines.len(),
            };
            let within = lines.get(origin.line.saturating_sub(1)..end).unwrap_or_default();
            let locate = |violation: &Violation| {
                let offset = field_line(within, &violation.path);
                let line = offset.map_or(origin.line, |offset| origin.line + offset);
                format!("{origin}, line {line}: {violation}")
            };
            loaded.warnings.extend(
                warnings
                    .iter()
                    .map(|violation| format!("{}; ignored under --lenient", locate(violation))),
            );
            if !errors.is_empty() {
                problems.extend(errors.iter().map(locate));
                continue;
            }
            let manifest = parse_document(document, kind).map_err(|problem| ManifestError::Document {
                origin: origin.clone(),
                problem,
            })?;
            loaded.manifests.push((origin, manifest));
        }
    }
    if !problems.is_empty() {
        return Err(ManifestError::Fields { problems });
    }
    if loaded.manifests.is_empty() {
        let named = |path: &PathBuf| {
            if path.as_os_str() == STDIN_ARGUMENT {
                PathBuf::from(STDIN_NAME)
            } else {
                path.clone()
            }
        };
        return Err(ManifestError::Empty {
            paths: paths.iter().map(named).collect(),
            skipped: loaded.skipped,
        });
    }
    Ok(loaded)
}

/// The line of the field at `path` within `lines` (a document's lines), as
/// an offset from its first: each field name of the path is looked for
/// below the previous one, as a key at the start of a line (`name:`, after
/// any list dashes, or `"name":`), and in a JSON document anywhere in a
/// line. List indices are not followed. For a field that is missing (a
/// required one), the deepest one found; `None` when not even the first is.
fn field_line(lines: &[&str], path: &[Segment]) -> Option<usize> {
    let json = lines
        .iter()
        .map(|line| line.trim_start())
        .find(|line| !line.is_empty() && !line.starts_with('#'))
        .is_some_and(|line| line.starts_with('{'));
    let mut found = None;
    let mut from = 0;
    for segment in path {
        let (Segment::Field(name) | Segment::Key(name)) = segment else {
            continue;
        };
        let keys = [format!("{name}:"), format!("\"{name}\":"), format!("'{name}':")];
        let is_key = |line: &str| {
            let content = line.trim_start().trim_start_matches(['-', ' ']);
            let yaml_key = keys.iter().any(|key| {
                content
                    .strip_prefix(key.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
            });
            yaml_key || (json && line.contains(keys[1].as_str()))
        };
        match lines.iter().skip(from).position(|line| is_key(line)) {
            Some(offset) => {
                from += offset;
                found = Some(from);
            }
            None => break,
        }
    }
    found
}

/// The 1-based start line of each YAML document in `text`, in order, and
/// whether it has content: the line of its first content, or of its `---`
/// marker when it has none (an empty document, which the parser passes over).
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

fn document_starts(text: &str) -> Vec<(usize, bool)> {
    let mut starts = Vec::new();
    // The open document: its marker line (if explicit) and its first content line.
    let mut open: Option<(Option<usize>, Option<usize>)> = None;
    let close = |open: &mut Option<(Option<usize>, Option<usize>)>, starts: &mut Vec<(usize, bool)>| {
        if let Some((marker, content)) = open.take() {
            starts.push((content.or(marker).unwrap_or(1), content.is_some()));
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

/// Where a stream of documents comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Input {
    /// A file.
    File(PathBuf),
    /// Standard input (`-`).
    Stdin,
}

impl Input {
    /// The name messages give it, and its text.
    fn read(&self) -> Result<(PathBuf, String), ManifestError> {
        match self {
            Input::File(path) => std::fs::read_to_string(path)
                .map(|text| (path.clone(), text))
                .map_err(|source| ManifestError::Read {
                    path: path.clone(),
                    source,
                }),
            Input::Stdin => {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text)
                    .map(|_| (PathBuf::from(STDIN_NAME), text))
                    .map_err(|source| ManifestError::Read {
                        path: PathBuf::from(STDIN_NAME),
                        source,
                    })
            }
        }
    }
}

/// Whether a file is a kustomization, which kustomize reads and schemaops does not.
fn is_kustomization(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| matches!(name, "kustomization.yaml" | "kustomization.yml" | "Kustomization"))
}

/// The walk over the arguments: the inputs found, in order, what was
/// skipped, and the folders already read.
#[derive(Default)]
struct Walk {
    inputs: Vec<Input>,
    skipped: Vec<Skipped>,
    visited: HashSet<FolderId>,
}

impl Walk {
    /// A path given on the command line: `-` is standard input (read once,
    /// however often it is given), a folder is walked, anything else is read
    /// as given.
    fn argument(&mut self, path: &Path) -> Result<(), ManifestError> {
        if path.as_os_str() == STDIN_ARGUMENT {
            if !self.inputs.contains(&Input::Stdin) {
                self.inputs.push(Input::Stdin);
            }
            return Ok(());
        }
        if is_kustomization(path) {
            self.skipped.push(Skipped::Kustomization { path: path.to_owned() });
            return Ok(());
        }
        let metadata = std::fs::metadata(path).map_err(|source| ManifestError::Read {
            path: path.to_owned(),
            source,
        })?;
        if metadata.is_dir() {
            self.folder(path, &metadata)
        } else {
            self.inputs.push(Input::File(path.to_owned()));
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
        if path.join("Chart.yaml").is_file() {
            self.skipped.push(Skipped::HelmChart {
                folder: path.to_owned(),
            });
            return Ok(());
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(read_error)?
            .map(|entry| entry.map(|entry| entry.path()))
            .collect::<Result<_, _>>()
            .map_err(read_error)?;
        entries.sort();
        for entry in entries {
            if is_kustomization(&entry) {
                self.skipped.push(Skipped::Kustomization { path: entry });
                continue;
            }
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
                self.inputs.push(Input::File(entry));
            } else if is_manifest {
                let what = describe(metadata.file_type());
                return Err(ManifestError::NotAFile { path: entry, what });
            }
        }
        Ok(())
    }
}

/// The kinds read here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KindRead {
    Schema,
    SubjectConfig,
    SchemaPolicy,
    SchemaRegistry,
    ClusterSchemaRegistry,
    ConfigMap,
    Namespace,
}

impl KindRead {
    const ALL: [KindRead; 7] = [
        KindRead::Schema,
        KindRead::SubjectConfig,
        KindRead::SchemaPolicy,
        KindRead::SchemaRegistry,
        KindRead::ClusterSchemaRegistry,
        KindRead::ConfigMap,
        KindRead::Namespace,
    ];

    /// Its `kind`.
    fn name(self) -> &'static str {
        match self {
            KindRead::Schema => "Schema",
            KindRead::SubjectConfig => "SubjectConfig",
            KindRead::SchemaPolicy => "SchemaPolicy",
            KindRead::SchemaRegistry => "SchemaRegistry",
            KindRead::ClusterSchemaRegistry => "ClusterSchemaRegistry",
            KindRead::ConfigMap => "ConfigMap",
            KindRead::Namespace => "Namespace",
        }
    }

    /// The `apiVersion` it is read under.
    fn api_version(self) -> &'static str {
        match self {
            KindRead::Schema
            | KindRead::SubjectConfig
            | KindRead::SchemaPolicy
            | KindRead::SchemaRegistry
            | KindRead::ClusterSchemaRegistry => "schemaops.dev/v1alpha1",
            KindRead::ConfigMap | KindRead::Namespace => "v1",
        }
    }
}

/// What a document is, by its `apiVersion` and `kind`.
#[derive(Debug, PartialEq, Eq)]
enum DocumentKind {
    /// One of the kinds read here.
    Read(KindRead),
    /// A Kubernetes object of another kind.
    Other {
        /// Its `apiVersion`.
        api_version: String,
        /// Its `kind`.
        kind: String,
    },
    /// No Kubernetes object at all.
    NotAnObject,
}

/// The items of a `v1` `List` document (`kubectl get namespaces -o yaml`).
fn list_items(document: &Value) -> Option<&[Value]> {
    let object = document.as_object()?;
    let is_list = object.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && object.get("kind").and_then(Value::as_str) == Some("List");
    object
        .get("items")
        .and_then(Value::as_array)
        .filter(|_| is_list)
        .map(Vec::as_slice)
}

/// What `document` is; an error for a document that names only one of
/// `apiVersion` and `kind`, or a kind or version of schemaops' own group
/// that schemaops does not serve (a typo, not someone else's object).
fn kind_of(document: &Value) -> Result<DocumentKind, String> {
    let Some(object) = document.as_object() else {
        return Ok(DocumentKind::NotAnObject);
    };
    let field = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    if !object.contains_key("apiVersion") && !object.contains_key("kind") {
        return Ok(DocumentKind::NotAnObject);
    }
    if api_version.is_empty() || kind.is_empty() {
        return Err("apiVersion and kind are required".to_owned());
    }
    if let Some(read) = KindRead::ALL
        .into_iter()
        .find(|read| read.name() == kind && read.api_version() == api_version)
    {
        return Ok(DocumentKind::Read(read));
    }
    let served = format!("{API_GROUP}/{API_VERSION}");
    if api_version.split('/').next() == Some(API_GROUP) {
        if api_version != served {
            return Err(format!("{api_version} is not served: use {served}"));
        }
        let meant = validate::closest(&kind, validate::kinds())
            .map(|meant| format!(" (did you mean {meant}?)"))
            .unwrap_or_default();
        return Err(format!(
            "{kind} is not a schemaops kind{meant}: {served} serves Schema, SubjectConfig, SchemaPolicy, SchemaRegistry and \
             ClusterSchemaRegistry"
        ));
    }
    Ok(DocumentKind::Other { api_version, kind })
}

/// One document of a kind read here as a typed object, checked as the API server would.
fn parse_document(document: Value, kind: KindRead) -> Result<Manifest, String> {
    let name = kind.name();
    let mut manifest = match kind {
        KindRead::Schema => Manifest::Schema(Box::new(typed(document, name)?)),
        KindRead::SubjectConfig => Manifest::SubjectConfig(Box::new(typed(document, name)?)),
        KindRead::SchemaPolicy => Manifest::SchemaPolicy(Box::new(typed(document, name)?)),
        KindRead::SchemaRegistry => Manifest::SchemaRegistry(Box::new(typed(document, name)?)),
        KindRead::ClusterSchemaRegistry => Manifest::ClusterSchemaRegistry(Box::new(typed(document, name)?)),
        KindRead::ConfigMap => Manifest::ConfigMap(Box::new(typed(document, name)?)),
        KindRead::Namespace => Manifest::Namespace(Box::new(typed(document, name)?)),
    };
    let (metadata, cluster_scoped) = match &mut manifest {
        Manifest::Schema(schema) => (&mut schema.metadata, false),
        Manifest::SubjectConfig(config) => (&mut config.metadata, false),
        Manifest::ConfigMap(config_map) => (&mut config_map.metadata, false),
        Manifest::SchemaPolicy(policy) => (&mut policy.metadata, true),
        Manifest::Namespace(namespace) => (&mut namespace.metadata, true),
        Manifest::SchemaRegistry(connection) => (&mut connection.metadata, false),
        Manifest::ClusterSchemaRegistry(connection) => (&mut connection.metadata, true),
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

    /// The start lines of the documents with content, checked against the
    /// parser's own count of documents.
    fn starts(text: &str) -> Vec<usize> {
        let documents: Vec<Value> = serde_saphyr::from_multiple(text).unwrap();
        let starts: Vec<usize> = document_starts(text)
            .into_iter()
            .filter_map(|(line, content)| content.then_some(line))
            .collect();
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
    fn empty_documents_are_counted_but_hold_no_content() {
        assert_eq!(starts("a: 1\n---\n---\n# only a comment\n---\nb: 2\n"), [1, 6]);
        assert_eq!(
            document_starts("a: 1\n---\n---\nb: 2\n"),
            [(1, true), (2, false), (4, true)]
        );
    }

    #[test]
    fn content_on_the_marker_line_starts_there() {
        assert_eq!(starts("--- {a: 1}\n--- {b: 2}\n"), [1, 2]);
    }
}

#[cfg(test)]
mod reading {
    use super::*;

    fn field(names: &[&str]) -> Vec<Segment> {
        names.iter().map(|name| Segment::Field((*name).to_owned())).collect()
    }

    #[test]
    fn a_field_is_found_below_its_parents_in_yaml_and_json() {
        let yaml = [
            "kind: Schema",
            "metadata:",
            "  name: x",
            "spec:",
            "  schema: |",
            "    {\"name\": 1}",
            "  - name: y",
        ];
        assert_eq!(field_line(&yaml, &field(&["spec", "name"])), Some(6));
        assert_eq!(field_line(&yaml, &field(&["metadata", "name"])), Some(2));
        // A missing (required) field: its parent's line.
        assert_eq!(field_line(&yaml, &field(&["spec", "subject"])), Some(3));
        assert_eq!(field_line(&yaml, &field(&["status"])), None);
        let json = [
            "{\"kind\": \"Schema\",",
            "  \"spec\": {\"subject\": \"s\",",
            "    \"schemaTyp\": \"AVRO\"}}",
        ];
        assert_eq!(field_line(&json, &field(&["spec", "schemaTyp"])), Some(2));
        // A longer key that starts with the name is not the name.
        assert_eq!(
            field_line(&["schemaType: AVRO", "schema: x"], &field(&["schema"])),
            Some(1)
        );
    }

    #[test]
    fn documents_are_sorted_by_what_they_are() {
        let kind = |text: &str| kind_of(&serde_saphyr::from_str::<Value>(text).unwrap());
        assert_eq!(
            kind("apiVersion: v1\nkind: ConfigMap"),
            Ok(DocumentKind::Read(KindRead::ConfigMap))
        );
        assert_eq!(
            kind("apiVersion: apps/v1\nkind: Deployment"),
            Ok(DocumentKind::Other {
                api_version: "apps/v1".to_owned(),
                kind: "Deployment".to_owned()
            })
        );
        assert_eq!(
            kind("apiVersion: schemaops.dev/v1alpha1\nkind: ClusterSchemaRegistry"),
            Ok(DocumentKind::Read(KindRead::ClusterSchemaRegistry))
        );
        assert_eq!(kind("on: push\njobs: {}"), Ok(DocumentKind::NotAnObject));
        assert_eq!(kind("- a\n- b"), Ok(DocumentKind::NotAnObject));
        assert_eq!(kind("kind: Schema"), Err("apiVersion and kind are required".to_owned()));
        assert_eq!(
            kind("apiVersion: schemaops.dev/v1alpha1\nkind: Shema"),
            Err(
                "Shema is not a schemaops kind (did you mean Schema?): schemaops.dev/v1alpha1 serves Schema, \
                 SubjectConfig, SchemaPolicy, SchemaRegistry and ClusterSchemaRegistry"
                    .to_owned()
            )
        );
        assert_eq!(
            kind("apiVersion: schemaops.dev/v1\nkind: Schema"),
            Err("schemaops.dev/v1 is not served: use schemaops.dev/v1alpha1".to_owned())
        );
    }

    #[test]
    fn the_summary_counts_each_kind_skipped() {
        let origin = Origin {
            path: "a.yaml".into(),
            document: 1,
            line: 1,
        };
        let other = |kind: &str| Skipped::OtherKind {
            origin: origin.clone(),
            api_version: "v1".to_owned(),
            kind: kind.to_owned(),
        };
        let skipped = [
            other("Service"),
            other("Secret"),
            other("Service"),
            Skipped::NotAnObject { origin: origin.clone() },
            Skipped::Kustomization {
                path: "k/kustomization.yaml".into(),
            },
            Skipped::HelmChart { folder: "chart".into() },
            Skipped::HelmChart { folder: "other".into() },
        ];
        assert_eq!(
            skip_summary(&skipped).unwrap(),
            "skipped 3 documents of kinds schemaops does not manage (2 v1 Service, 1 v1 Secret), 1 document that \
             is no Kubernetes object, 1 kustomization, 2 Helm charts"
        );
        assert_eq!(skip_summary(&[]), None);
        assert_eq!(
            skipped[4].note("check").unwrap(),
            "k/kustomization.yaml: a kustomization, skipped; to check what it renders: kustomize build k | \
             schemaops check -"
        );
    }

    #[test]
    fn a_list_stands_for_its_items_as_kubectl_get_writes_it() {
        let folder = tempfile::tempdir().unwrap();
        let file = folder.path().join("namespaces.yaml");
        std::fs::write(
            &file,
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: team-a\n    \
             labels: {env: prod}\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: web}\nmetadata:\n  \
             resourceVersion: \"\"\n",
        )
        .unwrap();
        let loaded = read(&[file], Strictness::Strict).unwrap();
        assert_eq!(loaded.manifests.len(), 1);
        assert!(matches!(&loaded.manifests[0].1, Manifest::Namespace(namespace)
            if namespace.metadata.name.as_deref() == Some("team-a")));
        assert_eq!(loaded.skipped.len(), 1, "the Deployment is skipped and counted");
    }

    #[test]
    fn a_bom_and_windows_line_endings_read_as_plain_yaml() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("crlf.yaml");
        let text = "\u{feff}---\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: a\r\n---\r\n---\r\n\
                    apiVersion: schemaops.dev/v1alpha1\r\nkind: Schema\r\nmetadata:\r\n  name: s\r\nspec:\r\n  \
                    subject: s\r\n  schema: |\r\n    \"long\"\r\n  schemaTyp: AVRO\r\n";
        std::fs::write(&path, text).unwrap();
        let error = read(std::slice::from_ref(&path), Strictness::Strict).unwrap_err();
        let message = error.to_string();
        assert!(
            message
                .ends_with("crlf.yaml (document 3), line 16: spec.schemaTyp: unknown field (did you mean schemaType?)"),
            "{message}"
        );
        let loaded = read(&[path], Strictness::Lenient).unwrap();
        assert_eq!(loaded.manifests.len(), 2);
        let Manifest::Schema(schema) = &loaded.manifests[1].1 else {
            panic!("a Schema")
        };
        assert_eq!(
            schema.spec.schema.as_deref(),
            Some("\"long\"\n"),
            "no carriage return in the text"
        );
        assert_eq!(loaded.manifests[1].0.line, 8);
        assert_eq!(loaded.warnings.len(), 1);
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
