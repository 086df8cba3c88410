//! Gives each finding of the check to the change that causes it, by place:
//! the change at the finding's exact path in the reading schema (the
//! candidate for BACKWARD, the earlier version for FORWARD), else at that
//! path in the other schema, else the nearest enclosing change, else the
//! nearest change below it, else the same element outside or inside a
//! group (a Protobuf oneof), else the change sharing the longest start of
//! its path (the same message or record). A finding no change is near (at
//! the root) becomes a change of its own, so every finding is attached
//! exactly once.

use super::{Break, Change, ChangeKind, Located, last_name};
use crate::compat::{Direction, Incompatibility, SchemaPath, Segment, json, protobuf};

/// The walked changes with every finding of `backward` and `forward` attached.
pub(super) fn attach(
    walked: Vec<Located<ChangeKind>>,
    backward: &[Incompatibility],
    forward: &[Incompatibility],
    policy: json::JsonPolicy,
) -> Vec<Change> {
    let mut places: Vec<(Option<SchemaPath>, Option<SchemaPath>)> = Vec::with_capacity(walked.len());
    let mut changes: Vec<Change> = walked
        .into_iter()
        .map(|located| {
            let path = located
                .candidate_path
                .clone()
                .or_else(|| located.previous_path.clone())
                .unwrap_or_default();
            places.push((located.previous_path, located.candidate_path));
            Change {
                kind: located.kind,
                path,
                element: located.element,
                detail: located.detail,
                backward: Vec::new(),
                forward: Vec::new(),
            }
        })
        .collect();
    for (direction, findings) in [(Direction::Backward, backward), (Direction::Forward, forward)] {
        for finding in findings {
            let reason = Break {
                kind: finding.kind,
                path: finding.path.clone(),
                message: finding.message.clone(),
            };
            let target = match best(&changes, &places, direction, &finding.path, policy) {
                Some(index) => index,
                None => {
                    changes.push(Change {
                        kind: ChangeKind::Unexplained(finding.kind),
                        path: finding.path.clone(),
                        element: last_name(&finding.path),
                        detail: String::new(),
                        backward: Vec::new(),
                        forward: Vec::new(),
                    });
                    places.push((Some(finding.path.clone()), Some(finding.path.clone())));
                    changes.len() - 1
                }
            };
            match direction {
                Direction::Backward => changes[target].backward.push(reason),
                Direction::Forward => changes[target].forward.push(reason),
            }
        }
    }
    changes
}

/// The change that best explains a finding at `path` in `direction`.
fn best(
    changes: &[Change],
    places: &[(Option<SchemaPath>, Option<SchemaPath>)],
    direction: Direction,
    path: &SchemaPath,
    policy: json::JsonPolicy,
) -> Option<usize> {
    let sides = |index: usize| {
        let (previous, candidate) = &places[index];
        match direction {
            Direction::Backward => (candidate.as_ref(), previous.as_ref()),
            Direction::Forward => (previous.as_ref(), candidate.as_ref()),
        }
    };
    let exact = |reading_side: bool| {
        let at: Vec<usize> = (0..changes.len())
            .filter(|&index| {
                let (reader, other) = sides(index);
                let side = if reading_side { reader } else { other };
                side == Some(path)
            })
            .collect();
        at.iter()
            .copied()
            .find(|&index| suspect(changes[index].kind, direction, policy))
            .or_else(|| at.first().copied())
    };
    if let Some(index) = exact(true).or_else(|| exact(false)) {
        return Some(index);
    }
    let depth = |place: Option<&SchemaPath>| place.map_or(0, |p| p.segments().len());
    let enclosing = (0..changes.len())
        .filter(|&index| {
            let (reader, other) = sides(index);
            [reader, other]
                .into_iter()
                .flatten()
                .any(|place| is_prefix(place, path))
        })
        .max_by_key(|&index| (depth(sides(index).0), usize::MAX - index));
    let below = || {
        (0..changes.len())
            .filter(|&index| {
                let (reader, other) = sides(index);
                [reader, other]
                    .into_iter()
                    .flatten()
                    .any(|place| is_prefix(path, place))
            })
            .min_by_key(|&index| (depth(sides(index).0), index))
    };
    let regrouped = || {
        let wanted = ungrouped(path);
        (0..changes.len()).find(|&index| {
            let (reader, other) = sides(index);
            [reader, other]
                .into_iter()
                .flatten()
                .any(|place| ungrouped(place) == wanted)
        })
    };
    let nearest = || {
        (0..changes.len())
            .map(|index| {
                let (reader, other) = sides(index);
                let shared = [reader, other]
                    .into_iter()
                    .flatten()
                    .map(|place| common_prefix(place, path))
                    .max()
                    .unwrap_or(0);
                (shared, index)
            })
            .filter(|&(shared, _)| shared > 0)
            .max_by_key(|&(shared, index)| (shared, usize::MAX - index))
            .map(|(_, index)| index)
    };
    enclosing.or_else(below).or_else(regrouped).or_else(nearest)
}

/// How many leading steps two paths share.
fn common_prefix(a: &SchemaPath, b: &SchemaPath) -> usize {
    a.segments()
        .iter()
        .zip(b.segments())
        .take_while(|(x, y)| x == y)
        .count()
}

/// A path without the group its last step is in: `/Order/choice/3` (field
/// 3 in oneof `choice`) as `/Order/3`, so a field that moved into or out of
/// a group is found on either side.
fn ungrouped(path: &SchemaPath) -> Vec<&Segment> {
    let segments = path.segments();
    match segments {
        [.., Segment::Key(_), Segment::Key(_), Segment::Index(_)] => {
            let last = segments.len() - 1;
            segments[..last - 1]
                .iter()
                .chain(std::iter::once(&segments[last]))
                .collect()
        }
        _ => segments.iter().collect(),
    }
}

/// Whether `outer` is a proper prefix of `inner`, step by step.
fn is_prefix(outer: &SchemaPath, inner: &SchemaPath) -> bool {
    let (outer, inner) = (outer.segments(), inner.segments());
    outer.len() < inner.len() && inner.starts_with(outer)
}

/// Whether a finding in `direction` is more likely this kind's doing than
/// that of another change at the same place: a tie-break only.
fn suspect(kind: ChangeKind, direction: Direction, policy: json::JsonPolicy) -> bool {
    match (kind, direction) {
        (ChangeKind::Avro(kind), direction) => kind.suspect(direction),
        (ChangeKind::Json(kind), Direction::Backward) => !json::is_compatible(kind, policy),
        (ChangeKind::Protobuf(kind), Direction::Backward) => !protobuf::is_compatible(kind),
        (ChangeKind::Json(_) | ChangeKind::Protobuf(_), Direction::Forward) | (ChangeKind::Unexplained(_), _) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_a_prefix_only_of_longer_paths_that_start_with_it() {
        let type_path = SchemaPath::root().key("fields").index(0).key("type");
        assert!(is_prefix(&type_path, &type_path.clone().index(1)));
        assert!(!is_prefix(&type_path, &type_path));
        assert!(!is_prefix(
            &type_path,
            &SchemaPath::root().key("fields").index(1).key("type")
        ));
    }

    #[test]
    fn a_field_in_a_oneof_is_the_same_element_as_at_the_top_level() {
        let in_oneof = SchemaPath::root().key("Order").key("choice").index(3);
        let top_level = SchemaPath::root().key("Order").index(3);
        assert_eq!(ungrouped(&in_oneof), ungrouped(&top_level));
        assert_ne!(
            ungrouped(&in_oneof),
            ungrouped(&SchemaPath::root().key("Order").index(4))
        );
    }
}
