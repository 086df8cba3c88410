//! The compatibility level a subject should have: the SubjectConfig's when
//! one manages the subject, otherwise what the registry already applies.

use crate::compat::Mode;
use crate::crd::{CompatibilityLevel, SubjectConfigSpec};

/// The engine's mode for a level named in a SubjectConfig.
pub fn mode_of(level: CompatibilityLevel) -> Mode {
    match level {
        CompatibilityLevel::Backward => Mode::Backward,
        CompatibilityLevel::BackwardTransitive => Mode::BackwardTransitive,
        CompatibilityLevel::Forward => Mode::Forward,
        CompatibilityLevel::ForwardTransitive => Mode::ForwardTransitive,
        CompatibilityLevel::Full => Mode::Full,
        CompatibilityLevel::FullTransitive => Mode::FullTransitive,
        CompatibilityLevel::None => Mode::None,
    }
}

/// The SubjectConfig name of an engine mode.
pub fn level_of(mode: Mode) -> CompatibilityLevel {
    match mode {
        Mode::Backward => CompatibilityLevel::Backward,
        Mode::BackwardTransitive => CompatibilityLevel::BackwardTransitive,
        Mode::Forward => CompatibilityLevel::Forward,
        Mode::ForwardTransitive => CompatibilityLevel::ForwardTransitive,
        Mode::Full => CompatibilityLevel::Full,
        Mode::FullTransitive => CompatibilityLevel::FullTransitive,
        Mode::None => CompatibilityLevel::None,
    }
}

/// A change to a subject's own level in the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelWrite {
    /// Give the subject this level.
    Set(Mode),
    /// Remove the subject's level, so the global one applies.
    Clear,
}

/// The level registrations to `subject` must pass, and the registry write
/// (if any) that makes the registry agree.
///
/// With a SubjectConfig, its level wins (or the global level when it names
/// none); without one, the registry's own setting stands.
pub fn desired(
    config: Option<&SubjectConfigSpec>,
    global: Mode,
    subject_level: Option<Mode>,
) -> (Mode, Option<LevelWrite>) {
    match config {
        Some(config) => match config.compatibility.map(mode_of) {
            Some(level) if subject_level != Some(level) => (level, Some(LevelWrite::Set(level))),
            Some(level) => (level, None),
            None if subject_level.is_some() => (global, Some(LevelWrite::Clear)),
            None => (global, None),
        },
        None => (subject_level.unwrap_or(global), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(level: Option<CompatibilityLevel>) -> SubjectConfigSpec {
        SubjectConfigSpec {
            subject: "s".to_owned(),
            registry_ref: None,
            compatibility: level,
            contract: Default::default(),
            mode: None,
            management_policy: Default::default(),
        }
    }

    #[test]
    fn a_subject_config_level_wins_and_is_written_when_the_registry_differs() {
        let spec = config(Some(CompatibilityLevel::Forward));
        assert_eq!(
            desired(Some(&spec), Mode::Backward, None),
            (Mode::Forward, Some(LevelWrite::Set(Mode::Forward)))
        );
        assert_eq!(
            desired(Some(&spec), Mode::Backward, Some(Mode::Forward)),
            (Mode::Forward, None)
        );
    }

    #[test]
    fn a_subject_config_without_a_level_reverts_to_the_global_one() {
        let spec = config(None);
        assert_eq!(
            desired(Some(&spec), Mode::Full, Some(Mode::None)),
            (Mode::Full, Some(LevelWrite::Clear))
        );
        assert_eq!(desired(Some(&spec), Mode::Full, None), (Mode::Full, None));
    }

    #[test]
    fn without_a_subject_config_the_registry_setting_stands() {
        assert_eq!(desired(None, Mode::Backward, Some(Mode::None)), (Mode::None, None));
        assert_eq!(desired(None, Mode::Backward, None), (Mode::Backward, None));
    }

    #[test]
    fn every_level_round_trips() {
        for mode in Mode::ALL {
            assert_eq!(mode_of(level_of(mode)), mode);
        }
    }
}
