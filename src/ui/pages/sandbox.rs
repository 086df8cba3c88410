//! The draft sandbox: paste a schema, see what the subject's level and
//! every other mode would say, with every incompatibility. Read-only:
//! nothing is registered. The draft's references start as the latest
//! version's (so that version's own text checks as it stands) and can be
//! edited; its metadata, when given, places it in a lineage as a
//! registration's would.

use axum::Form;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use serde::Deserialize;

use super::{Problem, SubjectPath};
use crate::compat::Format;
use crate::registry::api::ApiState;
use crate::registry::api::history::matrix_of_draft;
use crate::registry::contract::{Contract, Metadata};
use crate::registry::{Error, NewSchema, SchemaReference, SubjectName, VersionSelector};
use crate::ui::html::{Html, segment};
use crate::ui::layout::{Page, Place, page};

/// The form: the draft's text and type, its references and metadata as JSON.
#[derive(Debug, Deserialize)]
pub struct Draft {
    schema: String,
    #[serde(default)]
    schema_type: String,
    /// A JSON array of `{name, subject, version}`; empty: none.
    #[serde(default)]
    references: String,
    /// A JSON object of `tags`, `properties`, `sensitive`; empty: the latest version's.
    #[serde(default)]
    metadata: String,
}

/// What the form shows in its fields.
struct Fields<'a> {
    text: &'a str,
    format: Format,
    references: &'a str,
    metadata: &'a str,
}

impl Draft {
    /// The schema the draft stands for; `Err` says which field does not read.
    fn new_schema(&self, format: Format) -> Result<NewSchema, String> {
        let references = if self.references.trim().is_empty() {
            Vec::new()
        } else {
            serde_json::from_str::<Vec<SchemaReference>>(&self.references).map_err(|error| {
                format!("the references are not a JSON array of {{name, subject, version}}: {error}")
            })?
        };
        let metadata = if self.metadata.trim().is_empty() {
            None
        } else {
            let metadata = serde_json::from_str::<Metadata>(&self.metadata).map_err(|error| {
                format!("the metadata is not a JSON object of tags, properties, sensitive: {error}")
            })?;
            Some(Box::new(metadata))
        };
        Ok(NewSchema {
            format,
            text: self.schema.clone(),
            references,
            contract: Contract {
                metadata,
                rule_set: None,
            },
        })
    }
}

/// `GET /ui/subjects/{subject}/sandbox`: the form, holding the latest
/// version's text and references.
pub async fn show(State(state): State<ApiState>, SubjectPath(subject): SubjectPath) -> Result<Page, Problem> {
    let (text, format, references) = match state.registry.version(&subject, VersionSelector::Latest, false).await {
        Ok(latest) => (latest.text, latest.format, latest.references),
        Err(Error::SubjectNotFound { .. } | Error::VersionNotFound { .. }) => (String::new(), Format::Avro, Vec::new()),
        Err(error) => return Err(error.into()),
    };
    let references = if references.is_empty() {
        String::new()
    } else {
        serde_json::to_string_pretty(&references).unwrap_or_default()
    };
    let mut html = Html::new();
    let fields = Fields {
        text: &text,
        format,
        references: &references,
        metadata: "",
    };
    form(&mut html, &subject, &fields);
    Ok(page(
        StatusCode::OK,
        &title(&subject),
        &Place::Subject(subject.as_str()),
        html,
    ))
}

/// `POST /ui/subjects/{subject}/sandbox`: the draft's verdicts, under the form.
pub async fn try_draft(
    State(state): State<ApiState>,
    SubjectPath(subject): SubjectPath,
    posted: Result<Form<Draft>, FormRejection>,
) -> Result<Page, Problem> {
    let Form(draft) = posted.map_err(|rejection| Problem::bad_request(rejection.body_text()))?;
    let mut html = Html::new();
    let format = if draft.schema_type.is_empty() {
        Ok(Format::Avro)
    } else {
        draft.schema_type.parse::<Format>()
    };
    let format = match format {
        Ok(format) => format,
        Err(error) => return Err(Problem::bad_request(error.to_string())),
    };
    let fields = Fields {
        text: &draft.schema,
        format,
        references: &draft.references,
        metadata: &draft.metadata,
    };
    form(&mut html, &subject, &fields);
    let new_schema = match draft.new_schema(format) {
        Ok(new_schema) => new_schema,
        Err(reason) => {
            cannot_check(&mut html, &reason);
            return Ok(page(
                StatusCode::UNPROCESSABLE_ENTITY,
                &title(&subject),
                &Place::Subject(subject.as_str()),
                html,
            ));
        }
    };
    let status = match matrix_of_draft(state.registry.as_ref(), &subject, &new_schema).await {
        Ok(matrix) => {
            let level_breaks = matrix
                .modes
                .iter()
                .any(|mode| mode.mode == matrix.level && !mode.incompatibilities.is_empty());
            html.raw("<p id=\"outcome\" class=\"")
                .raw(if level_breaks { "error" } else { "notice" })
                .raw("\" role=\"status\">Under the level in force, ")
                .text(matrix.level.as_str())
                .raw(if level_breaks {
                    ", the draft is incompatible"
                } else {
                    ", the draft would be accepted"
                })
                .raw(". Nothing was registered.</p>");
            super::matrix::render(&mut html, &matrix, "the draft");
            StatusCode::OK
        }
        Err(error) if error.http_status() < 500 => {
            cannot_check(&mut html, &error.to_string());
            StatusCode::UNPROCESSABLE_ENTITY
        }
        Err(error) => return Err(error.into()),
    };
    Ok(page(status, &title(&subject), &Place::Subject(subject.as_str()), html))
}

fn cannot_check(html: &mut Html, reason: &str) {
    html.raw("<p id=\"outcome\" class=\"error\" role=\"alert\">The draft cannot be checked: ")
        .text(reason)
        .raw("</p>");
}

fn title(subject: &SubjectName) -> String {
    format!("{subject}: try a draft")
}

fn form(html: &mut Html, subject: &SubjectName, fields: &Fields<'_>) {
    html.raw("<form method=\"post\" action=\"/ui/subjects/")
        .text(&segment(subject.as_str()))
        .raw("/sandbox\"><p class=\"muted\">The draft is checked against every version under every mode; it is never registered.</p>")
        .raw("<label for=\"schema-type\">Schema type</label><select id=\"schema-type\" name=\"schema_type\">");
    for option in [Format::Avro, Format::Json, Format::Protobuf] {
        html.raw("<option value=\"").text(option.as_str()).raw("\"");
        if option == fields.format {
            html.raw(" selected");
        }
        html.raw(">").text(option.as_str()).raw("</option>");
    }
    html.raw("</select><label for=\"draft\">Draft schema</label><textarea id=\"draft\" name=\"schema\" spellcheck=\"false\">")
        .text(fields.text)
        .raw("</textarea><label for=\"references\">References</label>")
        .raw("<p class=\"muted\" id=\"references-help\">A JSON array of <code>{\"name\", \"subject\", \"version\"}</code>; ")
        .raw("it starts as the latest version's.</p>")
        .raw("<textarea class=\"short\" id=\"references\" name=\"references\" spellcheck=\"false\" aria-describedby=\"references-help\">")
        .text(fields.references)
        .raw("</textarea><label for=\"metadata\">Metadata</label>")
        .raw("<p class=\"muted\" id=\"metadata-help\">A JSON object of <code>tags</code>, <code>properties</code>, ")
        .raw("<code>sensitive</code>, e.g. <code>{\"properties\": {\"application.major_version\": \"3\"}}</code>; ")
        .raw("with a compatibility group, its property picks the lineage the draft is checked in. ")
        .raw("Empty: the latest version's, as a registration inherits it.</p>")
        .raw("<textarea class=\"short\" id=\"metadata\" name=\"metadata\" spellcheck=\"false\" aria-describedby=\"metadata-help\">")
        .text(fields.metadata)
        .raw("</textarea><p><button type=\"submit\" id=\"check-draft\">Check the draft</button></p></form>");
}
