//! The compatibility matrix: one schema (a stored version here, a draft
//! in the sandbox) against every earlier version, per direction, and the
//! verdict of every mode, the level in force marked. With a compatibility
//! group, each version names its lineage, and versions of another lineage
//! are shown as such, never judged.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::{Problem, SubjectPath, findings, lineage, verdict};
use crate::registry::VersionSelector;
use crate::registry::api::ApiState;
use crate::registry::api::history::{MATRIX_VERSIONS, Matrix, matrix_of_version};
use crate::ui::html::Html;
use crate::ui::layout::{Page, Place, page};

/// `?version=`: a version number or `latest` (the default).
#[derive(Debug, Deserialize)]
pub struct MatrixQuery {
    version: Option<String>,
}

/// `GET /ui/subjects/{subject}/matrix`.
pub async fn show(
    State(state): State<ApiState>,
    SubjectPath(subject): SubjectPath,
    Query(query): Query<MatrixQuery>,
) -> Result<Page, Problem> {
    let selector = match &query.version {
        Some(text) => text.parse::<VersionSelector>()?,
        None => VersionSelector::Latest,
    };
    let (stored, matrix) = matrix_of_version(state.registry.as_ref(), &subject, selector).await?;
    let title = format!("{subject}: version {} against earlier versions", stored.version);
    let mut html = Html::new();
    render(&mut html, &matrix, &format!("version {}", stored.version));
    Ok(page(StatusCode::OK, &title, &Place::Subject(subject.as_str()), html))
}

/// The matrix of `tested` (as the page names it).
pub fn render(html: &mut Html, matrix: &Matrix, tested: &str) {
    if let Some(group) = &matrix.compatibility_group {
        html.raw("<p class=\"notice\" id=\"lineage\">Compatibility group <code>")
            .text(group)
            .raw("</code>: ")
            .text(tested)
            .raw(" is in lineage ");
        lineage(html, matrix.lineage.as_deref());
        html.raw(", and is checked only against the earlier versions of that lineage.</p>");
    }
    html.raw("<h2>Every mode</h2><table id=\"modes\"><thead><tr><th scope=\"col\">Mode</th>")
        .raw("<th scope=\"col\">Verdict</th><th scope=\"col\">Versions checked</th>")
        .raw("<th scope=\"col\">Incompatibilities</th></tr></thead><tbody>");
    for mode in &matrix.modes {
        let breaks = !mode.incompatibilities.is_empty();
        html.raw("<tr data-mode=\"")
            .text(mode.mode.as_str())
            .raw("\" data-verdict=\"")
            .raw(if breaks { "breaks" } else { "compatible" })
            .raw("\"><th scope=\"row\">")
            .text(mode.mode.as_str());
        if mode.mode == matrix.level {
            html.raw(" <span class=\"muted\">(in force)</span>");
        }
        html.raw("</th><td>");
        verdict(html, breaks);
        html.raw("</td><td>");
        let checked: Vec<String> = mode.checked.iter().map(ToString::to_string).collect();
        if checked.is_empty() {
            html.raw("<span class=\"muted\">none</span>");
        } else {
            html.text(&checked.join(", "));
        }
        html.raw("</td><td>");
        findings(html, &mode.incompatibilities);
        html.raw("</td></tr>");
    }
    html.raw("</tbody></table>");
    html.raw("<h2>Each earlier version</h2>");
    if matrix.truncated {
        html.raw("<p class=\"muted\">Only the newest ")
            .number(MATRIX_VERSIONS as u64)
            .raw(" earlier versions are compared.</p>");
    }
    if matrix.rows.is_empty() {
        html.raw("<p class=\"notice\">There is no earlier version: every mode accepts ")
            .text(tested)
            .raw(".</p>");
        return;
    }
    html.raw("<table id=\"rows\"><thead><tr><th scope=\"col\">Version</th><th scope=\"col\">ID</th>");
    if matrix.compatibility_group.is_some() {
        html.raw("<th scope=\"col\">Lineage</th>");
    }
    html.raw("<th scope=\"col\">BACKWARD (")
        .text(tested)
        .raw(" reads it)</th><th scope=\"col\">FORWARD (it reads ")
        .text(tested)
        .raw(")</th></tr></thead><tbody>");
    for row in &matrix.rows {
        html.raw("<tr data-version=\"")
            .number(row.version.get())
            .raw("\"><th scope=\"row\">")
            .number(row.version.get())
            .raw("</th><td>")
            .number(row.id.get())
            .raw("</td><td>");
        if matrix.compatibility_group.is_some() {
            lineage(html, row.lineage.as_deref());
            html.raw("</td><td>");
        }
        if row.other_lineage {
            html.raw(OTHER_LINEAGE)
                .raw("</td><td>")
                .raw(OTHER_LINEAGE)
                .raw("</td></tr>");
            continue;
        }
        verdict(html, !row.backward.is_empty());
        findings(html, &row.backward);
        html.raw("</td><td>");
        verdict(html, !row.forward.is_empty());
        findings(html, &row.forward);
        html.raw("</td></tr>");
    }
    html.raw("</tbody></table>");
}

/// The cell of a version of another lineage: never checked against this one.
const OTHER_LINEAGE: &str = "<span class=\"verdict other\" title=\"a version of another lineage is not checked against this one\">other lineage</span>";
