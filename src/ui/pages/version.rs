//! One version of a subject: its text as the author wrote it (laid out and
//! highlighted, with copy and download), its ID and GUID, its references in
//! both directions, its metadata and rules, and the lineage it belongs to.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::Problem;
use crate::compat::Format;
use crate::registry::contract::{Contract, Rule};
use crate::registry::{SubjectName, SubjectVersion, VersionSelector, VersionedSchema};
use crate::ui::UiState;
use crate::ui::html::{Html, segment};
use crate::ui::layout::{Page, Place, page};
use crate::ui::schema_text::{highlighted, laid_out};

/// The subject and version named in the path.
async fn read(state: &UiState, subject: String, version: String) -> Result<VersionedSchema, Problem> {
    let subject = SubjectName::new(subject)?;
    let selector = version.parse::<VersionSelector>()?;
    Ok(state.api.registry.version(&subject, selector, true).await?)
}

/// `GET /ui/subjects/{subject}/versions/{version}`.
pub async fn show(
    State(state): State<UiState>,
    Path((subject, version)): Path<(String, String)>,
) -> Result<Page, Problem> {
    let found = read(&state, subject, version).await?;
    let registry = state.api.registry.as_ref();
    let subject = &found.subject;
    let number = found.version.get();
    let contracts = registry.contract_config_in_scope(subject).await?;
    let mut referrers: Vec<SubjectVersion> = Vec::new();
    for id in registry
        .referenced_by(subject, VersionSelector::Exact(found.version))
        .await?
    {
        referrers.extend(registry.versions_of_id(id, false).await?);
    }
    let base = format!("/ui/subjects/{}", segment(subject.as_str()));

    let mut html = Html::new();
    html.raw("<dl class=\"facts\" id=\"facts\"><dt>ID</dt><dd id=\"schema-id\">")
        .number(found.id.get())
        .raw("</dd><dt>GUID</dt><dd><code id=\"schema-guid\">")
        .text(&found.guid().to_string())
        .raw("</code></dd><dt>Type</dt><dd>")
        .text(found.format.as_str())
        .raw("</dd><dt>Status</dt><dd>")
        .raw(if found.deleted { "soft-deleted" } else { "live" })
        .raw("</dd><dt>Lineage</dt><dd id=\"lineage\">");
    match contracts.compatibility_group.as_deref() {
        Some(group) => {
            html.raw("compatibility group <code>").text(group).raw("</code> = ");
            match found.contract.property(group) {
                Some(value) => html.raw("<code>").text(value).raw("</code>"),
                None => html.raw("<span class=\"muted\">unset</span>"),
            };
            html.raw(" <span class=\"muted\">(checked only against the versions with the same value)</span>");
        }
        None => {
            html.raw("the subject's only one <span class=\"muted\">(no compatibility group)</span>");
        }
    }
    html.raw("</dd>");
    contract_facts(&mut html, &found.contract);
    html.raw("</dl>");

    let text = laid_out(found.format, &found.text);
    html.raw("<h2>Text</h2><p class=\"actions\"><button type=\"button\" data-copies=\"schema-text\">Copy</button> ");
    html.raw("<a download href=\"")
        .text(&format!("{base}/versions/{number}/text"))
        .raw("\">Download</a> <span class=\"muted\">as its author wrote it, laid out</span></p>")
        .raw("<pre class=\"schema\" id=\"schema-text\"><code>")
        .append(highlighted(found.format, &text))
        .raw("</code></pre>");

    html.raw("<h2>References</h2><div class=\"graph\" id=\"references\"><ul aria-label=\"Referenced by\">");
    if referrers.is_empty() {
        html.raw("<li class=\"muted\">nothing refers to it</li>");
    }
    for referrer in &referrers {
        html.raw("<li>");
        html.link(
            &format!(
                "/ui/subjects/{}/versions/{}",
                segment(referrer.subject.as_str()),
                referrer.version
            ),
            &format!("{} v{}", referrer.subject, referrer.version),
        );
        html.raw("</li>");
    }
    html.raw("</ul><span class=\"arrow\" aria-hidden=\"true\">→</span><div class=\"self\">")
        .text(subject.as_str())
        .raw(" v")
        .number(number)
        .raw("</div><span class=\"arrow\" aria-hidden=\"true\">→</span><ul aria-label=\"Refers to\">");
    if found.references.is_empty() {
        html.raw("<li class=\"muted\">refers to nothing</li>");
    }
    for reference in &found.references {
        html.raw("<li>");
        html.link(
            &format!(
                "/ui/subjects/{}/versions/{}",
                segment(reference.subject.as_str()),
                reference.version
            ),
            &format!("{} v{}", reference.subject, reference.version),
        );
        html.raw(" <span class=\"muted\">as <code>")
            .text(&reference.name)
            .raw("</code></span></li>");
    }
    html.raw("</ul></div>");
    contract(&mut html, &found.contract);
    Ok(page(
        StatusCode::OK,
        &format!("{subject} version {number}"),
        &Place::Subject(subject.as_str()),
        html,
    ))
}

/// `GET /ui/subjects/{subject}/versions/{version}/text`: the author's text,
/// laid out, as a file to save.
pub async fn download(
    State(state): State<UiState>,
    Path((subject, version)): Path<(String, String)>,
) -> Result<Response, Problem> {
    let found = read(&state, subject, version).await?;
    let extension = match found.format {
        Format::Avro => "avsc",
        Format::Json => "json",
        Format::Protobuf => "proto",
    };
    let stem: String = found
        .subject
        .as_str()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let disposition = format!("attachment; filename=\"{stem}-v{}.{extension}\"", found.version);
    let mut response = laid_out(found.format, &found.text).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    crate::ui::layout::secure(headers);
    Ok(response)
}

/// Whether a tag marks personal data (`PII`, in any case): it stands out.
fn is_pii(tag: &str) -> bool {
    tag.eq_ignore_ascii_case("PII")
}

/// A tag, PII marked as such.
fn tag(html: &mut Html, tag: &str) {
    html.raw(if is_pii(tag) {
        "<span class=\"tag pii\">"
    } else {
        "<span class=\"tag\">"
    })
    .text(tag)
    .raw("</span> ");
}

/// The metadata property whose value the facts show as the owner.
const OWNER: &str = "owner";

/// The owner among the facts, and a warning naming the elements tagged PII.
fn contract_facts(html: &mut Html, contract: &Contract) {
    let Some(metadata) = &contract.metadata else {
        return;
    };
    if let Some(owner) = metadata.properties.get(OWNER) {
        html.raw("<dt>Owner</dt><dd id=\"owner\">");
        if metadata.sensitive.contains(OWNER) {
            html.raw("<span class=\"muted\">sensitive, not shown</span>");
        } else {
            html.text(owner);
        }
        html.raw("</dd>");
    }
    let personal: Vec<&String> = metadata
        .tags
        .iter()
        .filter(|(_, tags)| tags.iter().any(|tag| is_pii(tag)))
        .map(|(path, _)| path)
        .collect();
    if !personal.is_empty() {
        html.raw("<dt>Personal data</dt><dd id=\"pii\"><span class=\"tag pii\">PII</span> ");
        for (index, path) in personal.iter().enumerate() {
            if index > 0 {
                html.raw(", ");
            }
            html.raw("<code>").text(path).raw("</code>");
        }
        html.raw("</dd>");
    }
}

/// The data contract: tags (PII markers), properties, and rules.
fn contract(html: &mut Html, contract: &Contract) {
    html.raw("<h2>Data contract</h2><div id=\"contract\">");
    if contract.is_empty() {
        html.raw("<p class=\"muted\">No metadata and no rules.</p></div>");
        return;
    }
    if let Some(metadata) = &contract.metadata {
        if !metadata.tags.is_empty() {
            html.raw("<h3>Tags</h3><table id=\"tags\"><thead><tr><th scope=\"col\">Element</th><th scope=\"col\">Tags</th></tr></thead><tbody>");
            for (path, tags) in &metadata.tags {
                html.raw("<tr><td><code>").text(path).raw("</code></td><td>");
                for name in tags {
                    tag(html, name);
                }
                html.raw("</td></tr>");
            }
            html.raw("</tbody></table>");
        }
        if !metadata.properties.is_empty() {
            html.raw("<h3>Properties</h3><table id=\"properties\"><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Value</th></tr></thead><tbody>");
            for (name, value) in &metadata.properties {
                html.raw("<tr><td><code>").text(name).raw("</code></td><td>");
                if metadata.sensitive.contains(name) {
                    html.raw("<span class=\"muted\">sensitive, not shown</span>");
                } else {
                    html.text(value);
                }
                html.raw("</td></tr>");
            }
            html.raw("</tbody></table>");
        }
    }
    if let Some(rules) = &contract.rule_set {
        let phases = [
            ("Domain", &rules.domain_rules),
            ("Migration", &rules.migration_rules),
            ("Encoding", &rules.encoding_rules),
        ];
        if phases.iter().any(|(_, list)| !list.is_empty()) {
            html.raw(
                "<h3>Rules</h3><table id=\"rules\"><thead><tr><th scope=\"col\">Rule</th><th scope=\"col\">Phase</th>\
                 <th scope=\"col\">Kind</th><th scope=\"col\">Mode</th><th scope=\"col\">Type</th>\
                 <th scope=\"col\">Applies to</th><th scope=\"col\">Expression</th><th scope=\"col\">Params</th>\
                 <th scope=\"col\">On success</th><th scope=\"col\">On failure</th></tr></thead><tbody>",
            );
            for (phase, list) in phases {
                for rule in list {
                    rule_row(html, phase, rule);
                }
            }
            html.raw("</tbody></table>");
        }
    }
    html.raw("</div>");
}

/// A serialized enum's name (`CONDITION`, `WRITE`).
fn wire_name(value: impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A cell holding `value` as code, or a muted dash.
fn code_cell(html: &mut Html, value: Option<&str>) {
    html.raw("<td>");
    match value {
        Some(value) => html.raw("<code>").text(value).raw("</code>"),
        None => html.raw("<span class=\"muted\">—</span>"),
    };
    html.raw("</td>");
}

fn rule_row(html: &mut Html, phase: &str, rule: &Rule) {
    let name = rule.name.as_deref().unwrap_or("(unnamed)");
    html.raw("<tr data-rule=\"").text(name).raw("\"");
    if rule.disabled {
        html.raw(" class=\"deleted\"");
    }
    html.raw("><td><strong>").text(name).raw("</strong>");
    if rule.disabled {
        html.raw(" <span class=\"muted\">(disabled)</span>");
    }
    if let Some(doc) = &rule.doc {
        html.raw("<br><span class=\"muted\">").text(doc).raw("</span>");
    }
    html.raw("</td><td>")
        .text(phase)
        .raw("</td><td>")
        .text(&wire_name(rule.kind))
        .raw("</td><td>")
        .text(&wire_name(rule.mode))
        .raw("</td>");
    code_cell(html, rule.rule_type.as_deref());
    html.raw("<td>");
    if rule.tags.is_empty() {
        html.raw("<span class=\"muted\">the whole record</span>");
    }
    for name in &rule.tags {
        tag(html, name);
    }
    html.raw("</td>");
    code_cell(html, rule.expr.as_deref());
    html.raw("<td>");
    if rule.params.is_empty() {
        html.raw("<span class=\"muted\">—</span>");
    }
    for (key, value) in &rule.params {
        html.raw("<code>")
            .text(key)
            .raw("</code> = <code>")
            .text(value)
            .raw("</code><br>");
    }
    html.raw("</td>");
    code_cell(html, rule.on_success.as_deref());
    code_cell(html, rule.on_failure.as_deref());
    html.raw("</tr>");
}
