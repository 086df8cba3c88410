//! Limits checked before any parser sees the input. Depth: protox, the
//! descriptor pool and every walk over messages and option values recurse
//! once per level, so a few kilobytes of `{ { { …` would exhaust a thread's
//! stack and abort the process. Name length: the descriptor pool keeps an
//! entry for every prefix of a dotted name (`p`, `p.p`, `p.p.p`, …), so a
//! 65 KB package would take a gigabyte. Text is scanned once, without
//! recursion; a decoded descriptor's message nesting is measured with a
//! bounded walk.

use prost_types::{DescriptorProto, FileDescriptorProto};

/// The deepest nesting of braces, brackets, parentheses and angle brackets
/// in `.proto` text, and of messages in a descriptor. Real schemas stay far
/// below it; it is shallow enough for a 2 MiB worker stack in a debug build.
pub(crate) const MAX_NESTING: usize = 64;

/// The longest dotted name (package, type or option name) accepted, in bytes.
pub(crate) const MAX_NAME_BYTES: usize = 1_024;

/// What [`hostile_at`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hostile {
    /// A bracket opening a level deeper than [`MAX_NESTING`].
    TooDeep,
    /// A dotted name longer than [`MAX_NAME_BYTES`].
    NameTooLong,
}

/// The byte offset of the first bracket that opens a level deeper than
/// [`MAX_NESTING`], or of the first name longer than [`MAX_NAME_BYTES`],
/// outside comments and string literals; `None` when the text stays within both.
pub(crate) fn hostile_at(text: &str) -> Option<(usize, Hostile)> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut index = 0;
    while index < bytes.len() {
        let name_length = bytes[index..]
            .iter()
            .take_while(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.'))
            .count();
        if name_length > MAX_NAME_BYTES {
            return Some((index, Hostile::NameTooLong));
        }
        if name_length > 0 {
            index += name_length;
            continue;
        }
        match bytes[index] {
            b'/' if bytes.get(index + 1) == Some(&b'/') => {
                index = find_from(bytes, index + 2, b"\n").map_or(bytes.len(), |end| end + 1);
                continue;
            }
            b'/' if bytes.get(index + 1) == Some(&b'*') => {
                index = find_from(bytes, index + 2, b"*/").map_or(bytes.len(), |end| end + 2);
                continue;
            }
            quote @ (b'"' | b'\'') => {
                index = string_end(bytes, index + 1, quote);
                continue;
            }
            b'{' | b'[' | b'(' | b'<' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some((index, Hostile::TooDeep));
                }
            }
            b'}' | b']' | b')' | b'>' => depth = depth.saturating_sub(1),
            _ => {}
        }
        index += 1;
    }
    None
}

/// The index just past the string literal whose body starts at `start`
/// (an unterminated one ends at the line's end, as protox reads it).
fn string_end(bytes: &[u8], start: usize, quote: u8) -> usize {
    let mut index = start;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => index += 2,
            b'\n' => return index,
            byte if byte == quote => return index + 1,
            _ => index += 1,
        }
    }
    bytes.len()
}

fn find_from(bytes: &[u8], start: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(start..)?
        .windows(needle.len())
        .position(|window| window == needle)
        .map(|position| start + position)
}

/// Whether a descriptor's messages nest deeper than [`MAX_NESTING`]. The
/// walk stops at the limit, so its own depth is bounded.
pub(crate) fn descriptor_too_deep(file: &FileDescriptorProto) -> bool {
    fn deeper_than(messages: &[DescriptorProto], levels_left: usize) -> bool {
        if messages.is_empty() {
            return false;
        }
        levels_left == 0
            || messages
                .iter()
                .any(|message| deeper_than(&message.nested_type, levels_left - 1))
    }
    deeper_than(&file.message_type, MAX_NESTING)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_in_comments_and_strings_do_not_count() {
        let open = "{".repeat(MAX_NESTING + 1);
        let text = format!("// {open}\n/* {open} */\noption x = \"{open}\";\noption y = '{open}\\'';\n");
        assert_eq!(hostile_at(&text), None);
    }

    #[test]
    fn a_dotted_name_past_the_limit_is_named() {
        let package = vec!["p"; MAX_NAME_BYTES / 2 + 1].join(".");
        let text = format!("syntax = \"proto3\";\npackage {package};\n");
        assert_eq!(
            hostile_at(&text),
            Some(("syntax = \"proto3\";\npackage ".len(), Hostile::NameTooLong))
        );
        let fits = vec!["p"; MAX_NAME_BYTES / 2].join(".");
        assert_eq!(hostile_at(&format!("package {fits};")), None);
    }

    #[test]
    fn the_first_bracket_past_the_limit_is_named() {
        let text = format!("message M {}", "{".repeat(MAX_NESTING + 5));
        assert_eq!(
            hostile_at(&text),
            Some(("message M ".len() + MAX_NESTING, Hostile::TooDeep))
        );
        let balanced = "{}".repeat(10 * MAX_NESTING);
        assert_eq!(hostile_at(&balanced), None);
    }

    #[test]
    fn descriptor_nesting_is_measured_up_to_the_limit() {
        let mut message = DescriptorProto::default();
        for _ in 1..MAX_NESTING {
            message = DescriptorProto {
                nested_type: vec![message],
                ..DescriptorProto::default()
            };
        }
        let mut file = FileDescriptorProto {
            message_type: vec![message.clone()],
            ..FileDescriptorProto::default()
        };
        assert!(!descriptor_too_deep(&file));
        file.message_type = vec![DescriptorProto {
            nested_type: vec![message],
            ..DescriptorProto::default()
        }];
        assert!(descriptor_too_deep(&file));
    }
}
