//! The outcome of judging one change: every violation of every policy that
//! applies, each with what its policy does about it.

use std::fmt;

/// Which rule of a policy is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// `rules.subjects.allowed`.
    Subjects,
    /// `rules.compatibility`.
    Compatibility,
    /// `rules.deletionPolicies`.
    DeletionPolicies,
    /// `rules.modes`.
    Modes,
    /// `rules.schemaTypes`.
    SchemaTypes,
    /// `rules.registries.allowed`.
    Registries,
    /// `rules.naming.avroNamespace`.
    AvroNamespace,
    /// `rules.naming.protobufPackage`.
    ProtobufPackage,
    /// `rules.naming.jsonId`.
    JsonId,
    /// `rules.requireFieldDocs`.
    FieldDocs,
    /// `rules.validations[i]`.
    Validation(usize),
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Subjects => f.write_str("subjects.allowed"),
            Rule::Compatibility => f.write_str("compatibility"),
            Rule::DeletionPolicies => f.write_str("deletionPolicies"),
            Rule::Modes => f.write_str("modes"),
            Rule::SchemaTypes => f.write_str("schemaTypes"),
            Rule::Registries => f.write_str("registries.allowed"),
            Rule::AvroNamespace => f.write_str("naming.avroNamespace"),
            Rule::ProtobufPackage => f.write_str("naming.protobufPackage"),
            Rule::JsonId => f.write_str("naming.jsonId"),
            Rule::FieldDocs => f.write_str("requireFieldDocs"),
            Rule::Validation(index) => write!(f, "validations[{index}]"),
        }
    }
}

/// What a policy does about its violations (its `validationActions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Actions {
    /// Refuse the change.
    pub deny: bool,
    /// Warn, and let the change through.
    pub warn: bool,
    /// Record an event and a metric.
    pub audit: bool,
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The policy's name.
    pub policy: String,
    /// The rule.
    pub rule: Rule,
    /// The field path of what breaks it, e.g. `spec.compatibility`.
    pub path: String,
    /// What is wrong.
    pub problem: String,
    /// What would satisfy the rule.
    pub remedy: String,
    /// What the policy does about it.
    pub actions: Actions,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SchemaPolicy {} rule {}", self.policy, self.rule)?;
        // A REST removal has no field to point at.
        if !self.path.is_empty() {
            write!(f, " at {}", self.path)?;
        }
        write!(f, ": {}; {}", self.problem, self.remedy)
    }
}

/// Every violation found, in policy-name order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The violations.
    pub violations: Vec<Violation>,
}

impl Verdict {
    /// The violations that refuse the change.
    pub fn denials(&self) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(|violation| violation.actions.deny)
    }

    /// The violations that warn.
    pub fn warnings(&self) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(|violation| violation.actions.warn)
    }

    /// The violations that are audited.
    pub fn audits(&self) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(|violation| violation.actions.audit)
    }

    /// Whether some policy refuses the change.
    pub fn is_denied(&self) -> bool {
        self.denials().next().is_some()
    }

    /// Whether the only refusals are of the subject itself
    /// (`subjects.allowed`): the condition reason is then `SubjectNotAllowed`.
    pub fn subject_not_allowed(&self) -> bool {
        self.is_denied() && self.denials().all(|violation| violation.rule == Rule::Subjects)
    }

    /// The refusal, every denial joined, or `None` when nothing refuses.
    pub fn denial_message(&self) -> Option<String> {
        join(self.denials())
    }

    /// The warnings joined, or `None` when nothing warns.
    pub fn warning_message(&self) -> Option<String> {
        join(self.warnings())
    }
}

fn join<'a>(violations: impl Iterator<Item = &'a Violation>) -> Option<String> {
    let lines: Vec<String> = violations.map(ToString::to_string).collect();
    (!lines.is_empty()).then(|| lines.join("; "))
}
