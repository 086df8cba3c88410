//! JSON pretty-printing that keeps the order of object keys (serde_json's
//! `Value` sorts them): the text is re-indented token by token, two spaces
//! a level, as `serde_json::to_string_pretty` lays it out.
//!
//! Knows nothing of schemas; no recursion, so depth costs nothing.

/// `text` re-indented, or `None` when it is not JSON.
pub fn pretty_json(text: &str) -> Option<String> {
    serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let mut chars = text.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push('"');
                let mut escaped = false;
                for inner in chars.by_ref() {
                    out.push(inner);
                    match (escaped, inner) {
                        (false, '\\') => escaped = true,
                        (false, '"') => break,
                        _ => escaped = false,
                    }
                }
            }
            '{' | '[' => {
                while chars.next_if(|next| next.is_ascii_whitespace()).is_some() {}
                let close = if c == '{' { '}' } else { ']' };
                out.push(c);
                if chars.next_if_eq(&close).is_some() {
                    out.push(close);
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_ascii_whitespace() => {}
            c => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order_and_the_layout_is_serde_jsons() {
        let text = r#"{"type":"record","name":"A","fields":[{"name":"x, \"y\"","type":"int"}],"doc":{}, "e":[ ]}"#;
        let pretty = pretty_json(text).unwrap();
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::from_str::<serde_json::Value>(&pretty).unwrap(), value);
        assert!(pretty.starts_with("{\n  \"type\": \"record\",\n  \"name\": \"A\",\n  \"fields\": [\n    {\n"));
        assert!(pretty.ends_with("\"doc\": {},\n  \"e\": []\n}"), "{pretty}");
        assert_eq!(pretty_json(&pretty).as_deref(), Some(pretty.as_str()), "idempotent");
    }

    #[test]
    fn text_that_is_not_json_is_left_alone() {
        assert_eq!(pretty_json("{\"a\":"), None);
        assert_eq!(pretty_json("\"string\"").as_deref(), Some("\"string\""));
    }
}
