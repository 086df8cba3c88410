//! The search across the registry: a form (also on the subject list) and
//! its results, each linking to the version page that holds the element.
//! The same query as `GET /schemaops/search`, read by the same rules.

use std::collections::HashMap;

use axum::extract::{Query as QueryString, State};
use axum::http::StatusCode;

use super::Problem;
use crate::registry::search::{Found, MAX_QUERY_CHARS, Query, Target};
use crate::ui::UiState;
use crate::ui::html::{Html, segment};
use crate::ui::layout::{Page, Place, page};

/// The form: text and what to look for, `selected` chosen.
pub fn form(html: &mut Html, text: &str, selected: Target) {
    html.raw("<form class=\"inline\" method=\"get\" action=\"/ui/search\" role=\"search\" id=\"schema-search\">")
        .raw("<div><label for=\"search-text\">Search schemas</label>")
        .raw("<input type=\"search\" id=\"search-text\" name=\"q\" required maxlength=\"")
        .number(MAX_QUERY_CHARS as u64)
        .raw("\" value=\"")
        .text(text)
        .raw("\" placeholder=\"a field or type name, e.g. customer_id\"></div>")
        .raw("<div><label for=\"search-kind\">Look for</label><select id=\"search-kind\" name=\"kind\">");
    for (target, label) in [
        (Target::Field, "fields and properties"),
        (Target::Type, "records, messages, enums"),
        (Target::Subject, "subjects"),
    ] {
        html.raw("<option value=\"").text(target.as_str()).raw("\"");
        if target == selected {
            html.raw(" selected");
        }
        html.raw(">").text(label).raw("</option>");
    }
    html.raw("</select></div><button type=\"submit\">Search</button></form>");
}

/// `GET /ui/search?q=…&kind=…&limit=…`.
pub async fn show(
    State(state): State<UiState>,
    QueryString(params): QueryString<HashMap<String, String>>,
) -> Result<Page, Problem> {
    let param = |name: &str| params.get(name).map(String::as_str);
    let text = param("q").unwrap_or_default().to_owned();
    let mut html = Html::new();
    if text.is_empty() {
        form(&mut html, "", Target::Field);
        html.raw("<p class=\"muted\">Type a name, or part of one: every live version that defines a field, ")
            .raw("record, message or enum by that name is listed, with the element's type and place.</p>");
        return Ok(page(StatusCode::OK, "Search", &Place::Subjects, html));
    }
    let query = Query::from_params(param("q"), param("kind"), param("limit"))
        .map_err(|error| Problem::bad_request(error.to_string()))?;
    let found = state.api.registry.search(&query).await?;
    form(&mut html, &text, query.target());
    results(&mut html, &found, query.target());
    Ok(page(StatusCode::OK, &format!("Search: {text}"), &Place::Subjects, html))
}

fn results(html: &mut Html, found: &Found, target: Target) {
    let shown = found.subjects.len() + found.elements.len();
    html.raw("<p class=\"muted\" id=\"search-count\">");
    if shown == 0 {
        html.raw("Nothing matches.</p>");
        return;
    }
    html.number(shown as u64).raw(if shown == 1 { " hit" } else { " hits" });
    if found.more {
        html.raw(", and more: <span id=\"search-more\">make the search narrower to see them</span>");
    }
    html.raw(".</p>");
    if target == Target::Subject {
        html.raw("<table id=\"search-results\"><thead><tr><th scope=\"col\">Subject</th><th scope=\"col\">Type</th>")
            .raw("<th scope=\"col\">Latest version</th></tr></thead><tbody>");
        for hit in &found.subjects {
            let base = format!("/ui/subjects/{}", segment(hit.subject.as_str()));
            html.raw("<tr><td>").link(&base, hit.subject.as_str()).raw("</td><td>");
            html.text(hit.schema_type).raw("</td><td>");
            html.link(
                &format!("{base}/versions/{}", hit.latest_version),
                &format!("version {}", hit.latest_version),
            );
            html.raw("</td></tr>");
        }
        html.raw("</tbody></table>");
        return;
    }
    html.raw("<table id=\"search-results\"><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Kind</th>")
        .raw("<th scope=\"col\">Type</th><th scope=\"col\">Where</th><th scope=\"col\">Subject</th>")
        .raw("<th scope=\"col\">Version</th></tr></thead><tbody>");
    for hit in &found.elements {
        let subject = format!("/ui/subjects/{}", segment(hit.subject.as_str()));
        html.raw("<tr><td><code>").text(&hit.name).raw("</code></td><td>");
        html.text(hit.kind.as_str()).raw("</td><td><code>");
        html.text(&hit.type_name).raw("</code></td><td><code>");
        html.text(&hit.path).raw("</code></td><td>");
        html.link(&subject, hit.subject.as_str()).raw("</td><td>");
        html.link(
            &format!("{subject}/versions/{}", hit.version),
            &format!("version {}", hit.version),
        );
        html.raw(" <span class=\"muted\">(")
            .text(hit.schema_type)
            .raw(", ID ")
            .number(hit.id.get())
            .raw(")</span></td></tr>");
    }
    html.raw("</tbody></table>");
}
