//! Confluent's fixed error texts. Tools and client libraries match on them
//! (`Subject 'x' not found.`), so an answer starts with Confluent's exact
//! text (from its `Errors`, `RestInvalidVersionException`,
//! `RestInvalidCompatibilityException` and `RestReferenceExistsException`
//! classes), and our own detail, where it adds something, follows it.

use crate::registry::Error;

/// The message of an error answer: Confluent's text first, where it has a
/// fixed one, then what ours adds; otherwise ours alone.
pub fn message(error: &Error) -> String {
    match error {
        Error::SubjectNotFound { subject } => format!("Subject '{subject}' not found."),
        Error::VersionNotFound { subject, version } => {
            format!("Version {version} not found. (subject '{subject}')")
        }
        Error::SchemaNotFound { what } => match what.strip_prefix("with ID ") {
            Some(id) => format!("Schema {} not found", id.trim_matches('`')),
            None => format!("Schema not found ({what})"),
        },
        Error::SubjectSoftDeleted { subject } => {
            format!("Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")
        }
        Error::SubjectNotSoftDeleted { subject } => {
            format!("Subject '{subject}' was not deleted first before being permanently deleted")
        }
        Error::VersionSoftDeleted { subject, version } => {
            format!("Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete permanently")
        }
        Error::VersionNotSoftDeleted { subject, version } => {
            format!("Subject '{subject}' Version {version} was not deleted first before being permanently deleted")
        }
        Error::SubjectCompatibilityNotConfigured { subject } => {
            format!("Subject '{subject}' does not have subject-level compatibility configured")
        }
        Error::SubjectModeNotConfigured { subject } => {
            format!("Subject '{subject}' does not have subject-level mode configured")
        }
        Error::VersionNotNext { subject, wanted, next } => format!(
            "Version is not one more than previous version (subject '{subject}' takes version {next} next, not \
             {wanted})"
        ),
        Error::InvalidVersion { given } => format!(
            "The specified version '{given}' is not a valid version id. Allowed values are between [1, 2^31-1] and \
             the string \"latest\""
        ),
        Error::InvalidCompatibilityLevel { given } => format!(
            "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, \
             forward_transitive, and full_transitive (got '{given}')"
        ),
        Error::ReferencesExist { subject, version, .. } => format!(
            "One or more references exist to the schema {{magic=1,keytype=SCHEMA,subject={subject},version={version}}}. \
             ({error})"
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{SchemaId, SubjectName, Version};

    #[test]
    fn fixed_texts_come_first_and_our_detail_follows() {
        let subject = SubjectName::new("orders").unwrap();
        assert_eq!(
            message(&Error::SubjectNotFound {
                subject: subject.clone()
            }),
            "Subject 'orders' not found."
        );
        let referenced = message(&Error::ReferencesExist {
            subject,
            version: Version::new(2).unwrap(),
            referrers: vec![SchemaId::new(7).unwrap()],
        });
        assert!(
            referenced.starts_with(
                "One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=orders,version=2}."
            ) && referenced.contains("schema IDs 7"),
            "{referenced}"
        );
    }
}
