//! Custom options whose extension is not defined anywhere the schema can
//! see (`option (my_option) = true;` without its `extend`). Confluent keeps
//! such a schema, and its options as written; protox refuses it ("name
//! 'my_option' is not defined"). So the option the compiler names is cut
//! from the text it compiles (blanked, so lines and columns stay) and kept,
//! as written, for the schema's identity: two schemas that differ only in
//! such an option's value are different schemas.

/// Text that is not code: strings and comments, which the scans skip.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Skip {
    Code,
    String(u8),
    LineComment,
    BlockComment,
}

/// The byte positions of `text` that are code (not in a string or comment).
fn code_mask(text: &[u8]) -> Vec<bool> {
    let mut mask = vec![true; text.len()];
    let mut state = Skip::Code;
    let mut index = 0;
    while index < text.len() {
        let byte = text[index];
        match state {
            Skip::Code => match byte {
                b'"' | b'\'' => state = Skip::String(byte),
                b'/' if text.get(index + 1) == Some(&b'/') => state = Skip::LineComment,
                b'/' if text.get(index + 1) == Some(&b'*') => state = Skip::BlockComment,
                _ => {}
            },
            Skip::String(quote) => {
                mask[index] = false;
                if byte == b'\\' {
                    if let Some(next) = mask.get_mut(index + 1) {
                        *next = false;
                    }
                    index += 1;
                } else if byte == quote {
                    state = Skip::Code;
                }
            }
            Skip::LineComment => {
                mask[index] = false;
                if byte == b'\n' {
                    state = Skip::Code;
                }
            }
            Skip::BlockComment => {
                mask[index] = false;
                if byte == b'/' && index > 0 && text[index - 1] == b'*' {
                    state = Skip::Code;
                }
            }
        }
        if state != Skip::Code {
            mask[index] = false;
        }
        index += 1;
    }
    mask
}

/// Where the option whose name the compiler pointed at (`offset`, inside
/// the parentheses) is, as the span to cut and the option's own text;
/// `None` when `offset` is not inside a parenthesized option name.
fn option_span(text: &str, offset: usize) -> Option<(usize, usize, String)> {
    let bytes = text.as_bytes();
    let code = code_mask(bytes);
    // The compiler points at the `option` keyword of a statement, or into
    // the option's name; from the keyword, go on to the name.
    let mut offset = offset.min(bytes.len());
    if text[offset..].starts_with("option") && code.get(offset).copied().unwrap_or(false) {
        let after = offset + "option".len();
        let name = after + text[after..].len() - text[after..].trim_start().len();
        if bytes.get(name) != Some(&b'(') {
            return None;
        }
        offset = name + 1;
    } else if bytes.get(offset) == Some(&b'(') {
        offset += 1;
    }
    // Back from the name over its characters to the `(` that opens it.
    let mut open = offset;
    while open > 0 && (bytes[open - 1].is_ascii_alphanumeric() || matches!(bytes[open - 1], b'_' | b'.' | b' ' | b'\t'))
    {
        open -= 1;
    }
    if open == 0 || bytes[open - 1] != b'(' || !code[open - 1] {
        return None;
    }
    let open = open - 1;
    let before = text[..open].trim_end();
    let statement = before.ends_with("option")
        && before[..before.len() - "option".len()]
            .chars()
            .last()
            .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
    let (start, end_at) = if statement {
        (before.len() - "option".len(), &[b';'][..])
    } else if before.ends_with('[') || before.ends_with(',') {
        (open, &[b',', b']'][..])
    } else {
        return None;
    };
    // Forward to the end at bracket depth 0.
    let mut depth = 0usize;
    let mut end = None;
    for index in open..bytes.len() {
        if !code[index] {
            continue;
        }
        match bytes[index] {
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            b')' | b'}' | b'>' => depth = depth.saturating_sub(1),
            b']' if depth == 0 => {
                end = Some(index);
                break;
            }
            b']' => depth -= 1,
            byte if depth == 0 && end_at.contains(&byte) => {
                end = Some(index);
                break;
            }
            _ => {}
        }
    }
    let end = end?;
    let written = text[start..end].split_whitespace().collect::<Vec<_>>().join(" ");
    if statement {
        return Some((start, end + 1, format!("{written};")));
    }
    // An inline option: take one comma with it, or the brackets when it is alone.
    if bytes[end] == b',' {
        return Some((start, end + 1, written));
    }
    let comma_before = before.ends_with(',').then(|| before.len() - 1);
    match comma_before {
        Some(comma) => Some((comma, end, written)),
        None => {
            let bracket = before.len() - 1;
            Some((bracket, end + 1, written))
        }
    }
}

/// Cuts the option the compiler reported as undefined at `offset` from
/// `text`: the text to compile next, and the option as written. `None`
/// when the error is not about a custom option's name.
pub fn cut_option_at(text: &str, offset: usize) -> Option<(String, String)> {
    let (start, end, written) = option_span(text, offset)?;
    let blanked: String = text[start..end]
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    Some((format!("{}{blanked}{}", &text[..start], &text[end..]), written))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(text: &str, name: &str) -> (String, String) {
        let offset = text.find(name).unwrap();
        cut_option_at(text, offset).unwrap()
    }

    #[test]
    fn a_statement_option_is_cut_whole_with_its_aggregate_value() {
        let text = "message M {\n  option (meta) = { a: 1; b: \"x;y\" };\n  int32 f = 1;\n}\n";
        let (rest, written) = cut(text, "meta");
        assert_eq!(written, "option (meta) = { a: 1; b: \"x;y\" };");
        assert_eq!(rest.lines().count(), text.lines().count());
        assert!(rest.contains("int32 f = 1;") && !rest.contains("meta"), "{rest}");
    }

    #[test]
    fn an_inline_option_takes_a_comma_or_its_brackets() {
        let (rest, written) = cut("int32 a = 1 [(pii) = \"mask\", deprecated = true];", "pii");
        assert_eq!(written, "(pii) = \"mask\"");
        assert_eq!(
            rest.split_whitespace().collect::<Vec<_>>().join(" "),
            "int32 a = 1 [ deprecated = true];"
        );
        let (rest, _) = cut("int32 a = 1 [deprecated = true, (pii).x = 2];", "pii");
        assert_eq!(
            rest.split_whitespace().collect::<Vec<_>>().join(" "),
            "int32 a = 1 [deprecated = true ];"
        );
        let (rest, _) = cut("int32 a = 1 [(pii) = 2];", "pii");
        assert_eq!(rest.split_whitespace().collect::<Vec<_>>().join(" "), "int32 a = 1 ;");
    }

    #[test]
    fn a_name_outside_an_option_is_not_cut() {
        assert_eq!(cut_option_at("message M { Unknown u = 1; }", 12), None);
        assert_eq!(cut_option_at("// option (x) = 1;\nmessage M {}", 11), None);
    }
}
