//! A depth limit checked before any parser sees the input: protox, the
//! descriptor pool and every walk over messages and option values recurse
//! once per level, so a few kilobytes of `{ { { …` would exhaust a thread's
//! stack and abort the process. Text is scanned without recursion; a decoded
//! descriptor's message nesting is measured with a bounded walk.

use prost_types::{DescriptorProto, FileDescriptorProto};

/// The deepest nesting of braces, brackets, parentheses and angle brackets
/// in `.proto` text, and of messages in a descriptor. Real schemas stay far
/// below it; it is shallow enough for a 2 MiB worker stack in a debug build.
pub(crate) const MAX_NESTING: usize = 64;

/// The byte offset of the first bracket that opens a level deeper than
/// [`MAX_NESTING`], outside comments and string literals; `None` when the
/// text stays within it.
pub(crate) fn too_deep_at(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut index = 0;
    while index < bytes.len() {
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
                    return Some(index);
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
        assert_eq!(too_deep_at(&text), None);
    }

    #[test]
    fn the_first_bracket_past_the_limit_is_named() {
        let text = format!("message M {}", "{".repeat(MAX_NESTING + 5));
        assert_eq!(too_deep_at(&text), Some("message M ".len() + MAX_NESTING));
        let balanced = "{}".repeat(10 * MAX_NESTING);
        assert_eq!(too_deep_at(&balanced), None);
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
