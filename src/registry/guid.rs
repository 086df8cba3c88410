//! A schema's GUID: the content-derived identifier Confluent's newest
//! serializers put in a record header instead of the 4-byte ID.
//!
//! Computed as Confluent computes it (its `MD5.ofSchema` over the schema's
//! hash feed), so the same schema has the same GUID in both registries: MD5
//! over the text Confluent stores, which is the text we answer (for Avro,
//! Avro's `Schema.toString()`; see `SchemaContent::answer_text`), then each
//! reference's name, subject and version (4 bytes, big-endian), then — when present — a 1 byte and the metadata
//! (tags, properties, sensitive names, each sorted), then a 1 byte and the
//! rules (migration, domain, encoding; each rule's set fields in order),
//! then the rule set's `enableAt` when it has one.
//! No separators; the 16 digest bytes are the UUID as they are.

use std::fmt;
use std::str::FromStr;

use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};

use super::SchemaReference;
use super::contract::{Contract, Rule, RuleKind};

/// A schema's GUID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Guid(uuid::Uuid);

impl Guid {
    /// The GUID of a schema with this stored text, references and contract.
    pub fn of(text: &str, references: &[SchemaReference], contract: &Contract) -> Guid {
        let mut md5 = Md5::new();
        md5.update(text.as_bytes());
        for reference in references {
            md5.update(reference.name.as_bytes());
            md5.update(reference.subject.as_str().as_bytes());
            md5.update(i32::try_from(reference.version.get()).unwrap_or(i32::MAX).to_be_bytes());
        }
        if let Some(metadata) = &contract.metadata {
            md5.update([1]);
            for (path, tags) in &metadata.tags {
                md5.update(path.as_bytes());
                for tag in tags {
                    md5.update(tag.as_bytes());
                }
            }
            for (key, value) in &metadata.properties {
                md5.update(key.as_bytes());
                md5.update(value.as_bytes());
            }
            for name in &metadata.sensitive {
                md5.update(name.as_bytes());
            }
        }
        if let Some(rules) = &contract.rule_set {
            md5.update([1]);
            let all = rules
                .migration_rules
                .iter()
                .chain(&rules.domain_rules)
                .chain(&rules.encoding_rules);
            for rule in all {
                feed_rule(&mut md5, rule);
            }
            if let Some(environment) = rules.enable_at {
                md5.update(environment.as_str().as_bytes());
            }
        }
        let digest: [u8; 16] = md5.finalize().into();
        Guid(uuid::Uuid::from_bytes(digest))
    }

    /// The 16 bytes, as a header carries them.
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }
}

/// A rule's part of the feed: the fields it sets, in Confluent's order (the
/// kind and mode as a server fills them in when a client leaves them out).
fn feed_rule(md5: &mut Md5, rule: &Rule) {
    let kind = match rule.kind {
        RuleKind::Transform => "TRANSFORM",
        RuleKind::Condition => "CONDITION",
    };
    let texts = [
        rule.name.as_deref(),
        rule.doc.as_deref(),
        Some(kind),
        Some(rule.mode.as_str()),
        rule.rule_type.as_deref(),
    ];
    for text in texts.into_iter().flatten() {
        md5.update(text.as_bytes());
    }
    for tag in &rule.tags {
        md5.update(tag.as_bytes());
    }
    for (key, value) in &rule.params {
        md5.update(key.as_bytes());
        md5.update(value.as_bytes());
    }
    for text in [&rule.expr, &rule.on_success, &rule.on_failure].into_iter().flatten() {
        md5.update(text.as_bytes());
    }
    if rule.disabled {
        md5.update([1]);
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// Why text is not a GUID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not a GUID (expected 32 hexadecimal digits, as 8-4-4-4-12)")]
pub struct InvalidGuid {
    /// The text given.
    pub given: String,
}

impl FromStr for Guid {
    type Err = InvalidGuid;

    fn from_str(text: &str) -> Result<Self, InvalidGuid> {
        uuid::Uuid::try_parse(text).map(Guid).map_err(|_| InvalidGuid {
            given: text.chars().take(64).collect(),
        })
    }
}

impl TryFrom<String> for Guid {
    type Error = InvalidGuid;
    fn try_from(text: String) -> Result<Self, InvalidGuid> {
        text.parse()
    }
}

impl From<Guid> for String {
    fn from(guid: Guid) -> String {
        guid.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::contract::{Metadata, RuleSet};
    use crate::registry::{SubjectName, Version};

    /// The Avro schema, references, metadata and rules of the regression
    /// data Confluent keeps for its own GUIDs, with the GUIDs it expects.
    const PERSON: &str = r#"{"type":"record","name":"Person","namespace":"io.confluent.kafka.example","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"},{"name":"ssn","type":"string"},{"name":"user","type":"io.confluent.kafka.example.User"},{"name":"address","type":"io.confluent.kafka.example.Address"}]}"#;

    fn references() -> Vec<SchemaReference> {
        let reference = |name: &str, subject: &str, version: i64| SchemaReference {
            name: name.to_owned(),
            subject: SubjectName::new(subject).unwrap(),
            version: Version::new(version).unwrap(),
        };
        vec![
            reference("io.confluent.kafka.example.User", "User", 1),
            reference("io.confluent.kafka.example.Address", "Address", 2),
        ]
    }

    fn metadata() -> Metadata {
        serde_json::from_value(serde_json::json!({
            "tags": {"environment": ["production", "staging"], "team": ["data-engineering"]},
            "properties": {"owner": "data-team", "description": "Person schema for user management",
                           "version": "1.0.0"},
            "sensitive": ["ssn", "credit-card"]
        }))
        .unwrap()
    }

    fn rules() -> RuleSet {
        let rule = |name: &str, doc: &str, kind: &str, mode: &str, kind_of: &str, field: &str, expr: &str| {
            serde_json::json!({"name": name, "doc": doc, "kind": kind, "mode": mode, "type": kind_of,
                               "tags": ["PERSON"], "params": {"field": field}, "expr": expr,
                               "onSuccess": "none", "onFailure": "error", "disabled": false})
        };
        serde_json::from_value(serde_json::json!({
            "migrationRules": [
                rule("upgrade-rule-1", "Upgrade rule for field changes", "TRANSFORM", "UPGRADE", "FIELD_UPDATE",
                     "name", "field.name = field.name.toUpperCase()"),
                rule("downgrade-rule-1", "Downgrade rule for compatibility", "TRANSFORM", "DOWNGRADE",
                     "FIELD_DELETE", "ssn", "delete field.ssn"),
            ],
            "domainRules": [
                rule("validation-rule-1", "Validate age field", "CONDITION", "WRITE", "FIELD_VALIDATION", "age",
                     "field.age >= 0 && field.age <= 150"),
                rule("masking-rule-1", "Mask sensitive data on read", "TRANSFORM", "READ", "DATA_MASKING", "ssn",
                     "field.ssn = '***-**-****'"),
            ]
        }))
        .unwrap()
    }

    #[test]
    fn guids_equal_those_confluent_computes() {
        let cases = [
            (false, false, false, "d629bb05-ad85-3d20-fbcb-895de3c459f7"),
            (false, false, true, "c0708b8f-65f6-b698-bffe-45c1dfa8987c"),
            (false, true, false, "2034166c-90a8-1166-0ff2-f5f62c80dbe0"),
            (false, true, true, "d9877161-cfdf-d8c5-4eb4-ab37ed50e9d5"),
            (true, false, false, "5c08d70e-5347-41b2-6369-199425d044eb"),
            (true, false, true, "96825311-eb10-b7f5-48be-2a023b4c018e"),
            (true, true, false, "3619d8e0-2ee8-de51-0d9e-2520d39174d5"),
            (true, true, true, "589556fb-ad98-e8e0-94fa-e6da3455433a"),
        ];
        for (with_references, with_metadata, with_rules, expected) in cases {
            let references = if with_references { references() } else { Vec::new() };
            let contract = Contract {
                metadata: with_metadata.then(|| Box::new(metadata())),
                rule_set: with_rules.then(|| Box::new(rules())),
            };
            let guid = Guid::of(PERSON, &references, &contract);
            assert_eq!(
                guid.to_string(),
                expected,
                "{with_references} {with_metadata} {with_rules}"
            );
            assert_eq!(expected.parse::<Guid>().unwrap(), guid);
        }
    }

    // Issue 39 item 4: Confluent's `RuleSet.updateHash` feeds `enableAt` after the rules.
    #[test]
    fn a_rule_sets_enable_at_takes_part_in_the_guid() {
        let without = Contract {
            metadata: None,
            rule_set: Some(Box::new(rules())),
        };
        let mut enabled = rules();
        enabled.enable_at = Some(crate::registry::contract::ExecutionEnvironment::Client);
        let with = Contract {
            metadata: None,
            rule_set: Some(Box::new(enabled)),
        };
        assert_ne!(Guid::of(PERSON, &[], &without), Guid::of(PERSON, &[], &with));
    }

    #[test]
    fn text_that_is_not_a_guid_is_refused_by_name() {
        let error = "not-a-guid".parse::<Guid>().unwrap_err();
        assert!(error.to_string().contains("`not-a-guid` is not a GUID"));
    }
}
