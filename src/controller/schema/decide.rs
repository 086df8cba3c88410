//! The decision, pure and synchronous: from what was read to a [`Plan`].

use std::sync::Arc;

use crate::compat::{Checker, Mode, Report, SchemaRole, SchemaText, error_chain};
use crate::controller::judge::{self, PolicyContext};
use crate::controller::level::{self, LevelWrite};
use crate::controller::view::{ObjectKey, SubjectView};
use crate::crd::conditions::Reason;
use crate::crd::{Schema, SchemaStatus};
use crate::policy::{ProposedLevel, Verdict};
use crate::registry::contract::{Contract, Metadata};
use crate::registry::{NewSchema, RegistryMode, SchemaId, SubjectName, Version, VersionedSchema};

use super::read::RegistrySubject;

/// Everything a decision about one Schema needs.
#[derive(Debug, Clone)]
pub struct SchemaInputs {
    /// The resource.
    pub key: ObjectKey,
    /// Its `metadata.generation`.
    pub generation: Option<i64>,
    /// The subject its spec names.
    pub subject: String,
    /// Its status as last written.
    pub status: Option<SchemaStatus>,
    /// Who manages the subject, and the SubjectConfig's policy.
    pub view: SubjectView,
    /// The schema to register and what the registry holds.
    pub candidate: Candidate,
    /// What the platform's policies need to judge it.
    pub policy: PolicyInputs,
    /// `managementPolicy: Observe`: decide as Manage would, then write nothing.
    pub observe: bool,
}

/// The policies in force and the object they judge.
#[derive(Debug, Clone, Default)]
pub struct PolicyInputs {
    /// The policies and the namespaces they may select.
    pub context: PolicyContext,
    /// The Schema judged; `None` judges nothing.
    pub object: Option<Arc<Schema>>,
    /// The Schema before the change (admission only), for CEL's `oldObject`.
    pub old_object: Option<Arc<Schema>>,
}

impl PolicyInputs {
    /// Judges the Schema with what is known of it so far.
    fn judge(&self, summary: Option<&crate::compat::SchemaSummary>, level: Option<&ProposedLevel>) -> Verdict {
        match &self.object {
            Some(object) => self
                .context
                .judge_schema(object, self.old_object.as_deref(), summary, level),
            None => Verdict::default(),
        }
    }
}

/// A plan and the policies' verdict on the Schema (whose warnings and
/// audits go with whatever the plan is).
#[derive(Debug, Clone)]
pub struct Decision {
    /// What to do.
    pub plan: Plan,
    /// Every policy violation found.
    pub verdict: Verdict,
}

/// Why a spec cannot be used as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    /// The condition reason.
    pub reason: Reason,
    /// What is wrong and where.
    pub message: String,
}

/// The schema this resource proposes, as far as the read got.
#[derive(Debug, Clone)]
pub enum Candidate {
    /// Another resource manages the subject; nothing was read.
    NotOwner,
    /// The spec is unusable; the registry was not read.
    Unusable(Unusable),
    /// A schema to judge, with the registry's view of the subject.
    Usable {
        /// The subject.
        subject: SubjectName,
        /// The schema, as the registry would store it.
        schema: NewSchema,
        /// What the registry holds.
        registry: Box<RegistrySubject>,
    },
}

/// What to do, and why.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Another resource manages the subject.
    Conflict {
        /// The resource that manages it.
        owner: Option<ObjectKey>,
    },
    /// The spec or the schema is unusable: a change to it is needed.
    Invalid(Unusable),
    /// The subject is read-only.
    ReadOnly {
        /// The subject.
        subject: SubjectName,
    },
    /// The subject already holds the schema: adopt its version, write nothing.
    AlreadyRegistered {
        /// The subject.
        subject: SubjectName,
        /// The version holding it.
        version: Version,
        /// Its ID.
        id: SchemaId,
        /// SHA-256 of the canonical form.
        fingerprint: String,
        /// The subject's newest version, when newer than any this resource registered.
        drifted_to: Option<Version>,
        /// The newest live version this resource registered itself, when later than
        /// `version`: the spec went back to an earlier version of its own (a revert).
        reverted_from: Option<Version>,
        /// What the registry holds of it beyond its version and ID.
        held: Held,
    },
    /// The version this unchanged spec was registered as is gone from the
    /// registry (deleted outside schemaops): report it, recreate nothing.
    Vanished {
        /// The subject.
        subject: SubjectName,
        /// The version that held the schema.
        version: i32,
    },
    /// Compatible: register it.
    Register {
        /// The subject.
        subject: SubjectName,
        /// The schema.
        schema: NewSchema,
        /// The level it was judged under.
        level: Mode,
        /// The level write that must precede the registration.
        level_write: Option<LevelWrite>,
        /// SHA-256 of the canonical form.
        fingerprint: String,
        /// The check that passed.
        report: Report,
    },
    /// Incompatible: register nothing.
    Reject {
        /// The subject.
        subject: SubjectName,
        /// Every incompatibility, with registry version numbers.
        report: Report,
    },
    /// A SchemaPolicy refuses the Schema: write nothing.
    PolicyViolation(Verdict),
    /// `managementPolicy: Observe`: write nothing; report what Manage would do.
    Observe {
        /// What Manage would do.
        would: Box<Plan>,
        /// The subject's latest live version.
        latest: Option<Version>,
    },
}

impl Plan {
    /// A short name for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Plan::Conflict { .. } => "Conflict",
            Plan::Invalid(_) => "Invalid",
            Plan::ReadOnly { .. } => "ReadOnly",
            Plan::AlreadyRegistered { .. } => "AlreadyRegistered",
            Plan::Vanished { .. } => "Vanished",
            Plan::Register { .. } => "Register",
            Plan::Reject { .. } => "Reject",
            Plan::PolicyViolation(_) => "PolicyViolation",
            Plan::Observe { .. } => "Observe",
        }
    }
}

/// What the registry holds of a registered schema beyond its version and
/// ID: what the status shows, and whether the registry kept its contract.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Held {
    /// Its GUID, as Confluent computes it.
    pub guid: Option<String>,
    /// Its metadata, with the subject's configured defaults and overrides merged in.
    pub metadata: Option<Metadata>,
    /// The spec asked for metadata or rules and the registry kept none (Karapace drops them).
    pub contract_dropped: bool,
}

impl Held {
    /// What `stored` holds of a schema registered with `asked`.
    pub fn of(asked: &Contract, stored: &VersionedSchema) -> Held {
        Held {
            guid: Some(stored.guid().to_string()),
            metadata: stored.contract.metadata.as_deref().cloned(),
            contract_dropped: !asked.is_empty() && stored.contract.is_empty(),
        }
    }
}

/// Decides what to do with one Schema.
pub fn decide(inputs: &SchemaInputs, checker: &Checker) -> Plan {
    judge(inputs, checker).plan
}

/// Decides what to do with one Schema, with the policies' verdict. A policy
/// that refuses the Schema wins over everything else. It is judged on the
/// spec alone (subject, type, deletion policy), and again, with every rule,
/// once the schema is parsed and the level it would be checked under is
/// known: a refusal lists every violation the decision got far enough to see.
pub fn judge(inputs: &SchemaInputs, checker: &Checker) -> Decision {
    let early = inputs.policy.judge(None, None);
    let mut verdict = early.clone();
    let plan = plan(inputs, checker, &mut verdict);
    if early.is_denied() && !verdict.is_denied() {
        // The decision stopped before the full judgement (another owner, an unusable spec).
        verdict = early;
    }
    let plan = if verdict.is_denied() {
        Plan::PolicyViolation(verdict.clone())
    } else {
        plan
    };
    Decision {
        plan: observed(inputs, plan),
        verdict,
    }
}

/// For an observed Schema, Manage's plan wrapped so nothing is written; a
/// conflict or an unusable spec stays what it is (nothing to observe).
fn observed(inputs: &SchemaInputs, plan: Plan) -> Plan {
    let latest = match &inputs.candidate {
        Candidate::Usable { registry, .. } => registry.live_versions.last().copied(),
        _ => None,
    };
    match plan {
        Plan::Conflict { .. } | Plan::Invalid(_) => plan,
        would if inputs.observe => Plan::Observe {
            would: Box::new(would),
            latest,
        },
        plan => plan,
    }
}

fn plan(inputs: &SchemaInputs, checker: &Checker, verdict: &mut Verdict) -> Plan {
    let (subject, schema, registry) = match &inputs.candidate {
        Candidate::NotOwner => {
            return Plan::Conflict {
                owner: inputs.view.schema_owner.clone(),
            };
        }
        Candidate::Unusable(unusable) => return Plan::Invalid(unusable.clone()),
        Candidate::Usable {
            subject,
            schema,
            registry,
        } => (subject, schema, registry),
    };
    let references = match &registry.references {
        Ok(references) => references.clone(),
        Err(message) => {
            return Plan::Invalid(Unusable {
                reason: Reason::InvalidSpec,
                message: format!("spec.references: {message}"),
            });
        }
    };
    let text = SchemaText {
        text: schema.text.clone(),
        references,
    };
    let candidate = match checker.parse(schema.format, SchemaRole::Candidate, &text) {
        Ok(parsed) => parsed,
        Err(error) => {
            return Plan::Invalid(Unusable {
                reason: Reason::InvalidSchema,
                message: error_chain(&error),
            });
        }
    };
    let fingerprint = candidate.fingerprint();
    let (level, level_write) = level::desired(
        inputs.view.config.as_ref(),
        registry.global_level,
        registry.subject_level,
    );
    if inputs.policy.object.is_some() && !inputs.policy.context.policies.is_empty() {
        let config = inputs.view.config.as_ref();
        let proposed = ProposedLevel {
            level: level::level_of(level),
            origin: judge::level_origin(
                config.is_some_and(|config| config.compatibility.is_some()),
                inputs.view.config_owner.as_ref(),
                registry.subject_level.is_some(),
                config.is_some(),
            ),
        };
        *verdict = inputs.policy.judge(Some(&candidate.summary()), Some(&proposed));
        if verdict.is_denied() {
            return Plan::PolicyViolation(verdict.clone());
        }
    }
    if let Some(holding) = &registry.holding {
        let own: Vec<i32> = inputs
            .status
            .as_ref()
            .map(|status| status.own().collect())
            .unwrap_or_default();
        let newest_own = own.iter().copied().max().unwrap_or(0);
        let newest = registry.live_versions.last().copied();
        let drifted_to =
            newest.filter(|newest| newest.get() > holding.version.get() && newest.get() as i64 > i64::from(newest_own));
        let reverted_from = registry
            .live_versions
            .iter()
            .rev()
            .find(|live| own.contains(&(live.get() as i32)))
            .copied()
            .filter(|own_latest| own_latest.get() > holding.version.get());
        return Plan::AlreadyRegistered {
            subject: subject.clone(),
            version: holding.version,
            id: holding.id,
            fingerprint,
            drifted_to,
            reverted_from,
            held: Held::of(&schema.contract, holding),
        };
    }
    if let Some(version) = vanished_version(inputs, &fingerprint) {
        return Plan::Vanished {
            subject: subject.clone(),
            version,
        };
    }
    if read_only(inputs, registry) {
        return Plan::ReadOnly {
            subject: subject.clone(),
        };
    }
    let mut parsed = Vec::with_capacity(registry.previous.len());
    for (version, format, text) in &registry.previous {
        if *format != schema.format {
            return Plan::Invalid(Unusable {
                reason: Reason::SchemaTypeChanged,
                message: format!(
                    "subject `{subject}` holds {} schemas (version {version}); a {} schema cannot be checked against them",
                    format.as_str(),
                    schema.format.as_str()
                ),
            });
        }
        match checker.parse(*format, SchemaRole::Previous(version.get() as usize), text) {
            Ok(earlier) => parsed.push((version.get() as usize, earlier)),
            Err(error) => {
                return Plan::Invalid(Unusable {
                    reason: Reason::InvalidSchema,
                    message: format!("the registry's {}", error_chain(&error)),
                });
            }
        }
    }
    let numbered: Vec<(usize, &crate::compat::ParsedSchema)> =
        parsed.iter().map(|(number, earlier)| (*number, earlier)).collect();
    let report = match checker.check_numbered(level, &candidate, &numbered) {
        Ok(report) => report,
        Err(error) => {
            let reason = match error {
                crate::compat::CheckError::TooComplex { .. } => Reason::TooComplex,
                _ => Reason::InvalidSchema,
            };
            return Plan::Invalid(Unusable {
                reason,
                message: error_chain(&error),
            });
        }
    };
    if report.is_compatible() {
        Plan::Register {
            subject: subject.clone(),
            schema: schema.clone(),
            level,
            level_write,
            fingerprint,
            report,
        }
    } else {
        Plan::Reject {
            subject: subject.clone(),
            report,
        }
    }
}

/// The version that held this spec's schema, when the spec is unchanged
/// since schemaops registered it (the status is Ready for this generation):
/// the subject no longer holding it means someone deleted it by hand.
fn vanished_version(inputs: &SchemaInputs, fingerprint: &str) -> Option<i32> {
    use crate::crd::conditions::{ConditionType, find_condition};
    let status = inputs.status.as_ref()?;
    // The text counts as well as the generation: a `schemaFrom` ConfigMap's
    // edit changes the text and leaves the Schema's generation as it was.
    let same_text = status.fingerprint.as_deref().is_none_or(|held| held == fingerprint);
    let unchanged =
        status.observed_generation.is_some() && status.observed_generation == inputs.generation && same_text;
    // Observed is Ready too, but an observed spec was never registered by this Schema.
    let held = find_condition(&status.conditions, ConditionType::Ready).is_some_and(|ready| {
        ready.status == "True"
            && ready.observed_generation == inputs.generation
            && ready.reason != Reason::Observed.as_str()
    });
    // Once reported, it stays reported until the spec changes.
    let reported = find_condition(&status.conditions, ConditionType::Drifted)
        .is_some_and(|drifted| drifted.reason == Reason::VersionDeletedOutsideSchemaops.as_str());
    (unchanged && (held || reported)).then_some(status.version).flatten()
}

/// Whether registrations are refused: the SubjectConfig asks for READONLY
/// (where the registry can hold a subject's mode), or (without one saying
/// otherwise) the registry is read-only.
fn read_only(inputs: &SchemaInputs, registry: &RegistrySubject) -> bool {
    use crate::crd::SubjectMode;
    let registry_mode = registry.mode;
    let wanted = inputs.view.config.as_ref().and_then(|config| config.mode);
    match wanted.filter(|_| registry.subject_mode_supported) {
        Some(SubjectMode::Readonly) => true,
        Some(SubjectMode::Readwrite) => registry_mode == RegistryMode::ReadOnlyOverride,
        None => matches!(registry_mode, RegistryMode::ReadOnly | RegistryMode::ReadOnlyOverride),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::compat::{Format, Limits};
    use crate::crd::{CompatibilityLevel, SubjectConfigSpec, SubjectMode};
    use crate::registry::VersionedSchema;

    pub(crate) const RSVP_V1: &str = r#"{"type":"record","name":"Rsvp","fields":[
        {"name":"event_id","type":"string"},{"name":"member_id","type":"long"}]}"#;
    pub(crate) const RSVP_WITHOUT_EVENT: &str = r#"{"type":"record","name":"Rsvp","fields":[
        {"name":"member_id","type":"long"}]}"#;
    pub(crate) const RSVP_WITH_OPTIONAL: &str = r#"{"type":"record","name":"Rsvp","fields":[
        {"name":"event_id","type":"string"},{"name":"member_id","type":"long"},
        {"name":"response","type":"string","default":"yes"}]}"#;

    pub(crate) fn key(name: &str) -> ObjectKey {
        ObjectKey {
            namespace: "default".to_owned(),
            name: name.to_owned(),
        }
    }

    pub(crate) fn subject() -> SubjectName {
        SubjectName::new("rsvp-value").unwrap()
    }

    /// A registry holding `versions` (oldest first), all read by the level.
    pub(crate) fn registry(versions: &[&str], global: Mode, subject_level: Option<Mode>) -> RegistrySubject {
        RegistrySubject {
            global_level: global,
            subject_level,
            mode: RegistryMode::ReadWrite,
            subject_mode_supported: true,
            holding: None,
            live_versions: (1..=versions.len() as i64).map(|v| Version::new(v).unwrap()).collect(),
            previous: versions
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    (
                        Version::new(i as i64 + 1).unwrap(),
                        Format::Avro,
                        SchemaText::new(*text),
                    )
                })
                .collect(),
            references: Ok(Vec::new()),
        }
    }

    pub(crate) fn inputs(
        candidate: &str,
        registry: RegistrySubject,
        config: Option<SubjectConfigSpec>,
    ) -> SchemaInputs {
        SchemaInputs {
            key: key("rsvp"),
            generation: Some(2),
            subject: "rsvp-value".to_owned(),
            status: None,
            view: SubjectView {
                schema_owner: Some(key("rsvp")),
                config_owner: config.as_ref().map(|_| key("rsvp-config")),
                config,
                referrers: Vec::new(),
            },
            candidate: Candidate::Usable {
                subject: subject(),
                schema: NewSchema {
                    contract: Default::default(),
                    format: Format::Avro,
                    text: candidate.to_owned(),
                    references: Vec::new(),
                },
                registry: Box::new(registry),
            },
            policy: PolicyInputs::default(),
            observe: false,
        }
    }

    pub(crate) fn config(level: CompatibilityLevel) -> SubjectConfigSpec {
        SubjectConfigSpec {
            subject: "rsvp-value".to_owned(),
            registry_ref: None,
            compatibility: Some(level),
            contract: Default::default(),
            mode: None,
            management_policy: Default::default(),
        }
    }

    fn checker() -> Checker {
        Checker::new(Limits::default())
    }

    #[test]
    fn a_schema_whose_subject_another_resource_manages_is_a_conflict_naming_it() {
        let mut inputs = inputs(RSVP_V1, registry(&[], Mode::Backward, None), None);
        inputs.candidate = Candidate::NotOwner;
        inputs.view.schema_owner = Some(key("first"));
        assert_eq!(
            decide(&inputs, &checker()),
            Plan::Conflict {
                owner: Some(key("first"))
            }
        );
    }

    #[test]
    fn an_unparseable_schema_is_invalid_with_the_parsers_position() {
        let inputs = inputs(
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"strin"}]}"#,
            registry(&[], Mode::Backward, None),
            None,
        );
        let Plan::Invalid(unusable) = decide(&inputs, &checker()) else {
            panic!("expected Invalid")
        };
        assert_eq!(unusable.reason, Reason::InvalidSchema);
        assert!(unusable.message.contains("/fields/0/type"), "{}", unusable.message);
    }

    #[test]
    fn a_schema_the_subject_already_holds_is_adopted_without_a_check() {
        let mut held = registry(&[RSVP_V1], Mode::Backward, None);
        held.holding = Some(VersionedSchema {
            contract: Default::default(),
            subject: subject(),
            version: Version::FIRST,
            id: SchemaId::new(7).unwrap(),
            format: Format::Avro,
            text: RSVP_V1.to_owned(),
            answer_text: None,
            references: Vec::new(),
            deleted: false,
        });
        let plan = decide(&inputs(RSVP_V1, held, None), &checker());
        let Plan::AlreadyRegistered {
            version,
            id,
            drifted_to,
            ..
        } = plan
        else {
            panic!("{plan:?}")
        };
        assert_eq!((version.get(), id.get(), drifted_to), (1, 7, None));
    }

    #[test]
    fn a_newer_version_registered_by_hand_is_reported_as_drift() {
        let mut held = registry(&[RSVP_V1, RSVP_WITH_OPTIONAL], Mode::Backward, None);
        held.holding = Some(VersionedSchema {
            contract: Default::default(),
            subject: subject(),
            version: Version::FIRST,
            id: SchemaId::new(1).unwrap(),
            format: Format::Avro,
            text: RSVP_V1.to_owned(),
            answer_text: None,
            references: Vec::new(),
            deleted: false,
        });
        let mut inputs = inputs(RSVP_V1, held, None);
        inputs.status = Some(SchemaStatus {
            version: Some(1),
            ..Default::default()
        });
        let Plan::AlreadyRegistered { drifted_to, .. } = decide(&inputs, &checker()) else {
            panic!()
        };
        assert_eq!(drifted_to, Some(Version::new(2).unwrap()));
    }

    #[test]
    fn a_registered_version_deleted_by_hand_is_reported_not_recreated() {
        use crate::crd::conditions::{ConditionType, set_condition};
        let mut inputs = inputs(RSVP_V1, registry(&[], Mode::Backward, None), None);
        let mut status = SchemaStatus {
            observed_generation: Some(2),
            version: Some(1),
            ..Default::default()
        };
        let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default());
        set_condition(
            &mut status.conditions,
            ConditionType::Ready,
            true,
            "Registered",
            "",
            Some(2),
            &now,
        );
        inputs.status = Some(status);
        assert_eq!(
            decide(&inputs, &checker()),
            Plan::Vanished {
                subject: subject(),
                version: 1
            }
        );
        // An edit (a new generation) registers again.
        inputs.generation = Some(3);
        assert!(matches!(decide(&inputs, &checker()), Plan::Register { .. }));
    }

    #[test]
    fn a_compatible_schema_is_registered_without_touching_the_level() {
        let plan = decide(
            &inputs(RSVP_WITH_OPTIONAL, registry(&[RSVP_V1], Mode::Backward, None), None),
            &checker(),
        );
        let Plan::Register {
            level,
            level_write,
            report,
            ..
        } = plan
        else {
            panic!("{plan:?}")
        };
        assert_eq!((level, level_write), (Mode::Backward, None));
        assert_eq!(report.checked_versions, vec![1]);
    }

    #[test]
    fn removing_a_required_field_under_forward_is_rejected_with_the_version_it_breaks() {
        // The RSVP story: old consumers still read `event_id`.
        let spec = config(CompatibilityLevel::Forward);
        let plan = decide(
            &inputs(
                RSVP_WITHOUT_EVENT,
                registry(&[RSVP_V1], Mode::Forward, Some(Mode::Forward)),
                Some(spec),
            ),
            &checker(),
        );
        let Plan::Reject { report, .. } = plan else {
            panic!("{plan:?}")
        };
        assert_eq!(report.incompatibilities.len(), 1);
        let found = &report.incompatibilities[0];
        assert_eq!(found.version, 1);
        assert!(found.message.contains("event_id"), "{}", found.message);
    }

    #[test]
    fn a_level_change_in_the_same_apply_judges_the_schema_under_the_new_level() {
        // The registry still says BACKWARD; the SubjectConfig now says FORWARD.
        let spec = config(CompatibilityLevel::Forward);
        let plan = decide(
            &inputs(
                RSVP_WITHOUT_EVENT,
                registry(&[RSVP_V1], Mode::Backward, None),
                Some(spec),
            ),
            &checker(),
        );
        assert!(
            matches!(plan, Plan::Reject { ref report, .. } if report.mode == Mode::Forward),
            "{plan:?}"
        );
    }

    #[test]
    fn a_loosened_level_lets_the_schema_through_and_is_written_first() {
        // FULL in the registry would refuse it; the SubjectConfig says NONE.
        let spec = config(CompatibilityLevel::None);
        let plan = decide(
            &inputs(
                RSVP_WITHOUT_EVENT,
                registry(&[RSVP_V1], Mode::Backward, Some(Mode::Full)),
                Some(spec),
            ),
            &checker(),
        );
        let Plan::Register { level, level_write, .. } = plan else {
            panic!("{plan:?}")
        };
        assert_eq!(level, Mode::None);
        assert_eq!(level_write, Some(LevelWrite::Set(Mode::None)));
    }

    #[test]
    fn a_read_only_subject_registers_nothing() {
        let mut spec = config(CompatibilityLevel::Backward);
        spec.mode = Some(SubjectMode::Readonly);
        let plan = decide(
            &inputs(
                RSVP_WITH_OPTIONAL,
                registry(&[RSVP_V1], Mode::Backward, None),
                Some(spec),
            ),
            &checker(),
        );
        assert_eq!(plan, Plan::ReadOnly { subject: subject() });
    }

    #[test]
    fn a_schema_of_another_type_than_the_subject_holds_is_refused() {
        let mut held = registry(&[RSVP_V1], Mode::Backward, None);
        held.previous[0].1 = Format::Json;
        let Plan::Invalid(unusable) = decide(&inputs(RSVP_V1, held, None), &checker()) else {
            panic!()
        };
        assert_eq!(unusable.reason, Reason::SchemaTypeChanged);
    }

    #[test]
    fn a_missing_reference_is_an_invalid_spec() {
        let mut held = registry(&[], Mode::Backward, None);
        held.references = Err("reference `a.B` names version 3 of subject `b`, which does not exist".to_owned());
        let Plan::Invalid(unusable) = decide(&inputs(RSVP_V1, held, None), &checker()) else {
            panic!()
        };
        assert_eq!(unusable.reason, Reason::InvalidSpec);
        assert!(unusable.message.contains("version 3 of subject `b`"));
    }

    #[test]
    fn transitive_levels_report_every_version_broken() {
        let v2 = r#"{"type":"record","name":"Rsvp","fields":[{"name":"event_id","type":"string"},{"name":"member_id","type":"long"},{"name":"x","type":"int","default":0}]}"#;
        let plan = decide(
            &inputs(
                RSVP_WITHOUT_EVENT,
                registry(&[RSVP_V1, v2], Mode::ForwardTransitive, None),
                None,
            ),
            &checker(),
        );
        let Plan::Reject { report, .. } = plan else {
            panic!("{plan:?}")
        };
        let versions: Vec<usize> = report.incompatibilities.iter().map(|i| i.version).collect();
        assert!(versions.contains(&1) && versions.contains(&2), "{versions:?}");
    }

    /// A policy in force over namespace `default`: at least BACKWARD_TRANSITIVE, no HardDelete,
    /// and Avro namespaces under `com.acme`.
    fn strict_policy(held: RegistrySubject, deletion: crate::crd::DeletionPolicy) -> SchemaInputs {
        let spec: crate::crd::SchemaPolicySpec = serde_json::from_value(serde_json::json!({
            "rules": {
                "compatibility": {"minimum": "BACKWARD_TRANSITIVE"},
                "deletionPolicies": ["Retain", "SoftDelete"],
                "naming": {"avroNamespace": "com.acme*"},
            },
        }))
        .unwrap();
        let policies = crate::policy::PolicySet::compile([("strict", &spec)]);
        let mut schema = Schema::new(
            "rsvp",
            crate::crd::SchemaSpec {
                metadata: None,
                rule_set: None,
                subject: "rsvp-value".to_owned(),
                registry_ref: None,
                schema_type: Default::default(),
                schema: Some(RSVP_V1.to_owned()),
                schema_from: None,
                references: Vec::new(),
                deletion_policy: deletion,
                management_policy: Default::default(),
            },
        );
        schema.metadata.namespace = Some("default".to_owned());
        let mut inputs = inputs(RSVP_V1, held, None);
        inputs.policy = PolicyInputs {
            context: PolicyContext::new(Arc::new(policies), Arc::default()),
            object: Some(Arc::new(schema)),
            old_object: None,
        };
        inputs
    }

    #[test]
    fn a_policy_refusal_lists_every_violation_and_writes_nothing() {
        let inputs = strict_policy(
            registry(&[], Mode::Backward, None),
            crate::crd::DeletionPolicy::HardDelete,
        );
        let decision = judge(&inputs, &checker());
        let Plan::PolicyViolation(verdict) = &decision.plan else {
            panic!("{:?}", decision.plan)
        };
        let rules: Vec<String> = verdict.denials().map(|violation| violation.rule.to_string()).collect();
        assert_eq!(rules, ["compatibility", "deletionPolicies", "naming.avroNamespace"]);
        assert!(
            verdict
                .denial_message()
                .unwrap()
                .contains("the level the subject falls back to (the registry's global level) is BACKWARD"),
            "{verdict:?}"
        );
    }

    #[test]
    fn a_policy_refuses_a_schema_registered_before_it_came() {
        let mut held = registry(&[RSVP_V1], Mode::BackwardTransitive, None);
        held.holding = Some(VersionedSchema {
            contract: Default::default(),
            subject: subject(),
            version: Version::FIRST,
            id: SchemaId::new(1).unwrap(),
            format: Format::Avro,
            text: RSVP_V1.to_owned(),
            answer_text: None,
            references: Vec::new(),
            deleted: false,
        });
        let inputs = strict_policy(held, crate::crd::DeletionPolicy::Retain);
        let plan = judge(&inputs, &checker()).plan;
        let Plan::PolicyViolation(verdict) = plan else {
            panic!("{plan:?}")
        };
        let rules: Vec<String> = verdict.denials().map(|violation| violation.rule.to_string()).collect();
        assert_eq!(
            rules,
            ["naming.avroNamespace"],
            "the level in force passes; the name does not"
        );
    }
}
