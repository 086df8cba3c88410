//! Reconciling one `SubjectConfig`: make the registry's subject level and
//! mode what the spec says (a field left out removes the subject's own
//! setting, so the global one applies), then report what is in force.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::compat::Mode;
use crate::controller::judge::PolicyContext;
use crate::controller::level::{LevelWrite, level_of, mode_of};
use crate::controller::view::{ObjectKey, SubjectView};
use crate::crd::conditions::{ConditionType, MAX_MESSAGE_BYTES, Reason, set_condition, truncate_message};
use crate::crd::{
    CompatibilityLevel, ConfigObservation, SettingSource, SubjectConfig, SubjectConfigSpec, SubjectConfigStatus,
    SubjectMode,
};
use crate::policy::Verdict;
use crate::registry::contract::{ConfigPatch, ContractConfig};
use crate::registry::{Error, Registry, RegistryMode, SubjectName};

/// The registry's settings for one subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrySettings {
    /// The global level.
    pub global_level: Mode,
    /// The subject's own level.
    pub subject_level: Option<Mode>,
    /// The global mode.
    pub global_mode: RegistryMode,
    /// The subject's own mode.
    pub subject_mode: Option<RegistryMode>,
    /// Whether the registry can hold a subject's own mode at all.
    pub subject_mode_supported: bool,
    /// The subject's own data-contract settings (empty from a registry without them).
    pub contract: ContractConfig,
}

/// Reads the registry's settings for `subject`.
///
/// # Errors
/// The registry's error when it fails transiently.
pub async fn read_settings(registry: &dyn Registry, subject: &SubjectName) -> Result<RegistrySettings, Error> {
    let subject_level = match registry.compatibility(Some(subject), false).await {
        Ok(level) => Some(level),
        Err(error) if error.is_unanswered() => return Err(error),
        Err(_) => None,
    };
    let subject_mode = match registry.mode(Some(subject), false).await {
        Ok(mode) => Some(mode),
        Err(error) if error.is_unanswered() => return Err(error),
        Err(_) => None,
    };
    // What the subject falls back to without a level of its own: its
    // context's, `:.__GLOBAL:`'s, or the registry's global level.
    let global_level = match subject_level {
        None => registry.compatibility(Some(subject), true).await?,
        Some(_) => registry.compatibility(None, true).await?,
    };
    Ok(RegistrySettings {
        global_level,
        subject_level,
        global_mode: registry.mode(None, true).await?,
        subject_mode,
        subject_mode_supported: registry.supports_subject_mode().await?,
        contract: registry.contract_config(Some(subject)).await?,
    })
}

/// What to do with a SubjectConfig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigPlan {
    /// Another SubjectConfig manages the subject.
    Conflict {
        /// That resource.
        owner: Option<ObjectKey>,
    },
    /// The spec names an invalid subject.
    Invalid(String),
    /// A SchemaPolicy refuses the spec: nothing is written.
    PolicyViolation(Verdict),
    /// `managementPolicy: Observe`: the writes Manage would make, not made.
    Observe {
        /// The subject.
        subject: SubjectName,
        /// The level write Manage would make.
        level: Option<LevelWrite>,
        /// The mode write Manage would make.
        mode: Option<Option<RegistryMode>>,
        /// The data-contract settings Manage would write.
        contract: Option<ContractConfig>,
        /// The policies' refusal, which would stop Manage.
        refused: Option<String>,
    },
    /// Make the registry match the spec.
    Apply {
        /// The subject.
        subject: SubjectName,
        /// The level write needed, if any.
        level: Option<LevelWrite>,
        /// The mode write needed: `Some(None)` removes the subject's mode.
        mode: Option<Option<RegistryMode>>,
        /// The data-contract settings to write, replacing the subject's own.
        contract: Option<ContractConfig>,
    },
}

/// Decides the writes that make the registry match `spec` (pure).
pub fn decide(
    spec: &SubjectConfigSpec,
    owner: Option<&ObjectKey>,
    me: &ObjectKey,
    settings: Option<RegistrySettings>,
) -> ConfigPlan {
    if owner != Some(me) {
        return ConfigPlan::Conflict { owner: owner.cloned() };
    }
    let subject = match SubjectName::new(spec.subject.clone()) {
        Ok(subject) => subject,
        Err(error) => return ConfigPlan::Invalid(format!("spec.subject: {error}")),
    };
    let Some(settings) = settings else {
        return ConfigPlan::Invalid("the registry's settings were not read".to_owned());
    };
    let level = match spec.compatibility.map(mode_of) {
        Some(level) if settings.subject_level != Some(level) => Some(LevelWrite::Set(level)),
        None if settings.subject_level.is_some() => Some(LevelWrite::Clear),
        _ => None,
    };
    let wanted_mode = spec.mode.map(|mode| match mode {
        SubjectMode::Readwrite => RegistryMode::ReadWrite,
        SubjectMode::Readonly => RegistryMode::ReadOnly,
    });
    // Without subject modes, no mode is written or removed: the level
    // still applies, and the status says the mode does not.
    let mode = (settings.subject_mode_supported && wanted_mode != settings.subject_mode).then_some(wanted_mode);
    // Removing the subject's level removes its whole configuration, so the
    // settings are written again after it.
    let level_clears_settings = level == Some(LevelWrite::Clear) && !spec.contract.is_empty();
    let contract = (spec.contract != settings.contract || level_clears_settings).then(|| spec.contract.clone());
    ConfigPlan::Apply {
        subject,
        level,
        mode,
        contract,
    }
}

/// Carries out the writes of `plan`.
///
/// # Errors
/// The registry's error when it fails transiently.
pub async fn act(plan: &ConfigPlan, registry: &dyn Registry) -> Result<Result<(), String>, Error> {
    let ConfigPlan::Apply {
        subject,
        level,
        mode,
        contract,
    } = plan
    else {
        return Ok(Ok(()));
    };
    let result = async {
        match level {
            Some(LevelWrite::Set(level)) => registry.set_compatibility(Some(subject), *level).await.map(drop)?,
            Some(LevelWrite::Clear) => forget_missing(registry.delete_compatibility(Some(subject)).await.map(drop))?,
            None => {}
        }
        match mode {
            Some(Some(mode)) => registry.set_mode(Some(subject), *mode, false).await.map(drop)?,
            Some(None) => forget_missing(registry.delete_mode(Some(subject)).await.map(drop))?,
            None => {}
        }
        if let Some(contract) = contract {
            let patch = ConfigPatch::replacing_with(contract);
            registry.update_contract_config(Some(subject), &patch).await?;
        }
        Ok::<(), Error>(())
    }
    .await;
    match result {
        Ok(()) => Ok(Ok(())),
        Err(error) if error.is_transient() => Err(error),
        Err(Error::Unsupported { .. }) => Ok(Err(CONTRACTS_UNSUPPORTED.to_owned())),
        Err(error) => Ok(Err(format!("the registry refused the setting: {error}"))),
    }
}

/// Why a SubjectConfig's data-contract settings are not in force.
const CONTRACTS_UNSUPPORTED: &str = "this registry does not keep data-contract settings (compatibilityGroup, default \
                                     and override metadata and rule sets, normalize, alias); none of them is in force";

/// Removes the subject's own settings (the resource is being deleted).
///
/// # Errors
/// The registry's error when it fails transiently.
pub async fn clear(registry: &dyn Registry, subject: &SubjectName) -> Result<(), Error> {
    forget_missing(registry.delete_compatibility(Some(subject)).await.map(drop))?;
    forget_missing(registry.delete_mode(Some(subject)).await.map(drop))
}

fn forget_missing(result: Result<(), Error>) -> Result<(), Error> {
    match result {
        Err(error) if !error.is_unanswered() => Ok(()),
        other => other,
    }
}

/// The status after acting: the settings in force and where each comes from.
pub fn render(
    spec: &SubjectConfigSpec,
    generation: Option<i64>,
    previous: Option<&SubjectConfigStatus>,
    plan: &ConfigPlan,
    outcome: Result<(), String>,
    settings: Option<RegistrySettings>,
    now: &Time,
) -> SubjectConfigStatus {
    let mut conditions: Vec<_> = previous
        .map(|status| status.conditions.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|c| ["Ready", "Stalled", "Reconciling"].contains(&c.type_.as_str()))
        .collect();
    let mut status = SubjectConfigStatus {
        observed_generation: generation,
        ..Default::default()
    };
    if let ConfigPlan::PolicyViolation(_) = plan {
        // Nothing was written: what schemaops put in force before stays, and
        // a refused claim does not take the subject.
        if let Some(previous) = previous {
            status.subject = previous.subject.clone();
            status.compatibility = previous.compatibility;
            status.compatibility_source = previous.compatibility_source;
            status.mode = previous.mode;
            status.mode_source = previous.mode_source;
        }
    }
    let problem = match (plan, outcome) {
        (ConfigPlan::PolicyViolation(verdict), _) => Some((
            if verdict.subject_not_allowed() {
                Reason::SubjectNotAllowed
            } else {
                Reason::PolicyViolation
            },
            format!(
                "nothing was written to the registry: {}",
                verdict.denial_message().unwrap_or_default()
            ),
        )),
        (ConfigPlan::Conflict { owner }, _) => Some((
            Reason::SubjectConflict,
            format!(
                "the subject's settings are managed by SubjectConfig {}",
                owner.as_ref().map_or("(unknown)".to_owned(), ToString::to_string)
            ),
        )),
        (ConfigPlan::Invalid(message), _) => Some((Reason::InvalidSpec, message.clone())),
        (ConfigPlan::Apply { .. } | ConfigPlan::Observe { .. }, Err(message)) if message == CONTRACTS_UNSUPPORTED => {
            Some((Reason::ContractsUnsupported, message))
        }
        (ConfigPlan::Apply { .. } | ConfigPlan::Observe { .. }, Err(message)) => {
            Some((Reason::RegistryRejected, message))
        }
        (ConfigPlan::Apply { subject, .. } | ConfigPlan::Observe { subject, .. }, Ok(())) => {
            status.subject = Some(subject.as_str().to_owned());
            let mut problem = None;
            if let Some(settings) = settings {
                let (level, level_source) = match spec.compatibility {
                    Some(level) => (level, SettingSource::Subject),
                    None => (level_of(settings.global_level), SettingSource::Global),
                };
                let global_mode = subject_mode(settings.global_mode);
                let (mode, mode_source) = match spec.mode {
                    Some(mode) if settings.subject_mode_supported => (mode, SettingSource::Subject),
                    Some(wanted) => {
                        problem = Some((Reason::ModeUnsupported, mode_unsupported(wanted, level, global_mode)));
                        (global_mode, SettingSource::Global)
                    }
                    None => (global_mode, SettingSource::Global),
                };
                status.compatibility = Some(level);
                status.compatibility_source = Some(level_source);
                status.mode = Some(mode);
                status.mode_source = Some(mode_source);
                if matches!(plan, ConfigPlan::Apply { .. }) && settings.contract != spec.contract {
                    problem = Some((
                        Reason::ContractsUnsupported,
                        format!(
                            "{CONTRACTS_UNSUPPORTED}; the registry holds {}",
                            serde_json::to_string(&settings.contract).unwrap_or_default()
                        ),
                    ));
                }
            }
            problem
        }
    };
    let mut set = |type_, value, reason: Reason, message: &str| {
        set_condition(&mut conditions, type_, value, reason.as_str(), message, generation, now);
    };
    if let ConfigPlan::Observe {
        level,
        mode,
        contract,
        refused,
        ..
    } = plan
    {
        let mut observation = observe_settings(*level, *mode, contract.as_ref());
        if let Some(refusal) = refused {
            observation.manage_would = format!("refuse it: {refusal}");
        }
        let message = format!("observed, nothing written; Manage would {}", observation.manage_would);
        set(ConditionType::Ready, true, Reason::Observed, &message);
        set(ConditionType::Stalled, false, Reason::Observed, "");
        set(ConditionType::Reconciling, false, Reason::Progressing, "");
        status.observation = Some(observation);
        status.conditions = conditions;
        return status;
    }
    match problem {
        None => {
            set(
                ConditionType::Ready,
                true,
                Reason::Configured,
                "the subject's settings are in force",
            );
            set(ConditionType::Stalled, false, Reason::Configured, "");
        }
        Some((reason, message)) => {
            let message = truncate_message(&message, MAX_MESSAGE_BYTES);
            set(ConditionType::Ready, false, reason, &message);
            set(ConditionType::Stalled, true, reason, &message);
        }
    }
    set(ConditionType::Reconciling, false, Reason::Progressing, "");
    status.conditions = conditions;
    status
}

/// A reconciled SubjectConfig: its status and the policies' verdict (whose
/// audits are for the caller to record).
#[derive(Debug, Clone)]
pub struct ConfigReconciled {
    /// The status to write.
    pub status: SubjectConfigStatus,
    /// Every policy violation found.
    pub verdict: Verdict,
}

/// Reconciles one SubjectConfig: judge it against the policies (on its spec,
/// then with the global level it may fall back to), read the registry's
/// settings, decide, act, and render the status from the settings now in force.
///
/// # Errors
/// The registry's error when it fails transiently (retry later).
pub async fn reconcile(
    config: &SubjectConfig,
    view: &SubjectView,
    registry: &dyn Registry,
    policy: &PolicyContext,
    now: &Time,
) -> Result<ConfigReconciled, Error> {
    let me = ObjectKey::of(&config.metadata);
    let owner = view.config_owner.as_ref();
    let subject = SubjectName::new(config.spec.subject.clone()).ok();
    let mut verdict = policy.judge_subject_config(config, None, None);
    let settings = match &subject {
        Some(subject) if owner == Some(&me) && (!verdict.is_denied() || !config.spec.management_policy.is_manage()) => {
            Some(read_settings(registry, subject).await?)
        }
        _ => None,
    };
    if let Some(settings) = settings.as_ref().filter(|_| config.spec.compatibility.is_none()) {
        verdict = policy.judge_subject_config(config, None, Some(settings.global_level));
    }
    let plan = match decide(&config.spec, owner, &me, settings.clone()) {
        _ if verdict.is_denied() && config.spec.management_policy.is_manage() => {
            ConfigPlan::PolicyViolation(verdict.clone())
        }
        ConfigPlan::Apply {
            subject,
            level,
            mode,
            contract,
        } if !config.spec.management_policy.is_manage() => ConfigPlan::Observe {
            subject,
            level,
            mode,
            contract,
            refused: verdict.denial_message(),
        },
        plan => plan,
    };
    let outcome = act(&plan, registry).await?;
    let settings = match (&plan, &subject) {
        (ConfigPlan::Apply { .. }, Some(subject)) => Some(read_settings(registry, subject).await?),
        (ConfigPlan::Observe { .. }, _) => settings,
        _ => None,
    };
    let mut status = render(
        &config.spec,
        config.metadata.generation,
        config.status.as_ref(),
        &plan,
        outcome,
        settings,
        now,
    );
    if let Some(message) = verdict.warning_message() {
        let message = truncate_message(&message, MAX_MESSAGE_BYTES);
        set_condition(
            &mut status.conditions,
            ConditionType::PolicyWarning,
            true,
            Reason::PolicyViolation.as_str(),
            &message,
            config.metadata.generation,
            now,
        );
    }
    Ok(ConfigReconciled { status, verdict })
}

/// What an observed SubjectConfig reports, from the writes Manage would make.
fn observe_settings(
    level: Option<LevelWrite>,
    mode: Option<Option<RegistryMode>>,
    contract: Option<&ContractConfig>,
) -> ConfigObservation {
    let mut writes = Vec::new();
    match level {
        Some(LevelWrite::Set(level)) => writes.push(format!("set the subject's level to {level}")),
        Some(LevelWrite::Clear) => {
            writes.push("remove the subject's own level (the global one would apply)".to_owned())
        }
        None => {}
    }
    match mode {
        Some(Some(mode)) => writes.push(format!("set the subject's mode to {}", mode.as_str())),
        Some(None) => writes.push("remove the subject's own mode (the global one would apply)".to_owned()),
        None => {}
    }
    match contract {
        Some(contract) if contract.is_empty() => writes.push("remove the subject's data-contract settings".to_owned()),
        Some(_) => writes.push("set the subject's data-contract settings to the spec's".to_owned()),
        None => {}
    }
    ConfigObservation {
        matches: writes.is_empty(),
        manage_would: if writes.is_empty() {
            "write nothing: the registry holds these settings".to_owned()
        } else {
            writes.join(", and ")
        },
    }
}

/// Why a SubjectConfig's mode is not in force, and what is.
fn mode_unsupported(wanted: SubjectMode, level: CompatibilityLevel, global: SubjectMode) -> String {
    let word = |mode: SubjectMode| match mode {
        SubjectMode::Readwrite => "READWRITE",
        SubjectMode::Readonly => "READONLY",
    };
    format!(
        "this registry cannot hold a per-subject mode, so mode {} was not set; compatibility {} is in force, \
         and the registry's global mode {} applies to the subject",
        word(wanted),
        mode_of(level),
        word(global)
    )
}

/// The SubjectConfig word for a registry mode.
fn subject_mode(mode: RegistryMode) -> SubjectMode {
    match mode {
        RegistryMode::ReadOnly | RegistryMode::ReadOnlyOverride => SubjectMode::Readonly,
        RegistryMode::ReadWrite | RegistryMode::Import => SubjectMode::Readwrite,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> ObjectKey {
        ObjectKey {
            namespace: "default".to_owned(),
            name: "orders".to_owned(),
        }
    }

    fn settings(subject_level: Option<Mode>, subject_mode: Option<RegistryMode>) -> Option<RegistrySettings> {
        Some(RegistrySettings {
            contract: Default::default(),
            global_level: Mode::Backward,
            subject_level,
            global_mode: RegistryMode::ReadWrite,
            subject_mode,
            subject_mode_supported: true,
        })
    }

    fn spec(compatibility: Option<CompatibilityLevel>, mode: Option<SubjectMode>) -> SubjectConfigSpec {
        SubjectConfigSpec {
            subject: "orders-value".to_owned(),
            registry_ref: None,
            compatibility,
            contract: Default::default(),
            mode,
            management_policy: Default::default(),
        }
    }

    #[test]
    fn a_level_is_written_only_when_the_registry_differs() {
        let wanted = spec(Some(CompatibilityLevel::Full), None);
        let plan = decide(&wanted, Some(&me()), &me(), settings(None, None));
        assert!(matches!(
            plan,
            ConfigPlan::Apply {
                level: Some(LevelWrite::Set(Mode::Full)),
                mode: None,
                ..
            }
        ));
        let plan = decide(&wanted, Some(&me()), &me(), settings(Some(Mode::Full), None));
        assert!(matches!(
            plan,
            ConfigPlan::Apply {
                level: None,
                mode: None,
                ..
            }
        ));
    }

    #[test]
    fn removing_a_field_removes_the_subject_setting() {
        let plan = decide(
            &spec(None, None),
            Some(&me()),
            &me(),
            settings(Some(Mode::None), Some(RegistryMode::ReadOnly)),
        );
        assert!(matches!(
            plan,
            ConfigPlan::Apply {
                level: Some(LevelWrite::Clear),
                mode: Some(None),
                ..
            }
        ));
    }

    #[test]
    fn the_status_names_where_each_setting_comes_from() {
        let wanted = spec(Some(CompatibilityLevel::Forward), None);
        let plan = decide(&wanted, Some(&me()), &me(), settings(None, None));
        let now = Time(Default::default());
        let status = render(
            &wanted,
            Some(2),
            None,
            &plan,
            Ok(()),
            settings(Some(Mode::Forward), None),
            &now,
        );
        assert_eq!(status.compatibility, Some(CompatibilityLevel::Forward));
        assert_eq!(status.compatibility_source, Some(SettingSource::Subject));
        assert_eq!(status.mode, Some(SubjectMode::Readwrite));
        assert_eq!(status.mode_source, Some(SettingSource::Global));
        assert_eq!(status.subject.as_deref(), Some("orders-value"));
        assert!(
            status
                .conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        );
    }

    #[test]
    fn a_second_config_for_one_subject_is_a_conflict() {
        let other = ObjectKey {
            namespace: "other".to_owned(),
            name: "x".to_owned(),
        };
        let plan = decide(&spec(None, None), Some(&other), &me(), settings(None, None));
        assert_eq!(plan, ConfigPlan::Conflict { owner: Some(other) });
    }
}
