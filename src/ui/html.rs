//! HTML built by appending: markup the code writes ([`Html::raw`], only
//! ever string literals) and text from anywhere else ([`Html::text`],
//! always escaped). No template language, no dependency: a page is a
//! function that appends to an [`Html`].

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// A growing HTML document.
#[derive(Debug, Default)]
pub struct Html(String);

/// What a path segment keeps unescaped: RFC 3986 unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

impl Html {
    /// An empty document.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends markup written in the code.
    pub fn raw(&mut self, markup: &'static str) -> &mut Self {
        self.0.push_str(markup);
        self
    }

    /// Appends text, escaped for an element's content or a quoted attribute.
    pub fn text(&mut self, text: &str) -> &mut Self {
        for character in text.chars() {
            match character {
                '&' => self.0.push_str("&amp;"),
                '<' => self.0.push_str("&lt;"),
                '>' => self.0.push_str("&gt;"),
                '"' => self.0.push_str("&quot;"),
                '\'' => self.0.push_str("&#39;"),
                other => self.0.push(other),
            }
        }
        self
    }

    /// Appends a number.
    pub fn number(&mut self, number: impl Into<u64>) -> &mut Self {
        self.0.push_str(&number.into().to_string());
        self
    }

    /// Appends a link: `href` is built by the caller from [`segment`]s, the label is escaped.
    pub fn link(&mut self, href: &str, label: &str) -> &mut Self {
        self.raw("<a href=\"").text(href).raw("\">").text(label).raw("</a>")
    }

    /// Appends a fragment built elsewhere (already escaped where it needed to be).
    pub fn append(&mut self, fragment: Html) -> &mut Self {
        self.0.push_str(&fragment.0);
        self
    }

    /// The finished document.
    pub fn finish(self) -> String {
        self.0
    }
}

/// `text` as one URL path segment or query value, percent-encoded.
pub fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_content_and_attributes() {
        let mut html = Html::new();
        html.raw("<p title=\"")
            .text("\"><script>alert('x')</script>")
            .raw("\">")
            .text("a & b")
            .raw("</p>");
        assert_eq!(
            html.finish(),
            "<p title=\"&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\">a &amp; b</p>"
        );
    }

    #[test]
    fn segments_escape_slashes_and_markup() {
        assert_eq!(segment("a/b c<d>"), "a%2Fb%20c%3Cd%3E");
        assert_eq!(segment("orders-value_1.x~"), "orders-value_1.x~");
    }
}
