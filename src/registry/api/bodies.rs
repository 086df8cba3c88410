//! Response bodies built once per schema ID: `GET /schemas/ids/{id}` and
//! `GET /subjects/{s}/versions/{v}` are the lookups serializers make on
//! every new schema they meet, and what they return for an ID never changes.
//!
//! The cache holds, per ID, the content it was built from, the by-ID body,
//! and the part of a version body that depends only on the content (from
//! `schemaType` to `guid`). A version body is that part between the
//! subject, version and ID, and the `deleted` flag, copied into one buffer:
//! no JSON serialization and no GUID hashing per request.
//!
//! # Guarantees
//! - An entry is used only when the content the registry answered equals the
//!   content it was built from (the same `Arc`, or equal fields), so a body
//!   is never served for other content, whatever the registry behind.
//! - Bytes are those `serde_json` gives [`SchemaByIdResponse`] and
//!   [`SchemaResponse`]: the tests compare them.
//! - Memory is bounded by a budget on the bodies' bytes: when an entry would
//!   pass it, the cache starts over (any entry can be rebuilt).

use std::io::Write as _;
use std::sync::{Arc, PoisonError, RwLock};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::wire::{CONTENT_TYPE, SchemaByIdResponse, schema_type};
use crate::registry::contract::{Metadata, RuleSet};
use crate::registry::{SchemaContent, SchemaId, SchemaReference, SharedVersion, SubjectName};

/// The default budget: 16 MiB of bodies.
const DEFAULT_BUDGET: usize = 16 * 1024 * 1024;

/// Bodies built per schema ID (see the module docs).
#[derive(Debug)]
pub(super) struct Bodies {
    inner: RwLock<Inner>,
    budget: usize,
}

#[derive(Debug, Default)]
struct Inner {
    entries: FxHashMap<SchemaId, Arc<Built>>,
    used: usize,
}

/// What one schema ID's content answers.
#[derive(Debug)]
struct Built {
    content: Arc<SchemaContent>,
    /// The whole `GET /schemas/ids/{id}` body.
    by_id: Bytes,
    /// A version body's fields from `schemaType` (or the first present
    /// after it) to `guid`, without braces or surrounding commas.
    version_fields: Bytes,
}

impl Default for Bodies {
    fn default() -> Self {
        Self {
            inner: RwLock::default(),
            budget: DEFAULT_BUDGET,
        }
    }
}

/// The part of [`super::wire::SchemaResponse`] after `id`, in its field order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionFields<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    schema_type: Option<&'static str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    references: &'a [SchemaReference],
    schema: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_set: Option<&'a RuleSet>,
    guid: String,
}

impl Built {
    fn new(content: Arc<SchemaContent>) -> Self {
        let by_id = serde_json::to_vec(&SchemaByIdResponse::from(content.as_ref())).unwrap_or_default();
        let fields = VersionFields {
            schema_type: schema_type(content.format),
            references: &content.references,
            schema: content.answered_text(),
            metadata: content.contract.metadata.as_deref(),
            rule_set: content.contract.rule_set.as_deref(),
            guid: content.guid().to_string(),
        };
        let mut version_fields = serde_json::to_vec(&fields).unwrap_or_default();
        // `{…}` to `…`: the object always has `schema` and `guid`.
        version_fields.pop();
        version_fields.remove(0);
        Self {
            content,
            by_id: Bytes::from(by_id),
            version_fields: Bytes::from(version_fields),
        }
    }

    fn cost(&self) -> usize {
        self.by_id.len() + self.version_fields.len() + self.content.text.len()
    }

    fn holds(&self, content: &Arc<SchemaContent>) -> bool {
        Arc::ptr_eq(&self.content, content) || *self.content == **content
    }
}

impl Bodies {
    fn cached(&self, id: SchemaId) -> Option<Arc<Built>> {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        inner.entries.get(&id).cloned()
    }

    fn keep(&self, id: SchemaId, built: Arc<Built>) {
        let cost = built.cost();
        if cost > self.budget {
            return;
        }
        let mut inner = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        if inner.used + cost > self.budget {
            inner.entries.clear();
            inner.used = 0;
        }
        if let Some(replaced) = inner.entries.insert(id, built) {
            inner.used = inner.used.saturating_sub(replaced.cost());
        }
        inner.used += cost;
    }

    /// The entry for `id` built from `content`.
    fn built(&self, id: SchemaId, content: &Arc<SchemaContent>) -> Arc<Built> {
        if let Some(built) = self.cached(id).filter(|built| built.holds(content)) {
            return built;
        }
        let built = Arc::new(Built::new(Arc::clone(content)));
        self.keep(id, Arc::clone(&built));
        built
    }

    /// The `GET /schemas/ids/{id}` response for `content`, the content of `id`.
    pub(super) fn by_id(&self, id: SchemaId, content: &Arc<SchemaContent>) -> Response {
        response(Body::from(self.built(id, content).by_id.clone()))
    }

    /// The `GET /subjects/{s}/versions/{v}` response for `found`, a version of `subject`.
    pub(super) fn version(&self, subject: &SubjectName, found: &SharedVersion) -> Response {
        let built = self.built(found.id, &found.content);
        response(Body::from(version_body(subject, found, &built.version_fields)))
    }
}

/// `{"subject":…,"version":…,"id":…,` the content's fields, `"deleted":true`
/// when it is, `}`: the bytes `serde_json` gives [`super::wire::SchemaResponse`].
fn version_body(subject: &SubjectName, found: &SharedVersion, fields: &[u8]) -> Vec<u8> {
    let subject = subject.as_str();
    let mut body = Vec::with_capacity(subject.len() + fields.len() + 64);
    body.extend_from_slice(b"{\"subject\":");
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut body, subject);
    // Writing into a Vec cannot fail.
    let _ = write!(body, ",\"version\":{},\"id\":{},", found.version.get(), found.id.get());
    body.extend_from_slice(fields);
    if found.deleted {
        body.extend_from_slice(b",\"deleted\":true");
    }
    body.push(b'}');
    body
}

fn response(body: Body) -> Response {
    let mut response = Response::new(body);
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt as _;

    use super::super::wire::SchemaResponse;
    use super::*;
    use crate::compat::Format;
    use crate::registry::contract::Contract;
    use crate::registry::{Version, VersionedSchema};

    fn contents() -> Vec<SchemaContent> {
        let with_contract: Contract = serde_json::from_value(serde_json::json!({
            "metadata": {"properties": {"owner": "team-a"}, "tags": {"Order.id": ["PII"]}},
            "ruleSet": {"domainRules": [{"name": "check", "kind": "CONDITION", "mode": "WRITE",
                                          "type": "CEL", "expr": "message.id > 0"}]}
        }))
        .unwrap();
        vec![
            SchemaContent {
                format: Format::Avro,
                text: r#"{"name":"Order","type":"record","doc":"say \"hi\" ü","fields":[]}"#.to_owned(),
                answer_text: Some(r#"{"type":"record","name":"Order","doc":"say \"hi\" ü","fields":[]}"#.to_owned()),
                references: Vec::new(),
                contract: Contract::default(),
            },
            SchemaContent {
                format: Format::Protobuf,
                text: "syntax = \"proto3\";\nimport \"other.proto\";\nmessage A { Other o = 1; }\n".to_owned(),
                answer_text: None,
                references: vec![SchemaReference {
                    name: "other.proto".to_owned(),
                    subject: SubjectName::new("other-value".to_owned()).unwrap(),
                    version: Version::new(2).unwrap(),
                }],
                contract: with_contract,
            },
            SchemaContent {
                format: Format::Json,
                text: r#"{"type":"object"}"#.to_owned(),
                answer_text: None,
                references: Vec::new(),
                contract: Contract::default(),
            },
        ]
    }

    async fn bytes(response: Response) -> Vec<u8> {
        assert_eq!(response.headers()[header::CONTENT_TYPE], CONTENT_TYPE);
        response.into_body().collect().await.unwrap().to_bytes().to_vec()
    }

    #[tokio::test]
    async fn bodies_are_the_bytes_serde_gives_the_response_types() {
        let bodies = Bodies::default();
        for (number, content) in contents().into_iter().enumerate() {
            let id = SchemaId::new(i64::try_from(number).unwrap() + 1).unwrap();
            let content = Arc::new(content);
            for _ in 0..2 {
                let expected = serde_json::to_vec(&SchemaByIdResponse::from(content.as_ref())).unwrap();
                assert_eq!(bytes(bodies.by_id(id, &content)).await, expected);
                for (subject, deleted) in [("orders-value", false), (":.ctx:we\"ird", true)] {
                    let version = VersionedSchema {
                        subject: SubjectName::new(subject.to_owned()).unwrap(),
                        version: Version::new(7).unwrap(),
                        id,
                        format: content.format,
                        text: content.text.clone(),
                        answer_text: content.answer_text.clone(),
                        references: content.references.clone(),
                        contract: content.contract.clone(),
                        deleted,
                    };
                    let expected = serde_json::to_vec(&SchemaResponse::from(&version)).unwrap();
                    let subject = version.subject.clone();
                    let shared = SharedVersion::from(version);
                    assert_eq!(
                        String::from_utf8(bytes(bodies.version(&subject, &shared)).await).unwrap(),
                        String::from_utf8(expected).unwrap()
                    );
                }
            }
        }
    }

    #[tokio::test]
    async fn an_entry_is_never_served_for_other_content() {
        let bodies = Bodies::default();
        let id = SchemaId::new(1).unwrap();
        let [first, second, ..] = <[SchemaContent; 3]>::try_from(contents()).unwrap();
        let first = Arc::new(first);
        let second = Arc::new(second);
        bodies.by_id(id, &first);
        let expected = serde_json::to_vec(&SchemaByIdResponse::from(second.as_ref())).unwrap();
        assert_eq!(bytes(bodies.by_id(id, &second)).await, expected);
    }

    #[test]
    fn the_budget_bounds_the_cache() {
        let bodies = Bodies {
            inner: RwLock::default(),
            budget: 1000,
        };
        for number in 1..=50 {
            let content = Arc::new(contents().remove(0));
            bodies.built(SchemaId::new(number).unwrap(), &content);
        }
        let inner = bodies.inner.read().unwrap();
        assert!(inner.used <= 1000, "{} bytes kept", inner.used);
        assert!(!inner.entries.is_empty());
    }
}
