//! The semantic diff of two versions: the changes grouped by what they
//! break, each with its verdict for BACKWARD and FORWARD and the check's
//! explanation, beside the two texts with the changed lines marked.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::{Problem, SubjectPath, verdict};
use crate::compat::diff::{Break, Change};
use crate::compat::{Direction, Format};
use crate::registry::api::ApiState;
use crate::registry::api::history::{VersionDiff, diff_versions, lineage};
use crate::registry::{SubjectName, Version, VersionFilter, VersionSelector};
use crate::ui::html::{Html, segment};
use crate::ui::layout::{Page, Place, page};
use crate::ui::schema_text::laid_out;
use crate::ui::textdiff::{Mark, mark_lines};

/// `?from=&to=`: version numbers or `latest`; by default the latest and
/// the version before it.
#[derive(Debug, Deserialize)]
pub struct DiffQuery {
    from: Option<String>,
    to: Option<String>,
}

fn selector(text: &str) -> Result<VersionSelector, Problem> {
    Ok(text.parse::<VersionSelector>()?)
}

/// The page for a version with none before it: a subject's first version
/// is compared with nothing, and says so.
fn nothing_to_compare(subject: &SubjectName, version: u32) -> Page {
    let mut html = Html::new();
    html.raw("<p class=\"notice\" id=\"nothing-to-compare\">Version ")
        .number(version)
        .raw(" is the first version of this subject: there is no earlier version to compare it with. ")
        .raw("A diff appears here once a second version is registered; ")
        .link(
            &format!("/ui/subjects/{}/sandbox", segment(subject.as_str())),
            "try a draft",
        )
        .raw(" to see what a change would do.</p>");
    page(
        StatusCode::OK,
        &format!("{subject}: nothing to compare"),
        &Place::Subject(subject.as_str()),
        html,
    )
}

/// `GET /ui/subjects/{subject}/diff`.
pub async fn show(
    State(state): State<ApiState>,
    SubjectPath(subject): SubjectPath,
    Query(query): Query<DiffQuery>,
) -> Result<Page, Problem> {
    let registry = state.registry.as_ref();
    let numbers = registry.versions(&subject, VersionFilter::All).await?;
    let to = match &query.to {
        Some(text) => selector(text)?,
        None => VersionSelector::Latest,
    };
    let from = match &query.from {
        Some(text) => selector(text)?,
        None => {
            let to_number = match to {
                VersionSelector::Exact(version) => version,
                VersionSelector::Latest => {
                    registry
                        .version(&subject, VersionSelector::Latest, false)
                        .await?
                        .version
                }
            };
            match numbers.iter().rev().find(|number| **number < to_number) {
                Some(earlier) => VersionSelector::Exact(*earlier),
                None => return Ok(nothing_to_compare(&subject, to_number.get())),
            }
        }
    };
    let found = diff_versions(registry, &subject, from, to).await?;
    let (from_number, to_number) = (found.from.version.get(), found.to.version.get());
    let title = format!("{subject}: version {from_number} → {to_number}");

    let mut html = Html::new();
    picker(&mut html, &subject, &numbers, from_number, to_number);
    let breaks = |direction| found.changes.iter().any(|change| change.breaks(direction));
    let (backward, forward) = (breaks(Direction::Backward), breaks(Direction::Forward));
    if found.same_lineage() {
        summary(&mut html, from_number, to_number, backward, forward);
        if let Some(group) = &found.compatibility_group {
            html.raw("<p class=\"muted\" id=\"lineage\">Both are in lineage ");
            super::lineage(&mut html, lineage(Some(group), &found.to.contract));
            html.raw(" of compatibility group <code>")
                .text(group)
                .raw("</code>.</p>");
        }
    } else {
        other_lineages(&mut html, &found);
    }
    changes(&mut html, &found.changes);
    texts(
        &mut html,
        found.from.format,
        &found.from.text,
        &found.to.text,
        from_number,
        to_number,
    );
    Ok(page(StatusCode::OK, &title, &Place::Subject(subject.as_str()), html))
}

/// The verdict of each mode on the later version against the earlier one.
fn summary(html: &mut Html, from_number: u32, to_number: u32, backward: bool, forward: bool) {
    html.raw("<p id=\"summary\">Version ")
        .number(to_number)
        .raw(" against version ")
        .number(from_number)
        .raw(": BACKWARD ");
    verdict(html, backward);
    html.raw(" · FORWARD ");
    verdict(html, forward);
    html.raw(" · FULL ");
    verdict(html, backward || forward);
    html.raw("</p><p class=\"muted\">BACKWARD: consumers on version ")
        .number(to_number)
        .raw(" read data written with version ")
        .number(from_number)
        .raw(". FORWARD: consumers still on version ")
        .number(from_number)
        .raw(" read data written with version ")
        .number(to_number)
        .raw(".</p>");
}

/// In place of verdicts, for two versions of different lineages: the
/// registry never checks one against the other.
fn other_lineages(html: &mut Html, found: &VersionDiff) {
    let group = found.compatibility_group.as_deref().unwrap_or_default();
    html.raw("<p id=\"summary\" class=\"notice\"><span class=\"verdict other\">other lineage</span> ");
    for (stored, label, joint) in [(&found.to, "Version ", " and "), (&found.from, "version ", "")] {
        html.raw(label).number(stored.version.get()).raw(" is in lineage ");
        super::lineage(html, lineage(Some(group), &stored.contract));
        html.raw(joint);
    }
    html.raw(" of compatibility group <code>")
        .text(group)
        .raw("</code>: the registry never checks one against the other. ")
        .raw("The changes below say what would break if one were read with the other.</p>");
}

/// The most versions the picker offers as a list; a subject with more gets
/// number fields instead, so the page stays small whatever the history.
const MAX_PICKER_OPTIONS: usize = 500;

/// The form that picks the two versions.
fn picker(html: &mut Html, subject: &SubjectName, numbers: &[Version], from: u32, to: u32) {
    if numbers.len() > MAX_PICKER_OPTIONS {
        return number_picker(html, subject, numbers, from, to);
    }
    html.raw("<form class=\"inline\" method=\"get\" action=\"/ui/subjects/")
        .text(&segment(subject.as_str()))
        .raw("/diff\">");
    for (name, label, chosen) in [("from", "Earlier version", from), ("to", "Later version", to)] {
        html.raw("<div><label for=\"pick-")
            .text(name)
            .raw("\">")
            .text(label)
            .raw("</label><select id=\"pick-")
            .text(name)
            .raw("\" name=\"")
            .text(name)
            .raw("\">");
        for number in numbers {
            html.raw("<option value=\"").number(number.get()).raw("\"");
            if number.get() == chosen {
                html.raw(" selected");
            }
            html.raw(">").number(number.get()).raw("</option>");
        }
        html.raw("</select></div>");
    }
    html.raw("<button type=\"submit\">Compare</button></form>");
}

/// The picker as two number fields, for a subject with too many versions to list.
fn number_picker(html: &mut Html, subject: &SubjectName, numbers: &[Version], from: u32, to: u32) {
    let (first, last) = (
        numbers.first().map_or(1, |number| number.get()),
        numbers.last().map_or(1, |number| number.get()),
    );
    html.raw("<form class=\"inline\" method=\"get\" action=\"/ui/subjects/")
        .text(&segment(subject.as_str()))
        .raw("/diff\">");
    for (name, label, chosen) in [("from", "Earlier version", from), ("to", "Later version", to)] {
        html.raw("<div><label for=\"pick-")
            .text(name)
            .raw("\">")
            .text(label)
            .raw("</label><input type=\"number\" id=\"pick-")
            .text(name)
            .raw("\" name=\"")
            .text(name)
            .raw("\" min=\"")
            .number(first)
            .raw("\" max=\"")
            .number(last)
            .raw("\" value=\"")
            .number(chosen)
            .raw("\"></div>");
    }
    html.raw("<button type=\"submit\">Compare</button></form>");
}

/// A group of changes: its element ID, its heading, and which changes belong.
type Group = (&'static str, &'static str, fn(&Change) -> bool);

/// The changes, grouped: breaking both directions, one, or neither.
fn changes(html: &mut Html, changes: &[Change]) {
    html.raw("<h2>Changes</h2>");
    if changes.is_empty() {
        html.raw("<p class=\"notice\">No changes: the two versions are the same schema.</p>");
        return;
    }
    let groups: [Group; 4] = [
        ("breaks-both", "Breaking BACKWARD and FORWARD", |c| {
            c.breaks(Direction::Backward) && c.breaks(Direction::Forward)
        }),
        ("breaks-backward", "Breaking BACKWARD only", |c| {
            c.breaks(Direction::Backward) && !c.breaks(Direction::Forward)
        }),
        ("breaks-forward", "Breaking FORWARD only", |c| {
            !c.breaks(Direction::Backward) && c.breaks(Direction::Forward)
        }),
        ("compatible", "Compatible both ways", |c| {
            !c.breaks(Direction::Backward) && !c.breaks(Direction::Forward)
        }),
    ];
    for (id, heading, belongs) in groups {
        let members: Vec<&Change> = changes.iter().filter(|change| belongs(change)).collect();
        if members.is_empty() {
            continue;
        }
        html.raw("<h3>")
            .text(heading)
            .raw(" (")
            .number(members.len() as u64)
            .raw(")</h3>");
        html.raw("<table class=\"changes\" id=\"")
            .text(id)
            .raw(
                "\"><thead><tr><th scope=\"col\">Change</th><th scope=\"col\">Element</th><th scope=\"col\">Path</th>\
                 <th scope=\"col\">BACKWARD</th><th scope=\"col\">FORWARD</th><th scope=\"col\">Why</th></tr></thead><tbody>",
            );
        for change in members {
            let backward = change.breaks(Direction::Backward);
            let forward = change.breaks(Direction::Forward);
            html.raw("<tr class=\"change\" data-kind=\"")
                .text(&change.kind.to_string())
                .raw("\" data-element=\"")
                .text(&change.element)
                .raw("\" data-backward=\"")
                .raw(if backward { "breaks" } else { "compatible" })
                .raw("\" data-forward=\"")
                .raw(if forward { "breaks" } else { "compatible" })
                .raw("\"><td><code>")
                .text(&change.kind.to_string())
                .raw("</code></td><td>")
                .text(&change.element)
                .raw("</td><td><code>")
                .text(&change.path.to_string())
                .raw("</code></td><td>");
            verdict(html, backward);
            html.raw("</td><td>");
            verdict(html, forward);
            html.raw("</td><td>");
            if !change.detail.is_empty() {
                html.text(&change.detail);
            }
            reasons(html, "BACKWARD", &change.backward);
            reasons(html, "FORWARD", &change.forward);
            html.raw("</td></tr>");
        }
        html.raw("</tbody></table>");
    }
}

fn reasons(html: &mut Html, direction: &str, reasons: &[Break]) {
    if reasons.is_empty() {
        return;
    }
    html.raw("<ul class=\"why\">");
    for reason in reasons {
        html.raw("<li><strong>")
            .text(direction)
            .raw("</strong> <code>")
            .text(&reason.kind.to_string())
            .raw("</code>: ")
            .text(&reason.message)
            .raw("</li>");
    }
    html.raw("</ul>");
}

/// The two texts side by side, each laid out in its author's key order
/// (as the version page shows it), changed lines marked.
fn texts(html: &mut Html, format: Format, before: &str, after: &str, from: u32, to: u32) {
    let (before, after) = (laid_out(format, before), laid_out(format, after));
    html.raw("<h2>Texts</h2>");
    let Some((left, right)) = mark_lines(&before, &after) else {
        html.raw("<p class=\"muted\">The texts are too long to mark line by line.</p>");
        return;
    };
    html.raw("<div class=\"texts\">");
    for (label, number, lines) in [("Version ", from, left), ("Version ", to, right)] {
        html.raw("<section><h3>")
            .text(label)
            .number(number)
            .raw("</h3><pre tabindex=\"0\">");
        for (mark, line) in lines {
            let (class, sign) = match mark {
                Mark::Same => ("same", " "),
                Mark::Removed => ("removed", "-"),
                Mark::Added => ("added", "+"),
            };
            html.raw("<span class=\"")
                .raw(class)
                .raw("\" data-mark=\"")
                .raw(sign)
                .raw("\">")
                .text(line)
                .raw("</span>");
        }
        html.raw("</pre></section>");
    }
    html.raw("</div>");
}
