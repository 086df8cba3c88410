//! The SchemaPolicies at the REST API: a write that sets or removes a
//! compatibility level or a mode is judged before anything is stored.
//!
//! Only the rules that need no namespace apply here (the compatibility floor
//! and the allowed modes): a caller of the API acts for no namespace, so a
//! policy's namespace match is not consulted, and its subject patterns are.
//! A level or mode set globally is judged against every policy, since every
//! subject without its own setting falls back to it.
//!
//! A Deny is Confluent's HTTP 422 with the code of the setting refused
//! (42203, `RestInvalidCompatibilityException`; 42204,
//! `RestInvalidModeException`) and a message naming the policy, the rule,
//! the path and what would satisfy it. Warn and Audit let the write through;
//! every violation is logged (warn for Warn, info otherwise), and each Warn
//! also becomes a `Warning: 299` header, as Kubernetes sends admission
//! warnings.

use axum::http::{HeaderValue, header};
use axum::response::Response;

use super::{ApiError, ApiState};
use crate::compat::Mode;
use crate::crd::{CompatibilityLevel, ModeName};
use crate::policy::{LevelOrigin, PolicySet, Proposal, ProposedLevel, ProposedMode, Target};
use crate::registry::{RegistryMode, SubjectName};

/// The global level `DELETE /config` leaves: Confluent's default, and the
/// embedded registry's.
const RESET_LEVEL: Mode = Mode::Backward;

/// The global mode `DELETE /mode` leaves.
const RESET_MODE: RegistryMode = RegistryMode::ReadWrite;

/// Where a mode is in a `PUT /mode` body.
const MODE_PATH: &str = "mode";

/// A write the policies let through, with the warnings to send with it.
#[must_use]
#[derive(Debug, Default)]
pub(super) struct Passed {
    warnings: Vec<String>,
}

impl Passed {
    /// The warnings of both judgements.
    pub(super) fn and(mut self, other: Passed) -> Passed {
        self.warnings.extend(other.warnings);
        self
    }

    /// `response` with one `Warning` header per warning.
    pub(super) fn answer(self, mut response: Response) -> Response {
        for warning in self.warnings {
            if let Ok(value) = HeaderValue::from_str(&warning_header(&warning)) {
                response.headers_mut().append(header::WARNING, value);
            }
        }
        response
    }
}

/// Judges giving `subject` (or, with `None`, the registry) the level `level`,
/// as a request asks.
pub(super) fn level(state: &ApiState, subject: Option<&SubjectName>, level: Mode) -> Result<Passed, ApiError> {
    let Some(policies) = in_force(state) else {
        return Ok(Passed::default());
    };
    let proposed = ProposedLevel {
        level: level_name(level),
        origin: LevelOrigin::Request,
    };
    judge(&policies, level_proposal(subject, &proposed), Setting::Level, None)
}

/// Judges removing `subject`'s own level, which leaves it on the global one;
/// with `None`, resetting the global level to [`RESET_LEVEL`].
///
/// A subject without a level of its own passes: the removal changes
/// nothing and answers for itself.
pub(super) async fn level_removal(state: &ApiState, subject: Option<&SubjectName>) -> Result<Passed, ApiError> {
    let Some(policies) = in_force(state) else {
        return Ok(Passed::default());
    };
    let (left, context) = match subject {
        Some(_) => {
            if state.registry.compatibility(subject, false).await.is_err() {
                // Nothing to remove: the removal answers for itself (40408).
                return Ok(Passed::default());
            }
            (state.registry.compatibility(None, false).await?, None)
        }
        None => (
            RESET_LEVEL,
            Some(format!("removing the global level resets it to {RESET_LEVEL}")),
        ),
    };
    let proposed = ProposedLevel {
        level: level_name(left),
        origin: LevelOrigin::Removal,
    };
    judge(&policies, level_proposal(subject, &proposed), Setting::Level, context)
}

/// Judges giving `subject` (or, with `None`, the registry) the mode `mode`.
pub(super) fn mode(state: &ApiState, subject: Option<&SubjectName>, mode: RegistryMode) -> Result<Passed, ApiError> {
    let Some(policies) = in_force(state) else {
        return Ok(Passed::default());
    };
    judge(&policies, mode_proposal(subject, mode, MODE_PATH), Setting::Mode, None)
}

/// Judges removing `subject`'s own mode, which leaves it on the global one;
/// with `None`, resetting the global mode to [`RESET_MODE`].
///
/// A subject without a mode of its own passes: the removal changes nothing
/// and answers for itself.
pub(super) async fn mode_removal(state: &ApiState, subject: Option<&SubjectName>) -> Result<Passed, ApiError> {
    let Some(policies) = in_force(state) else {
        return Ok(Passed::default());
    };
    let (left, context) = match subject {
        Some(_) => {
            if state.registry.mode(subject, false).await.is_err() {
                // Nothing to remove: the removal answers for itself (40409,
                // or 405 from a registry without subject modes).
                return Ok(Passed::default());
            }
            let global = state.registry.mode(None, false).await?;
            let context = format!(
                "removing the subject's mode leaves it on the global mode {}",
                global.as_str()
            );
            (global, context)
        }
        None => (
            RESET_MODE,
            format!("removing the global mode resets it to {}", RESET_MODE.as_str()),
        ),
    };
    // A removal has no body: no field to point at.
    judge(
        &policies,
        mode_proposal(subject, left, ""),
        Setting::Mode,
        Some(context),
    )
}

/// The policies in force, unless there are none (then nothing is judged and
/// nothing extra is read).
fn in_force(state: &ApiState) -> Option<std::sync::Arc<PolicySet>> {
    let policies = state.policies.as_ref()?.current();
    (!policies.is_empty()).then_some(policies)
}

/// Which setting a write changes, for Confluent's error code.
#[derive(Debug, Clone, Copy)]
enum Setting {
    Level,
    Mode,
}

impl Setting {
    /// Confluent's code for an invalid value of the setting.
    fn code(self) -> u32 {
        match self {
            Setting::Level => 42203,
            Setting::Mode => 42204,
        }
    }
}

fn level_proposal<'a>(subject: Option<&'a SubjectName>, proposed: &'a ProposedLevel) -> Proposal<'a> {
    Proposal {
        subject: subject.map(SubjectName::as_str),
        level: Some(proposed),
        ..Proposal::new(Target::Registry)
    }
}

fn mode_proposal<'a>(subject: Option<&'a SubjectName>, mode: RegistryMode, path: &'static str) -> Proposal<'a> {
    Proposal {
        subject: subject.map(SubjectName::as_str),
        mode: Some(ProposedMode {
            mode: mode_name(mode),
            path,
        }),
        ..Proposal::new(Target::Registry)
    }
}

/// Judges `proposal`; `context`, when given, opens the refusal (a removal
/// says what it leaves in force).
fn judge(
    policies: &PolicySet,
    proposal: Proposal<'_>,
    setting: Setting,
    context: Option<String>,
) -> Result<Passed, ApiError> {
    let verdict = policies.evaluate(&proposal);
    let subject = proposal.subject.unwrap_or("(global)");
    for violation in &verdict.violations {
        if violation.actions.warn {
            tracing::warn!(subject, %violation, "SchemaPolicy violated by a REST write");
        } else {
            tracing::info!(subject, %violation, "SchemaPolicy violated by a REST write");
        }
    }
    if let Some(denial) = verdict.denial_message() {
        let message = match context {
            Some(context) => format!("{context}: {denial}"),
            None => denial,
        };
        return Err(ApiError::refused_by_policy(setting.code(), message));
    }
    Ok(Passed {
        warnings: verdict.warnings().map(ToString::to_string).collect(),
    })
}

/// A `Warning` header value (RFC 7234's form, as Kubernetes sends): code
/// 299, no agent, the text quoted; characters a header cannot carry become `?`.
fn warning_header(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    for character in text.chars() {
        match character {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(character);
            }
            ' '..='~' => quoted.push(character),
            _ => quoted.push('?'),
        }
    }
    format!("299 - \"{quoted}\"")
}

/// The policy's name for an engine level.
fn level_name(level: Mode) -> CompatibilityLevel {
    match level {
        Mode::Backward => CompatibilityLevel::Backward,
        Mode::BackwardTransitive => CompatibilityLevel::BackwardTransitive,
        Mode::Forward => CompatibilityLevel::Forward,
        Mode::ForwardTransitive => CompatibilityLevel::ForwardTransitive,
        Mode::Full => CompatibilityLevel::Full,
        Mode::FullTransitive => CompatibilityLevel::FullTransitive,
        Mode::None => CompatibilityLevel::None,
    }
}

/// The policy's name for a registry mode.
fn mode_name(mode: RegistryMode) -> ModeName {
    match mode {
        RegistryMode::ReadWrite => ModeName::Readwrite,
        RegistryMode::ReadOnly => ModeName::Readonly,
        RegistryMode::ReadOnlyOverride => ModeName::ReadonlyOverride,
        RegistryMode::Import => ModeName::Import,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_header_is_quoted_and_keeps_to_visible_ascii() {
        assert_eq!(
            warning_header(r#"subject `a"b\c` in é"#),
            r#"299 - "subject `a\"b\\c` in ?""#
        );
        assert!(HeaderValue::from_str(&warning_header("tab\there\nnewline")).is_ok());
    }

    #[test]
    fn every_level_and_mode_keeps_its_confluent_name() {
        for level in Mode::ALL {
            assert_eq!(crate::policy::level::name(level_name(level)), level.as_str());
        }
        for mode in [
            RegistryMode::ReadWrite,
            RegistryMode::ReadOnly,
            RegistryMode::ReadOnlyOverride,
            RegistryMode::Import,
        ] {
            assert_eq!(mode_name(mode).as_str(), mode.as_str());
        }
    }
}
