//! Admission warnings as the API server passes them on. Its warning
//! recorder (k8s.io/apiserver, `WithWarningRecorder`) drops a warning that
//! holds a control character, keeps each one whole until all of them
//! together pass 4096 characters, then cuts each to 256 characters and
//! drops what comes after. So a long warning is sent as several parts of at
//! most [`MAX_WARNING_CHARS`], numbered `(1/3) `, `(2/3) `, …, split
//! between words where it can: the remedy at its end is never lost.

/// The most characters (not bytes) in one warning that survives any cut.
pub const MAX_WARNING_CHARS: usize = 256;

/// Room left for the `(i/n) ` prefix of a part (up to `(9999/9999) `).
const PREFIX_CHARS: usize = 12;

/// `warning` as the warnings to send: itself when it fits, else its parts.
/// Control characters (newlines among them) become spaces.
pub fn parts(warning: &str) -> Vec<String> {
    let text: String = warning.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if text.chars().count() <= MAX_WARNING_CHARS {
        return vec![text];
    }
    let chunks = chunks(&text, MAX_WARNING_CHARS - PREFIX_CHARS);
    let count = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(index, chunk)| format!("({}/{count}) {chunk}", index + 1))
        .collect()
}

/// `text` in chunks of at most `limit` characters, each ending before a
/// space where one is in reach (that space is left out; joining the chunks
/// with single spaces gives `text` back).
fn chunks(text: &str, limit: usize) -> Vec<&str> {
    let mut chunks = Vec::new();
    let mut rest = text;
    while rest.chars().count() > limit {
        // The byte offset just past `limit` characters.
        let end = rest.char_indices().nth(limit).map_or(rest.len(), |(offset, _)| offset);
        let space = if rest[end..].starts_with(' ') {
            Some(end)
        } else {
            rest[..end].rfind(' ')
        };
        match space.filter(|&space| space > 0) {
            Some(space) => {
                chunks.push(&rest[..space]);
                rest = &rest[space + 1..];
            }
            None => {
                chunks.push(&rest[..end]);
                rest = &rest[end..];
            }
        }
    }
    chunks.push(rest);
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_warning_is_sent_as_it_is() {
        assert_eq!(parts("use one of Retain"), ["use one of Retain"]);
    }

    #[test]
    fn a_long_warning_is_split_between_words_into_numbered_parts_that_join_back() {
        let words: Vec<String> = (0..200).map(|i| format!("word{i}")).collect();
        let warning = words.join(" ");
        let parts = parts(&warning);
        assert!(parts.len() > 1);
        assert!(
            parts.iter().all(|part| part.chars().count() <= MAX_WARNING_CHARS),
            "{parts:?}"
        );
        let count = parts.len();
        let joined: Vec<&str> = parts
            .iter()
            .enumerate()
            .map(|(index, part)| part.strip_prefix(&format!("({}/{count}) ", index + 1)).unwrap())
            .collect();
        assert_eq!(joined.join(" "), warning);
    }

    #[test]
    fn a_word_longer_than_a_part_is_cut_on_a_character_boundary() {
        let warning = "é".repeat(600);
        let parts = parts(&warning);
        assert!(parts.iter().all(|part| part.chars().count() <= MAX_WARNING_CHARS));
        let text: String = parts.iter().map(|part| part.split_once(") ").unwrap().1).collect();
        assert_eq!(text, warning);
    }

    #[test]
    fn control_characters_become_spaces() {
        assert_eq!(parts("a\nb\tc"), ["a b c"]);
    }
}
