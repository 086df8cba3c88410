//! Which lines of two texts changed: a longest-common-subsequence line
//! diff, for marking the texts beside a semantic diff. Bounded: texts too
//! long to compare line by line are shown unmarked.

/// The most line pairs compared (lines of one text times lines of the other).
const MAX_CELLS: usize = 4_000_000;

/// How a line takes part in the diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// In both texts.
    Same,
    /// Only in the earlier text.
    Removed,
    /// Only in the later text.
    Added,
}

/// The lines of one text, each with its mark.
pub type Marked<'a> = Vec<(Mark, &'a str)>;

/// The lines of `before` and of `after`, each with its mark; `None` when
/// the texts are too long to compare.
pub fn mark_lines<'a>(before: &'a str, after: &'a str) -> Option<(Marked<'a>, Marked<'a>)> {
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    if old.len().saturating_mul(new.len()) > MAX_CELLS {
        return None;
    }
    // common[i][j]: the longest common subsequence of old[i..] and new[j..].
    let width = new.len() + 1;
    let mut common = vec![0u32; (old.len() + 1) * width];
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            common[i * width + j] = if old[i] == new[j] {
                common[(i + 1) * width + j + 1] + 1
            } else {
                common[(i + 1) * width + j].max(common[i * width + j + 1])
            };
        }
    }
    let (mut left, mut right) = (Vec::with_capacity(old.len()), Vec::with_capacity(new.len()));
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < new.len() {
        if old[i] == new[j] {
            left.push((Mark::Same, old[i]));
            right.push((Mark::Same, new[j]));
            i += 1;
            j += 1;
        } else if common[(i + 1) * width + j] >= common[i * width + j + 1] {
            left.push((Mark::Removed, old[i]));
            i += 1;
        } else {
            right.push((Mark::Added, new[j]));
            j += 1;
        }
    }
    left.extend(old[i..].iter().map(|line| (Mark::Removed, *line)));
    right.extend(new[j..].iter().map(|line| (Mark::Added, *line)));
    Some((left, right))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_and_removed_lines_are_marked_and_the_rest_kept() {
        let (left, right) = mark_lines("a\nb\nc", "a\nc\nd").unwrap();
        assert_eq!(left, [(Mark::Same, "a"), (Mark::Removed, "b"), (Mark::Same, "c")]);
        assert_eq!(right, [(Mark::Same, "a"), (Mark::Same, "c"), (Mark::Added, "d")]);
    }

    #[test]
    fn texts_too_long_to_compare_are_left_unmarked() {
        let long = "x\n".repeat(3000);
        assert!(mark_lines(&long, &long).is_none());
    }
}
