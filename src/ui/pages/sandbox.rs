//! The draft sandbox: paste a schema, see what the subject's level and
//! every other mode would say, with every incompatibility. Read-only:
//! nothing is registered.

use axum::Form;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use serde::Deserialize;

use super::{Problem, SubjectPath};
use crate::compat::Format;
use crate::registry::api::ApiState;
use crate::registry::api::history::matrix_of_draft;
use crate::registry::contract::Contract;
use crate::registry::{Error, NewSchema, SubjectName, VersionSelector};
use crate::ui::html::{Html, segment};
use crate::ui::layout::{Page, Place, page};

/// The form: the draft's text and type.
#[derive(Debug, Deserialize)]
pub struct Draft {
    schema: String,
    #[serde(default)]
    schema_type: String,
}

/// `GET /ui/subjects/{subject}/sandbox`: the form, holding the latest version's text.
pub async fn show(State(state): State<ApiState>, SubjectPath(subject): SubjectPath) -> Result<Page, Problem> {
    let (text, format) = match state.registry.version(&subject, VersionSelector::Latest, false).await {
        Ok(latest) => (latest.text, latest.format),
        Err(Error::SubjectNotFound { .. } | Error::VersionNotFound { .. }) => (String::new(), Format::Avro),
        Err(error) => return Err(error.into()),
    };
    let mut html = Html::new();
    form(&mut html, &subject, &text, format);
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
    form(&mut html, &subject, &draft.schema, format);
    let new_schema = NewSchema {
        format,
        text: draft.schema.clone(),
        references: Vec::new(),
        contract: Contract::default(),
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
            html.raw("<p id=\"outcome\" class=\"error\" role=\"alert\">The draft cannot be checked: ")
                .text(&error.to_string())
                .raw("</p>");
            StatusCode::UNPROCESSABLE_ENTITY
        }
        Err(error) => return Err(error.into()),
    };
    Ok(page(status, &title(&subject), &Place::Subject(subject.as_str()), html))
}

fn title(subject: &SubjectName) -> String {
    format!("{subject}: try a draft")
}

fn form(html: &mut Html, subject: &SubjectName, text: &str, format: Format) {
    html.raw("<form method=\"post\" action=\"/ui/subjects/")
        .text(&segment(subject.as_str()))
        .raw("/sandbox\"><p class=\"muted\">The draft is checked against every version under every mode; it is never registered. References are not supported here.</p>")
        .raw("<label for=\"schema-type\">Schema type</label><select id=\"schema-type\" name=\"schema_type\">");
    for option in [Format::Avro, Format::Json, Format::Protobuf] {
        html.raw("<option value=\"").text(option.as_str()).raw("\"");
        if option == format {
            html.raw(" selected");
        }
        html.raw(">").text(option.as_str()).raw("</option>");
    }
    html.raw("</select><label for=\"draft\">Draft schema</label><textarea id=\"draft\" name=\"schema\" spellcheck=\"false\">")
        .text(text)
        .raw("</textarea><p><button type=\"submit\" id=\"check-draft\">Check the draft</button></p></form>");
}
