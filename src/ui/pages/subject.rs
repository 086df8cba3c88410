//! One subject: its facts, the timeline of its versions (soft-deleted
//! ones greyed, each linked to its own page), the latest version's text,
//! and its references in both directions as a small graph.

use std::collections::BTreeSet;

use axum::extract::State;
use axum::http::StatusCode;

use super::{Problem, SubjectPath};
use crate::registry::api::history::lineage;
use crate::registry::{SubjectVersion, VersionFilter, VersionSelector, VersionedSchema};
use crate::ui::UiState;
use crate::ui::html::{Html, segment};
use crate::ui::layout::{Page, Place, page};
use crate::ui::owners::{Owner, OwnerState};
use crate::ui::schema_text::{highlighted, laid_out};

/// The most versions the timeline shows: the newest.
const MAX_VERSIONS: usize = 500;

/// `GET /ui/subjects/{subject}`.
pub async fn show(State(state): State<UiState>, SubjectPath(subject): SubjectPath) -> Result<Page, Problem> {
    let registry = state.api.registry.as_ref();
    let owners = state.owners.as_ref().map(|owners| owners.of_subject(subject.as_str()));
    let mut numbers = registry.versions(&subject, VersionFilter::All).await?;
    let hidden = numbers.len().saturating_sub(MAX_VERSIONS);
    numbers.drain(..hidden);
    let mut versions: Vec<VersionedSchema> = Vec::with_capacity(numbers.len());
    for number in &numbers {
        versions.push(
            registry
                .version(&subject, VersionSelector::Exact(*number), true)
                .await?,
        );
    }
    let level = registry.compatibility(Some(&subject), true).await?;
    let group = registry.contract_config_in_scope(&subject).await?.compatibility_group;
    let mut referrers: BTreeSet<SubjectVersion> = BTreeSet::new();
    for version in versions.iter().filter(|version| !version.deleted) {
        for id in registry
            .referenced_by(&subject, VersionSelector::Exact(version.version))
            .await?
        {
            referrers.extend(registry.versions_of_id(id, false).await?);
        }
    }
    let latest = versions.iter().rev().find(|version| !version.deleted);
    let base = format!("/ui/subjects/{}", segment(subject.as_str()));

    let mut html = Html::new();
    html.raw("<p>Level in force: <span class=\"level\" id=\"level\">")
        .text(level.as_str())
        .raw("</span>");
    if let Some(latest) = latest {
        html.raw(" · type ").text(latest.format.as_str());
    }
    html.raw(" <span class=\"muted\">(the registry keeps the level in force now, not the level each version was registered under)</span></p>");
    html.raw("<p class=\"actions\">");
    if versions.len() > 1 {
        html.link(&format!("{base}/diff"), "Diff of two versions");
    }
    html.link(&format!("{base}/matrix"), "Compatibility matrix");
    html.link(&format!("{base}/sandbox"), "Try a draft");
    html.raw("</p><h2>Versions</h2>");
    if hidden > 0 {
        html.raw("<p class=\"muted\">The ")
            .number(hidden as u64)
            .raw(" oldest versions are not shown.</p>");
    }
    html.raw(
        "<table id=\"versions\"><thead><tr><th scope=\"col\">Version</th><th scope=\"col\">ID</th>\
         <th scope=\"col\">Type</th><th scope=\"col\">Status</th><th scope=\"col\">References</th>\
         <th scope=\"col\">Compare</th>",
    );
    if let Some(group) = &group {
        html.raw("<th scope=\"col\">Lineage (<code>")
            .text(group)
            .raw("</code>)</th>");
    }
    if owners.is_some() {
        html.raw("<th scope=\"col\">Schema object</th>");
    }
    html.raw("</tr></thead><tbody>");
    for version in versions.iter().rev() {
        let number = version.version.get();
        html.raw(if version.deleted {
            "<tr class=\"deleted\""
        } else {
            "<tr"
        })
        .raw(" data-version=\"")
        .number(number)
        .raw("\"><td>");
        html.link(&format!("{base}/versions/{number}"), &format!("version {number}"))
            .raw("</td><td>")
            .number(version.id.get())
            .raw("</td><td>")
            .text(version.format.as_str())
            .raw("</td><td class=\"keep\">")
            .raw(if version.deleted { "soft-deleted" } else { "live" })
            .raw("</td><td>")
            .number(version.references.len() as u64)
            .raw("</td><td class=\"keep\">");
        let earlier = versions
            .iter()
            .rev()
            .map(|other| other.version.get())
            .find(|other| *other < number);
        if let Some(earlier) = earlier {
            html.link(
                &format!("{base}/diff?from={earlier}&to={number}"),
                &format!("diff {earlier} → {number}"),
            )
            .raw(" ");
        }
        html.link(&format!("{base}/matrix?version={number}"), "matrix")
            .raw("</td>");
        if group.is_some() {
            html.raw("<td class=\"keep\">");
            super::lineage(&mut html, lineage(group.as_deref(), &version.contract));
            html.raw("</td>");
        }
        html.raw("</tr>");
    }
    html.raw("</tbody></table>");

    if let Some(latest) = latest {
        html.raw("<h2>Latest version's text</h2><p class=\"actions\">");
        html.link(
            &format!("{base}/versions/{}", latest.version),
            &format!("Version {} in full", latest.version),
        );
        html.raw("</p><pre class=\"schema\" id=\"latest-text\"><code>")
            .append(highlighted(latest.format, &laid_out(latest.format, &latest.text)))
            .raw("</code></pre>");
    }
    if let Some(owners) = &owners {
        managed_by(&mut html, owners);
    }
    html.raw("<h2>References</h2><div class=\"graph\" id=\"references\"><ul aria-label=\"Referenced by\">");
    if referrers.is_empty() {
        html.raw("<li class=\"muted\">nothing refers to it</li>");
    }
    for referrer in &referrers {
        html.raw("<li>");
        html.link(
            &format!("/ui/subjects/{}", segment(referrer.subject.as_str())),
            &format!("{} v{}", referrer.subject, referrer.version),
        );
        html.raw("</li>");
    }
    html.raw("</ul><span class=\"arrow\" aria-hidden=\"true\">→</span><div class=\"self\">")
        .text(subject.as_str())
        .raw("</div><span class=\"arrow\" aria-hidden=\"true\">→</span><ul aria-label=\"Refers to (latest version)\">");
    let references = latest.map(|latest| latest.references.as_slice()).unwrap_or_default();
    if references.is_empty() {
        html.raw("<li class=\"muted\">refers to nothing</li>");
    }
    for reference in references {
        html.raw("<li>");
        html.link(
            &format!("/ui/subjects/{}", segment(reference.subject.as_str())),
            &format!("{} v{}", reference.subject, reference.version),
        );
        html.raw(" <span class=\"muted\">as <code>")
            .text(&reference.name)
            .raw("</code></span></li>");
    }
    html.raw("</ul></div>");
    Ok(page(
        StatusCode::OK,
        subject.as_str(),
        &Place::Subject(subject.as_str()),
        html,
    ))
}

/// The Schema objects that manage the subject, with their state and the
/// incompatibilities of their last check.
fn managed_by(html: &mut Html, owners: &[Owner]) {
    html.raw("<h2>Schema objects</h2>");
    if owners.is_empty() {
        html.raw("<p class=\"muted\">No Schema object names this subject.</p>");
        return;
    }
    html.raw(
        "<table id=\"owners\"><thead><tr><th scope=\"col\">Object</th><th scope=\"col\">Holds version</th>\
         <th scope=\"col\">State</th></tr></thead><tbody>",
    );
    for owner in owners {
        html.raw("<tr><td>").text(&owner.object).raw("</td><td>");
        match owner.version {
            Some(version) => html.number(version),
            None => html.raw("<span class=\"muted\">none</span>"),
        };
        html.raw("</td><td>");
        match &owner.state {
            OwnerState::Ready => html.raw("<span class=\"verdict ok\">Ready</span>"),
            OwnerState::Pending => html.raw("<span class=\"muted\">not reconciled yet</span>"),
            OwnerState::Stalled { reason, message } => html
                .raw("<span class=\"verdict breaks\">Stalled</span> ")
                .text(reason)
                .raw(": ")
                .text(message),
        };
        if let Some(warning) = &owner.policy_warning {
            html.raw("<p class=\"policy-warning\"><span class=\"verdict breaks\">SchemaPolicy warning</span> ")
                .text(warning)
                .raw("</p>");
        }
        if !owner.incompatibilities.is_empty() {
            html.raw("<ul class=\"why\">");
            for incompatibility in &owner.incompatibilities {
                html.raw("<li>").text(incompatibility).raw("</li>");
            }
            if owner.total > owner.incompatibilities.len() {
                html.raw("<li>and ")
                    .number((owner.total - owner.incompatibilities.len()) as u64)
                    .raw(" more</li>");
            }
            html.raw("</ul>");
        }
        html.raw("</td></tr>");
    }
    html.raw("</tbody></table>");
}
