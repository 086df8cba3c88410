//! Schema contexts, as Confluent names them: a subject `:.orders:payments`
//! is the subject `payments` of the context `.orders`; a subject without the
//! `:.ctx:` prefix is in the default context `.`. A context may carry a
//! configuration of its own (on the subject `:.ctx:`), which its subjects
//! fall back to before `:.__GLOBAL:` and the registry's global settings.
//!
//! Pure: names, and the rewriting of `/contexts/{ctx}/…` request paths into
//! the qualified subjects the routes take (what Confluent's `ContextFilter` does).

/// The default context.
pub const DEFAULT_CONTEXT: &str = ".";

/// The context whose configuration every context falls back to.
pub const GLOBAL_CONTEXT: &str = ".__GLOBAL";

/// The context a subject name is in: `.ctx` for `:.ctx:name`, `.` otherwise.
pub fn context_of(subject: &str) -> &str {
    subject
        .strip_prefix(':')
        .and_then(|rest| rest.split_once(':'))
        .map(|(context, _)| context)
        .filter(|context| context.starts_with('.'))
        .unwrap_or(DEFAULT_CONTEXT)
}

/// The prefix that puts a subject in `context` (given as `ctx`, `.ctx` or
/// `:.ctx:`): empty for the default context.
pub fn prefix(context: &str) -> String {
    let bare = context.trim_start_matches(':').trim_end_matches(':');
    match bare {
        "" | DEFAULT_CONTEXT => String::new(),
        dotted if dotted.starts_with('.') => format!(":{dotted}:"),
        plain => format!(":.{plain}:"),
    }
}

/// The context's name as listed (`.ctx`), from any of its spellings.
pub fn name(context: &str) -> String {
    let prefix = prefix(context);
    if prefix.is_empty() {
        DEFAULT_CONTEXT.to_owned()
    } else {
        prefix.trim_matches(':').to_owned()
    }
}

/// Whether a subject (as it appears in a path or query, possibly
/// percent-encoded) already names its context.
fn is_qualified(subject: &str) -> bool {
    let decoded = percent_decoded_prefix(subject);
    decoded.starts_with(":.") || decoded.starts_with(":*:")
}

/// The first few characters of `text` with `%3A`/`%3a` read as `:`.
fn percent_decoded_prefix(text: &str) -> String {
    text.replace("%3A", ":").replace("%3a", ":").chars().take(3).collect()
}

/// The subjects whose configuration `subject` falls back to, in order,
/// before the registry's global settings: its context's (unless it is the
/// default context, or the subject is that context's own configuration),
/// then `:.__GLOBAL:`.
pub fn fallbacks(subject: &str) -> Vec<String> {
    let mut chain = Vec::with_capacity(2);
    let context = context_of(subject);
    let own = prefix(context);
    if context != DEFAULT_CONTEXT && subject != own {
        chain.push(own);
    }
    let global = prefix(GLOBAL_CONTEXT);
    if subject != global {
        chain.push(global);
    }
    chain
}

/// A `/contexts/{ctx}/rest` request path and query rewritten for the routes
/// without the prefix: the subject after `subjects`, or after a leading
/// `config` or `mode`, is put in the context (a bare `config` or `mode` names
/// the context's own configuration); `subject` of `schemas/ids/…` and
/// `subjectPrefix` of the `schemas` and `subjects` listings are too. `None`
/// when the path does not start with `/contexts/{ctx}/`.
pub fn rewrite(path: &str, query: Option<&str>) -> Option<(String, Option<String>)> {
    let rest = path.strip_prefix("/contexts/")?;
    let (context, rest) = rest.split_once('/')?;
    let context_prefix = prefix(context);
    let segments: Vec<&str> = rest.split('/').collect();
    let mut rewritten = Vec::with_capacity(segments.len() + 1);
    let mut qualify_next = false;
    let mut trailing_settings = false;
    for (index, segment) in segments.iter().enumerate() {
        if qualify_next {
            qualify_next = false;
            trailing_settings = false;
            if is_qualified(segment) {
                rewritten.push((*segment).to_owned());
            } else {
                rewritten.push(format!("{context_prefix}{segment}"));
            }
            continue;
        }
        let settings = index == 0 && (*segment == "config" || *segment == "mode");
        if *segment == "subjects" || settings {
            qualify_next = true;
            trailing_settings = settings;
        }
        rewritten.push((*segment).to_owned());
    }
    if trailing_settings && !context_prefix.is_empty() {
        rewritten.push(context_prefix.clone());
    }
    let path = format!("/{}", rewritten.join("/"));
    let query = rewrite_query(&path, query, &context_prefix);
    Some((path, query))
}

/// The query of a rewritten path, its subject parameters put in the context.
fn rewrite_query(path: &str, query: Option<&str>, context_prefix: &str) -> Option<String> {
    let parameter = if path.starts_with("/schemas/ids") {
        "subject"
    } else if path == "/schemas" || path == "/subjects" {
        "subjectPrefix"
    } else {
        return query.map(str::to_owned);
    };
    let mut pairs: Vec<String> = query
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(str::to_owned)
        .collect();
    let mut found = false;
    for pair in &mut pairs {
        let (key, value) = pair.split_once('=').unwrap_or((pair.as_str(), ""));
        if key == parameter {
            found = true;
            if !is_qualified(value) {
                *pair = format!("{key}={context_prefix}{value}");
            }
        }
    }
    if !found && !context_prefix.is_empty() {
        pairs.push(format!("{parameter}={context_prefix}"));
    }
    (!pairs.is_empty()).then(|| pairs.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subjects_context_is_read_from_its_prefix() {
        assert_eq!(context_of(":.orders:payments"), ".orders");
        assert_eq!(context_of("payments"), ".");
        assert_eq!(context_of(":.:payments"), ".");
        assert_eq!(context_of(":bad:payments"), ".");
        assert_eq!(prefix("orders"), ":.orders:");
        assert_eq!(prefix(".orders"), ":.orders:");
        assert_eq!(prefix(":.orders:"), ":.orders:");
        assert_eq!(prefix("."), "");
        assert_eq!(name("orders"), ".orders");
        assert_eq!(name("."), ".");
    }

    #[test]
    fn a_subject_falls_back_to_its_context_then_the_global_context() {
        assert_eq!(fallbacks(":.orders:payments"), vec![":.orders:", ":.__GLOBAL:"]);
        assert_eq!(fallbacks(":.orders:"), vec![":.__GLOBAL:"]);
        assert_eq!(fallbacks("payments"), vec![":.__GLOBAL:"]);
        assert!(fallbacks(":.__GLOBAL:").is_empty());
    }

    #[test]
    fn context_paths_become_qualified_subjects_as_confluent_rewrites_them() {
        let cases = [
            (
                "/contexts/.orders/subjects/payments/versions",
                None,
                "/subjects/:.orders:payments/versions",
                None,
            ),
            (
                "/contexts/orders/subjects/:.other:x/versions/1",
                None,
                "/subjects/:.other:x/versions/1",
                None,
            ),
            (
                "/contexts/.orders/config/payments",
                None,
                "/config/:.orders:payments",
                None,
            ),
            ("/contexts/.orders/config", None, "/config/:.orders:", None),
            ("/contexts/.orders/mode", None, "/mode/:.orders:", None),
            ("/contexts/./config", None, "/config", None),
            (
                "/contexts/.orders/subjects",
                Some("deleted=true"),
                "/subjects",
                Some("deleted=true&subjectPrefix=:.orders:"),
            ),
            (
                "/contexts/.orders/schemas/ids/7",
                None,
                "/schemas/ids/7",
                Some("subject=:.orders:"),
            ),
            (
                "/contexts/.orders/schemas/ids/7/versions",
                Some("subject=payments"),
                "/schemas/ids/7/versions",
                Some("subject=:.orders:payments"),
            ),
            (
                "/contexts/.orders/compatibility/subjects/p/versions",
                None,
                "/compatibility/subjects/:.orders:p/versions",
                None,
            ),
        ];
        for (path, query, want_path, want_query) in cases {
            let (got_path, got_query) = rewrite(path, query).unwrap();
            assert_eq!(got_path, want_path, "{path}");
            assert_eq!(got_query.as_deref(), want_query, "{path}");
        }
        assert_eq!(rewrite("/subjects/x", None), None);
        assert_eq!(rewrite("/contexts/.orders", None), None);
    }
}
