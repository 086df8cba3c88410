//! The links of a Markdown text and the ids mdBook gives its headings.

use std::collections::BTreeSet;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// One link or image of a Markdown text.
pub struct Link {
    /// Where it points, as written.
    pub target: String,
    /// The 1-based line it starts on.
    pub line: usize,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// Every link and image in `text` (links inside code are not links).
pub fn of(text: &str) -> Vec<Link> {
    Parser::new_ext(text, Options::ENABLE_TABLES)
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => Some(Link {
                target: dest_url.to_string(),
                line: line_of(text, range.start),
            }),
            _ => None,
        })
        .collect()
}

/// The ids mdBook gives the headings of `text`: the heading's text in lower
/// case, spaces turned into `-`, anything but letters, digits, `-` and `_`
/// dropped; a repeated id gets `-1`, `-2`… (mdBook's `normalize_id` and
/// `unique_id_from_content`).
pub fn heading_ids(text: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(text, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Heading { .. }) => {
                heading = Some(String::new());
            }
            Event::Text(part) | Event::Code(part) => {
                if let Some(heading) = heading.as_mut() {
                    heading.push_str(&part);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let title = heading.take().unwrap_or_default();
                let base: String = title
                    .to_lowercase()
                    .chars()
                    .filter_map(|c| {
                        if c.is_alphanumeric() || c == '_' || c == '-' {
                            Some(c)
                        } else if c.is_whitespace() {
                            Some('-')
                        } else {
                            None
                        }
                    })
                    .collect();
                let mut id = base.clone();
                let mut repeat = 1;
                while ids.contains(&id) {
                    id = format!("{base}-{repeat}");
                    repeat += 1;
                }
                ids.insert(id);
            }
            _ => {}
        }
    }
    ids
}
