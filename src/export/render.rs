//! The files of an export: one manifest file per subject (its SubjectConfig
//! when it has its own level or mode, then one Schema document per exported
//! version, oldest first) and `index.md`. Pure: text in, text out, no
//! timestamps, everything sorted, so an unchanged registry renders the same
//! bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use kube::api::ObjectMeta;

use super::names::{file_name, object_names};
use super::pretty::pretty_json;
use super::{Export, SubjectExport};
use crate::compat::Format;
use crate::controller::level::level_of;
use crate::crd::{
    DeletionPolicy, RegistryRef, Schema, SchemaReferenceSpec, SchemaSpec, SchemaType, SubjectConfig, SubjectConfigSpec,
    SubjectMode,
};
use crate::registry::{RegistryMode, Version, VersionedSchema};

/// The name of the index file.
pub const INDEX_FILE: &str = "index.md";

/// The first line of `index.md`, by which `export` knows an earlier export.
pub const INDEX_TITLE: &str = "# Exported schema registry\n";

/// Why the files could not be rendered.
#[derive(Debug, thiserror::Error)]
#[error("failed to render the manifests of subject `{subject}` as YAML: {message}")]
pub struct RenderError {
    /// The subject.
    subject: String,
    /// What the serializer said.
    message: String,
}

/// The files of an export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// Every file's text by file name: `<object-name>.yaml` per subject and [`INDEX_FILE`].
    pub files: BTreeMap<String, String>,
    /// The file of each exported subject, by subject.
    pub subject_files: BTreeMap<String, String>,
}

/// Every file of the export: its objects in `namespace`, bound to
/// `registry_ref` when given (`export --registry-ref`).
///
/// # Errors
/// [`RenderError`] when a manifest cannot be serialized.
pub fn render(export: &Export, namespace: &str, registry_ref: Option<&RegistryRef>) -> Result<Rendered, RenderError> {
    let names = object_names(export.subjects.iter().map(|s| s.subject.as_str()));
    let mut files = BTreeMap::new();
    let mut subject_files = BTreeMap::new();
    for subject in &export.subjects {
        let name = names.get(subject.subject.as_str()).cloned().unwrap_or_default();
        let file = file_name(&name);
        files.insert(file.clone(), manifests(subject, &name, namespace, registry_ref)?);
        subject_files.insert(subject.subject.to_string(), file);
    }
    files.insert(INDEX_FILE.to_owned(), index(export, &names));
    Ok(Rendered { files, subject_files })
}

/// The documents of one subject's file.
fn manifests(
    subject: &SubjectExport,
    name: &str,
    namespace: &str,
    registry_ref: Option<&RegistryRef>,
) -> Result<String, RenderError> {
    let failed = |error: serde_saphyr::ser::Error| RenderError {
        subject: subject.subject.to_string(),
        message: error.to_string(),
    };
    let metadata = || ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        ..ObjectMeta::default()
    };
    let mut text = String::new();
    let mode = subject.mode.and_then(subject_mode);
    if subject.level.is_some() || mode.is_some() || !subject.settings.is_empty() {
        let config = SubjectConfig {
            metadata: metadata(),
            spec: SubjectConfigSpec {
                subject: subject.subject.to_string(),
                registry_ref: registry_ref.cloned(),
                compatibility: subject.level.map(level_of),
                contract: subject.settings.clone(),
                mode,
                management_policy: Default::default(),
            },
            status: None,
        };
        text.push_str("---\n");
        text.push_str(&serde_saphyr::to_string(&config).map_err(failed)?);
    }
    for version in &subject.documents {
        let schema = Schema {
            metadata: metadata(),
            spec: SchemaSpec {
                registry_ref: registry_ref.cloned(),
                ..schema_spec(version)
            },
            status: None,
        };
        text.push_str("---\n");
        text.push_str(&serde_saphyr::to_string(&schema).map_err(failed)?);
    }
    Ok(text)
}

/// The spec of a Schema holding one version: Avro and JSON pretty-printed
/// (key order kept), Protobuf as the registry returned it.
fn schema_spec(version: &VersionedSchema) -> SchemaSpec {
    let (schema_type, text) = match version.format {
        Format::Avro => (SchemaType::Avro, pretty_json(&version.text)),
        Format::Json => (SchemaType::Json, pretty_json(&version.text)),
        Format::Protobuf => (SchemaType::Protobuf, None),
    };
    SchemaSpec {
        subject: version.subject.to_string(),
        registry_ref: None,
        schema_type,
        schema: Some(text.unwrap_or_else(|| version.text.clone())),
        schema_from: None,
        references: version
            .references
            .iter()
            .map(|reference| SchemaReferenceSpec {
                name: reference.name.clone(),
                subject: reference.subject.to_string(),
                version: i32::try_from(reference.version.get()).unwrap_or(i32::MAX),
            })
            .collect(),
        metadata: version.contract.metadata.as_deref().cloned(),
        rule_set: version.contract.rule_set.as_deref().cloned(),
        deletion_policy: DeletionPolicy::default(),
        management_policy: Default::default(),
    }
}

/// The SubjectConfig word for a subject's mode; `None` for the modes a
/// SubjectConfig cannot hold (IMPORT, READONLY_OVERRIDE: listed in the index).
fn subject_mode(mode: RegistryMode) -> Option<SubjectMode> {
    match mode {
        RegistryMode::ReadWrite => Some(SubjectMode::Readwrite),
        RegistryMode::ReadOnly => Some(SubjectMode::Readonly),
        RegistryMode::ReadOnlyOverride | RegistryMode::Import => None,
    }
}

/// `index.md`: the global settings, then one row per subject.
fn index(export: &Export, names: &BTreeMap<String, String>) -> String {
    let mut text = format!("{INDEX_TITLE}\n");
    let _ = writeln!(
        text,
        "Global compatibility level: {}. Global mode: {}.\n",
        export.global_level,
        export.global_mode.as_str()
    );
    text.push_str(
        "Apply with `schemaops apply <this folder>` (or commit it and let the operator reconcile it). \
         The global level and mode are not exported: set them on the target registry first, since \
         `apply` checks each replayed version under the subject's level, or the global one.\n\n\
         Version numbers: `apply` registers the exported versions of a subject in order, so the target \
         numbers them 1, 2, 3…; where the source has gaps (deleted versions), the numbers differ, as the \
         \"as\" column shows, and references are rewritten to the new numbers. Soft-deleted versions \
         are listed, not exported. A subject in READONLY mode refuses the versions `apply` registers \
         in the same run: apply its SubjectConfig after the Schemas.\n\n",
    );
    text.push_str(
        "| subject | file | object | versions exported | as | live | soft-deleted | level | mode |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for subject in &export.subjects {
        let name = names.get(subject.subject.as_str()).map_or("", String::as_str);
        let file = file_name(name);
        let exported: Vec<Version> = subject.documents.iter().map(|d| d.version).collect();
        let renumbered = (1..=exported.len())
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let mode = match subject.mode {
            Some(mode) if subject_mode(mode).is_none() => format!("{} (not exported)", mode.as_str()),
            Some(mode) => mode.as_str().to_owned(),
            None => "-".to_owned(),
        };
        let referenced = if subject.selected { "" } else { " (referenced)" };
        let _ = writeln!(
            text,
            "| {}{referenced} | [{file}]({file}) | {name} | {} | {renumbered} | {} | {} | {} | {mode} |",
            cell(subject.subject.as_str()),
            list(&exported),
            list(&subject.live),
            list(&subject.deleted),
            subject.level.map_or_else(|| "-".to_owned(), |level| level.to_string()),
        );
    }
    if !export.deleted_subjects.is_empty() {
        let deleted: Vec<String> = export.deleted_subjects.iter().map(|s| cell(s.as_str())).collect();
        let _ = writeln!(
            text,
            "\nSoft-deleted subjects (every version soft-deleted; not exported): {}.",
            deleted.join(", ")
        );
    }
    text
}

/// A subject as a table cell: in a code span, `|` escaped.
fn cell(subject: &str) -> String {
    let escaped = subject.replace('|', "\\|");
    if subject.contains('`') {
        escaped
    } else {
        format!("`{escaped}`")
    }
}

/// Version numbers joined with commas, or `-`.
fn list(versions: &[Version]) -> String {
    if versions.is_empty() {
        return "-".to_owned();
    }
    versions.iter().map(Version::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::Mode;
    use crate::registry::{SchemaId, SchemaReference, SubjectName};

    fn version(subject: &str, number: i64, text: &str, references: Vec<SchemaReference>) -> VersionedSchema {
        VersionedSchema {
            contract: Default::default(),
            subject: SubjectName::new(subject).unwrap(),
            version: Version::new(number).unwrap(),
            id: SchemaId::new(number).unwrap(),
            format: Format::Avro,
            text: text.to_owned(),
            answer_text: None,
            references,
            deleted: false,
        }
    }

    fn subject(name: &str, documents: Vec<VersionedSchema>) -> SubjectExport {
        SubjectExport {
            settings: Default::default(),
            subject: SubjectName::new(name).unwrap(),
            selected: true,
            live: documents.iter().map(|d| d.version).collect(),
            documents,
            deleted: Vec::new(),
            level: None,
            mode: None,
        }
    }

    #[test]
    fn a_subject_with_its_own_settings_gets_a_subject_config_before_its_schemas() {
        let reference = SchemaReference {
            name: "b.B".to_owned(),
            subject: SubjectName::new("B").unwrap(),
            version: Version::FIRST,
        };
        let mut a = subject(
            "A",
            vec![
                version("A", 2, r#"{"type":"record","name":"A","fields":[]}"#, vec![]),
                version("A", 4, r#""string""#, vec![reference]),
            ],
        );
        a.level = Some(Mode::Full);
        a.mode = Some(RegistryMode::Import);
        a.deleted = vec![Version::new(3).unwrap()];
        let export = Export {
            subjects: vec![a, subject("B", vec![version("B", 1, r#""int""#, vec![])])],
            deleted_subjects: vec![SubjectName::new("gone").unwrap()],
            global_level: Mode::Backward,
            global_mode: RegistryMode::ReadWrite,
        };
        let rendered = render(&export, "ns", None).unwrap();
        let files = &rendered.files;
        assert_eq!(rendered.subject_files["A"], "a.yaml");
        assert_eq!(files.keys().collect::<Vec<_>>(), ["a.yaml", "b.yaml", "index.md"]);
        let a = &files["a.yaml"];
        let kinds: Vec<&str> = a.lines().filter(|line| line.starts_with("kind: ")).collect();
        assert_eq!(kinds, ["kind: SubjectConfig", "kind: Schema", "kind: Schema"], "{a}");
        assert!(
            a.contains("compatibility: FULL\n") && !a.contains("mode:"),
            "IMPORT is not a SubjectConfig mode: {a}"
        );
        assert!(
            a.contains("    {\n      \"type\": \"record\",\n"),
            "pretty-printed: {a}"
        );
        let index = &files["index.md"];
        assert!(
            index.contains("| `A` | [a.yaml](a.yaml) | a | 2, 4 | 1, 2 | 2, 4 | 3 | FULL | IMPORT (not exported) |"),
            "{index}"
        );
        assert!(
            index.contains("Global compatibility level: BACKWARD. Global mode: READWRITE."),
            "{index}"
        );
        assert!(index.contains("not exported): `gone`."), "{index}");
        assert_eq!(render(&export, "ns", None).unwrap(), rendered, "deterministic");
    }
}
