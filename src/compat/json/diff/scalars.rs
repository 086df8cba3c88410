//! Strings and numbers compared: lengths, patterns, bounds and `multipleOf`.

use super::{RawChange, at, bound, keyword};
use crate::compat::json::Kind;
use crate::compat::json::model::{NumberNode, StringNode};

pub(super) fn strings<'a>(old: &StringNode, new: &StringNode, found: &mut Vec<RawChange<'a>>) {
    bound(
        found,
        "maxLength",
        old.max_length,
        new.max_length,
        [
            Kind::MaxLengthAdded,
            Kind::MaxLengthRemoved,
            Kind::MaxLengthIncreased,
            Kind::MaxLengthDecreased,
        ],
    );
    bound(
        found,
        "minLength",
        old.min_length,
        new.min_length,
        [
            Kind::MinLengthAdded,
            Kind::MinLengthRemoved,
            Kind::MinLengthIncreased,
            Kind::MinLengthDecreased,
        ],
    );
    match (&old.pattern, &new.pattern) {
        (None, Some(_)) => found.push(keyword("pattern", Kind::PatternAdded)),
        (Some(_), None) => found.push(keyword("pattern", Kind::PatternRemoved)),
        (Some(was), Some(is)) if was != is => found.push(keyword("pattern", Kind::PatternChanged)),
        _ => {}
    }
}

pub(super) fn numbers<'a>(old: &NumberNode, new: &NumberNode, found: &mut Vec<RawChange<'a>>) {
    bound(
        found,
        "maximum",
        old.maximum,
        new.maximum,
        [
            Kind::MaximumAdded,
            Kind::MaximumRemoved,
            Kind::MaximumIncreased,
            Kind::MaximumDecreased,
        ],
    );
    bound(
        found,
        "minimum",
        old.minimum,
        new.minimum,
        [
            Kind::MinimumAdded,
            Kind::MinimumRemoved,
            Kind::MinimumIncreased,
            Kind::MinimumDecreased,
        ],
    );
    bound(
        found,
        "exclusiveMaximum",
        old.exclusive_maximum,
        new.exclusive_maximum,
        [
            Kind::ExclusiveMaximumAdded,
            Kind::ExclusiveMaximumRemoved,
            Kind::ExclusiveMaximumIncreased,
            Kind::ExclusiveMaximumDecreased,
        ],
    );
    bound(
        found,
        "exclusiveMinimum",
        old.exclusive_minimum,
        new.exclusive_minimum,
        [
            Kind::ExclusiveMinimumAdded,
            Kind::ExclusiveMinimumRemoved,
            Kind::ExclusiveMinimumIncreased,
            Kind::ExclusiveMinimumDecreased,
        ],
    );
    match (&old.multiple_of, &new.multiple_of) {
        (None, None) => {}
        (None, Some(_)) => found.push(keyword("multipleOf", Kind::MultipleOfAdded)),
        (Some(_), None) => found.push(keyword("multipleOf", Kind::MultipleOfRemoved)),
        (Some(was), Some(is)) if was == is => {}
        (Some(was), Some(is)) => {
            let kind = if is.is_multiple_of(was) {
                Kind::MultipleOfExpanded
            } else if was.is_multiple_of(is) {
                Kind::MultipleOfReduced
            } else {
                Kind::MultipleOfChanged
            };
            found.push(keyword("multipleOf", kind));
        }
    }
    if old.integer != new.integer {
        found.push(at(if old.integer {
            Kind::TypeExtended
        } else {
            Kind::TypeNarrowed
        }));
    }
}
