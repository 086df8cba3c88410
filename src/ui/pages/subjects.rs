//! The subject list: name, schema type, level in force, number of
//! versions, latest version and ID, and how many schemas refer to the
//! subject. A subject whose details cannot be read shows why in its own
//! row; the rest of the list is unaffected.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use serde::Deserialize;

use super::Problem;
use crate::registry::api::ApiState;
use crate::registry::{Error, Registry, SubjectFilter, SubjectName, VersionFilter, VersionSelector};
use crate::ui::html::{Html, segment};
use crate::ui::layout::{Page, Place, page};

/// The most subjects one page lists; the search narrows a longer list.
const MAX_SUBJECTS: usize = 500;

/// The list's query: `?q=` keeps the subjects whose names contain it.
#[derive(Debug, Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    q: String,
}

/// One row of the list.
struct Row {
    subject: SubjectName,
    details: Result<Details, Error>,
}

struct Details {
    format: String,
    level: String,
    versions: usize,
    latest_version: u32,
    latest_id: u32,
    referenced_by: usize,
}

async fn details(registry: &dyn Registry, subject: &SubjectName) -> Result<Details, Error> {
    let versions = registry.versions(subject, VersionFilter::Live).await?;
    let latest = registry.version(subject, VersionSelector::Latest, false).await?;
    let level = registry.compatibility(Some(subject), true).await?;
    let referenced_by = registry.referrer_count(subject).await?;
    Ok(Details {
        format: latest.format.to_string(),
        level: level.to_string(),
        versions: versions.len(),
        latest_version: latest.version.get(),
        latest_id: latest.id.get(),
        referenced_by,
    })
}

/// `GET /ui/`.
pub async fn show(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Query(query): Query<ListQuery>,
) -> Result<Page, Problem> {
    let registry = state.registry.as_ref();
    let mut names = registry.subjects(&SubjectFilter::default()).await?;
    let wanted = query.q.to_lowercase();
    names.retain(|name| name.as_str().to_lowercase().contains(&wanted));
    let total = names.len();
    names.truncate(MAX_SUBJECTS);
    let mut rows = Vec::with_capacity(names.len());
    for subject in names {
        let details = details(registry, &subject).await;
        rows.push(Row { subject, details });
    }
    let mut html = Html::new();
    super::search::form(&mut html, "", crate::registry::search::Target::Field);
    html.raw("<form class=\"inline\" method=\"get\" action=\"/ui/\" role=\"search\">")
        .raw("<div><label for=\"subject-search\">Search subjects</label>")
        .raw("<input type=\"search\" id=\"subject-search\" name=\"q\" value=\"")
        .text(&query.q)
        .raw(
            "\" placeholder=\"part of a name (press / to focus)\"></div><button type=\"submit\">Search</button></form>",
        );
    html.raw("<p class=\"muted\"><span id=\"subject-count\">")
        .number(rows.len() as u64)
        .raw("</span> subjects shown");
    if total > rows.len() {
        html.raw(" of ").number(total as u64).raw("; search to narrow the list");
    }
    html.raw(". Levels are the ones in force now.</p>");
    html.raw(
        "<table id=\"subjects\"><thead><tr><th scope=\"col\">Subject</th><th scope=\"col\">Type</th>\
         <th scope=\"col\">Level</th><th scope=\"col\">Versions</th><th scope=\"col\">Latest</th>\
         <th scope=\"col\">Referenced by</th></tr></thead><tbody>",
    );
    for row in &rows {
        html.raw("<tr data-subject=\"")
            .text(row.subject.as_str())
            .raw("\"><td>");
        html.link(
            &format!("/ui/subjects/{}", segment(row.subject.as_str())),
            row.subject.as_str(),
        )
        .raw("</td>");
        match &row.details {
            Ok(details) => {
                html.raw("<td>")
                    .text(&details.format)
                    .raw("</td><td class=\"level\">")
                    .text(&details.level)
                    .raw("</td><td>")
                    .number(details.versions as u64)
                    .raw("</td><td>version ")
                    .number(details.latest_version)
                    .raw(" <span class=\"muted\">(ID ")
                    .number(details.latest_id)
                    .raw(")</span></td><td>")
                    .number(details.referenced_by as u64)
                    .raw("</td>");
            }
            Err(error) => {
                html.raw("<td colspan=\"5\" class=\"error\">cannot read this subject: ")
                    .text(&error.to_string())
                    .raw("</td>");
            }
        }
        html.raw("</tr>");
    }
    html.raw("</tbody></table>");
    if total == 0 && query.q.is_empty() {
        first_schema(&mut html, &headers);
    } else if rows.is_empty() {
        html.raw("<p class=\"notice\">No subjects match.</p>");
    }
    Ok(page(StatusCode::OK, "Subjects", &Place::Subjects, html))
}

/// What an empty registry shows: how to register a first schema, with the
/// address the browser used to reach this page.
fn first_schema(html: &mut Html, headers: &HeaderMap) {
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("localhost:8081");
    html.raw("<section id=\"first-schema\" class=\"notice\"><h2>The registry is empty</h2>")
        .raw("<p>Register a first schema with any Confluent client, or with <code>curl</code>:</p>")
        .raw("<pre><code>curl -X POST -H 'Content-Type: application/vnd.schemaregistry.v1+json' \\\n")
        .raw("  --data '{\"schema\": \"{\\\"type\\\": \\\"string\\\"}\"}' \\\n  http://")
        .text(host)
        .raw("/subjects/my-topic-value/versions</code></pre>")
        .raw("<p>Under the operator, apply a <code>Schema</code> object instead; ")
        .raw("<code>schemaops apply</code> registers the schemas of a folder of manifests. ")
        .raw("The subject appears here as soon as its first version is registered.</p></section>");
}
