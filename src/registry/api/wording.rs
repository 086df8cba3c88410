//! Confluent's fixed error texts. Tools, client libraries and test suites
//! compare them (`Subject 'x' not found.`), so `message` is Confluent's exact
//! text (from its `Errors`, `RestInvalidVersionException`,
//! `RestInvalidCompatibilityException`, `RestInvalidModeException`,
//! `RestInvalidSubjectException`, `RestReferenceExistsException` and
//! `IdDoesNotMatchException` classes, and `AbstractSchemaRegistry`'s
//! overwrite refusal), and schemaops' own explanation, where it adds
//! something, goes in `detail`.

use crate::registry::Error;

/// The text of an error answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wording {
    /// Confluent's text where it has a fixed one; otherwise ours.
    pub message: String,
    /// What ours adds to Confluent's text (which subject, which value).
    pub detail: Option<String>,
}

impl Wording {
    fn exact(message: String) -> Self {
        Self { message, detail: None }
    }

    /// Confluent's `message`, with the error's own sentence as the detail.
    fn explained(message: String, error: &Error) -> Self {
        Self {
            message,
            detail: Some(error.to_string()),
        }
    }
}

/// The `message` and `detail` of an error answer.
pub fn wording(error: &Error) -> Wording {
    match error {
        Error::SubjectNotFound { subject } => Wording::exact(format!("Subject '{subject}' not found.")),
        Error::VersionNotFound { version, .. } => Wording::explained(format!("Version {version} not found."), error),
        Error::SchemaNotFound { what } => match what.strip_prefix("with ID ") {
            Some(id) => Wording::exact(format!("Schema {} not found", id.trim_matches('`'))),
            None => Wording::explained("Schema not found".to_owned(), error),
        },
        Error::SubjectSoftDeleted { subject } => Wording::exact(format!(
            "Subject '{subject}' was soft deleted.Set permanent=true to delete permanently"
        )),
        Error::SubjectNotSoftDeleted { subject } => Wording::exact(format!(
            "Subject '{subject}' was not deleted first before being permanently deleted"
        )),
        Error::VersionSoftDeleted { subject, version } => Wording::exact(format!(
            "Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete permanently"
        )),
        Error::VersionNotSoftDeleted { subject, version } => Wording::exact(format!(
            "Subject '{subject}' Version {version} was not deleted first before being permanently deleted"
        )),
        Error::SubjectCompatibilityNotConfigured { subject } => Wording::exact(format!(
            "Subject '{subject}' does not have subject-level compatibility configured"
        )),
        Error::SubjectModeNotConfigured { subject } => Wording::exact(format!(
            "Subject '{subject}' does not have subject-level mode configured"
        )),
        Error::InvalidVersion { given } => Wording::exact(format!(
            "The specified version '{given}' is not a valid version id. Allowed values are between [1, 2^31-1] and \
             the string \"latest\""
        )),
        Error::InvalidCompatibilityLevel { .. } => Wording::explained(
            "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, \
             forward_transitive, and full_transitive"
                .to_owned(),
            error,
        ),
        Error::InvalidMode { .. } => Wording::explained(
            "Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD.".to_owned(),
            error,
        ),
        Error::InvalidSubject { subject, .. } => {
            Wording::explained(format!("The specified subject '{subject}' is not a valid."), error)
        }
        Error::ReferencesExist { subject, version, .. } => Wording::explained(
            format!(
                "One or more references exist to the schema {{magic=1,keytype=SCHEMA,subject={subject},version={version}}}."
            ),
            error,
        ),
        Error::IdInUse { id, context, .. } => Wording::explained(
            format!("Overwrite new schema with id {id} in context {context} is not permitted."),
            error,
        ),
        other => Wording::exact(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{SchemaId, SubjectName, Version};

    #[test]
    fn the_message_is_confluents_text_and_the_detail_is_ours() {
        let subject = SubjectName::new("orders").unwrap();
        assert_eq!(
            wording(&Error::SubjectNotFound {
                subject: subject.clone()
            }),
            Wording::exact("Subject 'orders' not found.".to_owned())
        );
        let missing = wording(&Error::VersionNotFound {
            subject: subject.clone(),
            version: "15".to_owned(),
        });
        assert_eq!(missing.message, "Version 15 not found.");
        assert!(missing.detail.unwrap().contains("`orders`"));
        let referenced = wording(&Error::ReferencesExist {
            subject,
            version: Version::new(2).unwrap(),
            referrers: vec![SchemaId::new(7).unwrap()],
        });
        assert_eq!(
            referenced.message,
            "One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=orders,version=2}."
        );
        assert!(referenced.detail.unwrap().contains("schema IDs 7"));
    }
}
