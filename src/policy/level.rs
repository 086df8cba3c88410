//! The order of compatibility levels that a policy's `minimum` uses.
//!
//! A level is the pair of guarantees it gives: how far back readers are
//! protected (BACKWARD) and how far back writers are (FORWARD), each none,
//! against the latest version, or against every version (transitive). One
//! level is at least another when it gives at least as much in both
//! directions. So NONE is below every level, BACKWARD and FORWARD are
//! incomparable, FULL is above both, a transitive level is above its plain
//! one, and FULL_TRANSITIVE is above every level.

use crate::crd::CompatibilityLevel;

/// How far one direction is guaranteed: nothing, the latest version, every version.
type Reach = u8;

/// The (backward, forward) guarantees of `level`.
fn guarantees(level: CompatibilityLevel) -> (Reach, Reach) {
    match level {
        CompatibilityLevel::None => (0, 0),
        CompatibilityLevel::Backward => (1, 0),
        CompatibilityLevel::BackwardTransitive => (2, 0),
        CompatibilityLevel::Forward => (0, 1),
        CompatibilityLevel::ForwardTransitive => (0, 2),
        CompatibilityLevel::Full => (1, 1),
        CompatibilityLevel::FullTransitive => (2, 2),
    }
}

/// Every level, weakest first within each direction.
pub const ALL: [CompatibilityLevel; 7] = [
    CompatibilityLevel::None,
    CompatibilityLevel::Backward,
    CompatibilityLevel::BackwardTransitive,
    CompatibilityLevel::Forward,
    CompatibilityLevel::ForwardTransitive,
    CompatibilityLevel::Full,
    CompatibilityLevel::FullTransitive,
];

/// Whether `level` guarantees at least what `minimum` does.
pub fn at_least(level: CompatibilityLevel, minimum: CompatibilityLevel) -> bool {
    let (back, forth) = guarantees(level);
    let (min_back, min_forth) = guarantees(minimum);
    back >= min_back && forth >= min_forth
}

/// Confluent's name of `level`.
pub fn name(level: CompatibilityLevel) -> &'static str {
    match level {
        CompatibilityLevel::None => "NONE",
        CompatibilityLevel::Backward => "BACKWARD",
        CompatibilityLevel::BackwardTransitive => "BACKWARD_TRANSITIVE",
        CompatibilityLevel::Forward => "FORWARD",
        CompatibilityLevel::ForwardTransitive => "FORWARD_TRANSITIVE",
        CompatibilityLevel::Full => "FULL",
        CompatibilityLevel::FullTransitive => "FULL_TRANSITIVE",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CompatibilityLevel::*;

    #[test]
    fn none_is_below_every_level_and_full_transitive_above_every_level() {
        for level in ALL {
            assert!(at_least(level, None), "{level:?} ≥ NONE");
            assert!(at_least(FullTransitive, level), "FULL_TRANSITIVE ≥ {level:?}");
            assert!(at_least(level, level), "{level:?} ≥ itself");
        }
        assert!(!at_least(None, Backward));
    }

    #[test]
    fn backward_and_forward_are_incomparable_and_full_is_above_both() {
        assert!(!at_least(Backward, Forward));
        assert!(!at_least(Forward, Backward));
        assert!(!at_least(BackwardTransitive, Forward));
        assert!(at_least(Full, Backward) && at_least(Full, Forward));
        assert!(
            !at_least(Full, BackwardTransitive),
            "FULL checks the latest version only"
        );
    }

    #[test]
    fn a_transitive_level_is_above_its_plain_one() {
        for (transitive, plain) in [
            (BackwardTransitive, Backward),
            (ForwardTransitive, Forward),
            (FullTransitive, Full),
        ] {
            assert!(at_least(transitive, plain));
            assert!(!at_least(plain, transitive));
        }
    }

    #[test]
    fn the_order_is_a_partial_order() {
        for a in ALL {
            for b in ALL {
                if at_least(a, b) && at_least(b, a) {
                    assert_eq!(a, b, "antisymmetric");
                }
                for c in ALL {
                    if at_least(a, b) && at_least(b, c) {
                        assert!(at_least(a, c), "transitive: {a:?} ≥ {b:?} ≥ {c:?}");
                    }
                }
            }
        }
    }
}
