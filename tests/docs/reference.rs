//! The book's reference pages, generated from the code: the command line
//! from clap, the custom resources from the CRDs, the REST API from the
//! OpenAPI document, the metrics from the metrics registry, and the verdicts
//! on common changes from the compatibility engine itself.

use std::fmt::Write as _;

use std::sync::Arc;

use clap::CommandFactory;
use schemaops::crd::ResourceKind;
use schemaops::crd::conditions::Reason;
use schemaops::metrics::ReconcileResult;
use serde_json::Value;

/// The note under each generated page's title.
fn generated_from(source: &str) -> String {
    format!(
        "Generated from {source}; do not edit. `UPDATE_EXPECT=1 cargo test --test docs_book` writes it \
         again, and the test fails when it is out of date.\n"
    )
}

/// Text on one line, safe inside a table cell.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// Every reference page, by file name under `docs/src/reference/`.
pub fn pages() -> Vec<(&'static str, String)> {
    vec![
        ("cli.md", cli()),
        ("crds.md", crds()),
        ("rest.md", rest()),
        ("metrics.md", metrics()),
        ("compatibility-tables.md", compatibility_tables()),
    ]
}

fn cli() -> String {
    // The subcommands' arguments are built only when one runs (`defer`):
    // build them all to list them.
    let mut command = schemaops::cli::Cli::command();
    command.build();
    let mut page = format!(
        "# Command line\n\n{}",
        generated_from("the command-line definitions (`src/cli.rs`)")
    );
    let _ = writeln!(
        page,
        "\n{}",
        command.get_about().map(|about| about.to_string()).unwrap_or_default()
    );
    // `build` adds clap's own `help` subcommand: not one of ours.
    let ours = |sub: &&clap::Command| !sub.is_hide_set() && sub.get_name() != "help";
    for sub in command.get_subcommands().filter(ours) {
        command_section(&mut page, &format!("schemaops {}", sub.get_name()), sub);
    }
    page
}

fn command_section(page: &mut String, path: &str, command: &clap::Command) {
    let _ = writeln!(page, "\n## `{path}`\n");
    let about = command
        .get_long_about()
        .or(command.get_about())
        .map(|about| about.to_string())
        .unwrap_or_default();
    // The doc comment's paragraphs, each joined onto one line.
    for paragraph in about.split("\n\n") {
        let _ = writeln!(page, "{}\n", paragraph.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    let arguments: Vec<_> = command
        .get_arguments()
        .filter(|argument| !argument.is_hide_set() && argument.get_id() != "help" && argument.get_id() != "version")
        .collect();
    if !arguments.is_empty() {
        page.push_str("| argument | environment | default | what it does |\n|---|---|---|---|\n");
        for argument in arguments {
            let name = match (argument.get_long(), argument.get_short()) {
                (Some(long), Some(short)) => format!("`-{short}`, `--{long}`"),
                (Some(long), None) => format!("`--{long}`"),
                (None, Some(short)) => format!("`-{short}`"),
                (None, None) => format!("`{}`", argument.get_id().as_str().to_uppercase()),
            };
            let environment = argument
                .get_env()
                .map(|env| format!("`{}`", env.to_string_lossy()))
                .unwrap_or_default();
            // A flag's built default (`false`) says nothing a reader needs.
            let shown_defaults = if argument.get_action().takes_values() {
                argument.get_default_values()
            } else {
                &[]
            };
            let default = shown_defaults
                .iter()
                .map(|value| format!("`{}`", value.to_string_lossy()))
                .collect::<Vec<_>>()
                .join(", ");
            let mut help = argument
                .get_long_help()
                .or(argument.get_help())
                .map(|help| help.to_string())
                .unwrap_or_default();
            let choices: Vec<_> = argument
                .get_possible_values()
                .iter()
                .filter(|value| !value.is_hide_set())
                .map(|value| format!("`{}`", value.get_name()))
                .collect();
            if !choices.is_empty() && argument.get_action().takes_values() {
                if !help.trim_end().ends_with('.') {
                    help.push('.');
                }
                let _ = write!(help, " One of {}.", choices.join(", "));
            }
            let _ = writeln!(page, "| {name} | {environment} | {default} | {} |", cell(&help));
        }
    }
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        command_section(page, &format!("{path} {}", sub.get_name()), sub);
    }
}

fn crds() -> String {
    let mut page = format!(
        "# Custom resources\n\n{}",
        generated_from("the CRDs (`src/crd/`, `crds/*.yaml`)")
    );
    for (file, definition) in schemaops::crd::render::definitions() {
        let definition = serde_json::to_value(&definition).unwrap();
        let spec = &definition["spec"];
        let kind = spec["names"]["kind"].as_str().unwrap_or_default();
        let _ = writeln!(
            page,
            "\n## {kind}\n\n`{}/{}`, {}; file `crds/{file}`.\n",
            spec["group"].as_str().unwrap_or_default(),
            spec["versions"][0]["name"].as_str().unwrap_or_default(),
            match spec["scope"].as_str() {
                Some("Cluster") => "cluster-scoped",
                _ => "namespaced",
            }
        );
        let schema = &spec["versions"][0]["schema"]["openAPIV3Schema"];
        if let Some(description) = schema["description"].as_str() {
            let _ = writeln!(page, "{}\n", cell(description));
        }
        page.push_str("| field | type | required | default | description |\n|---|---|---|---|---|\n");
        for part in ["spec", "status"] {
            let required = schema["required"]
                .as_array()
                .is_some_and(|names| names.iter().any(|name| name == part));
            field_rows(&mut page, part, &schema["properties"][part], required);
        }
    }
    page
}

fn type_of(schema: &Value) -> String {
    if schema["x-kubernetes-int-or-string"] == true {
        return "int or string".to_owned();
    }
    match schema["type"].as_str() {
        Some("array") => format!("array of {}", type_of(&schema["items"])),
        Some("object") if schema.get("additionalProperties").is_some_and(Value::is_object) => {
            format!("map of {}", type_of(&schema["additionalProperties"]))
        }
        Some(kind) => kind.to_owned(),
        None if schema["x-kubernetes-preserve-unknown-fields"] == true => "any".to_owned(),
        None => "any".to_owned(),
    }
}

fn field_rows(page: &mut String, path: &str, schema: &Value, required: bool) {
    if schema.is_null() {
        return;
    }
    let mut description = schema["description"].as_str().map(cell).unwrap_or_default();
    if let Some(choices) = schema["enum"].as_array() {
        let choices: Vec<_> = choices
            .iter()
            .map(|choice| format!("`{}`", choice.as_str().unwrap_or_default()))
            .collect();
        let _ = write!(description, " One of {}.", choices.join(", "));
    }
    let default = schema
        .get("default")
        .map(|value| format!("`{value}`"))
        .unwrap_or_default();
    let _ = writeln!(
        page,
        "| `{path}` | {} | {} | {default} | {} |",
        type_of(schema),
        if required { "yes" } else { "" },
        description.trim()
    );
    let (properties, required_names, prefix) = if schema["type"] == "array" {
        (
            &schema["items"]["properties"],
            &schema["items"]["required"],
            format!("{path}[]"),
        )
    } else {
        (&schema["properties"], &schema["required"], path.to_owned())
    };
    if let Some(properties) = properties.as_object() {
        for (name, property) in properties {
            let required = required_names
                .as_array()
                .is_some_and(|names| names.iter().any(|required| required == name));
            field_rows(page, &format!("{prefix}.{name}"), property, required);
        }
    }
}

fn rest() -> String {
    let document: Value = serde_json::from_str(schemaops::registry::api::openapi::document()).unwrap();
    let mut page = format!(
        "# REST API\n\n{}",
        generated_from("the OpenAPI document the registry serves at `/openapi.json`")
    );
    let _ = writeln!(
        page,
        "\n{}",
        document["info"]["description"].as_str().unwrap_or_default()
    );
    let responses = &document["components"]["responses"];
    let mut by_tag: std::collections::BTreeMap<String, Vec<(String, String, &Value)>> = Default::default();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let tag = operation["tags"][0].as_str().unwrap_or("other").to_owned();
            by_tag
                .entry(tag)
                .or_default()
                .push((method.to_uppercase(), path.clone(), operation));
        }
    }
    for (tag, operations) in by_tag {
        let _ = writeln!(page, "\n## {tag}");
        for (method, path, operation) in operations {
            let _ = writeln!(page, "\n### `{method} {path}`\n");
            let _ = writeln!(page, "{}\n", cell(operation["summary"].as_str().unwrap_or_default()));
            if let Some(description) = operation["description"].as_str() {
                let _ = writeln!(page, "{}\n", cell(description));
            }
            if let Some(parameters) = operation["parameters"].as_array() {
                page.push_str("| parameter | in | required | description |\n|---|---|---|---|\n");
                for parameter in parameters {
                    let _ = writeln!(
                        page,
                        "| `{}` | {} | {} | {} |",
                        parameter["name"].as_str().unwrap_or_default(),
                        parameter["in"].as_str().unwrap_or_default(),
                        if parameter["required"] == true { "yes" } else { "" },
                        cell(parameter["description"].as_str().unwrap_or_default())
                    );
                }
                page.push('\n');
            }
            page.push_str("| status | answer |\n|---|---|\n");
            for (status, answer) in operation["responses"].as_object().unwrap() {
                let answer = match answer["$ref"].as_str() {
                    Some(reference) => &responses[reference.rsplit('/').next().unwrap_or_default()],
                    None => answer,
                };
                let _ = writeln!(
                    page,
                    "| {status} | {} |",
                    cell(answer["description"].as_str().unwrap_or_default())
                );
            }
        }
    }
    page
}

/// Every metric family with one sample each (a family without samples is not
/// rendered), from a registry on a throwaway SQLite store so that the store
/// gauges appear too, and the Kafka store's leader gauge.
fn sampled_metrics() -> String {
    use schemaops::registry::embedded::EmbeddedRegistry;
    use schemaops::registry::embedded::sqlite::SqliteStore;
    let folder = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let store = Arc::new(SqliteStore::open(&folder.path().join("registry.db")).unwrap());
    let registry = runtime
        .block_on(EmbeddedRegistry::open(store, schemaops::compat::Checker::default()))
        .unwrap();
    let metrics = schemaops::metrics::Metrics::new(Some(Arc::new(registry)))
        .with_store_leadership(schemaops::registry::embedded::kafka::election::Leadership::new());
    let elapsed = std::time::Duration::from_millis(1);
    metrics.reconciled(ResourceKind::Schema, "default", ReconcileResult::Ok, elapsed);
    metrics.rejected("default", Reason::IncompatibleSchema);
    metrics.policy_violation("floor", "Deny");
    metrics.request(
        "/subjects",
        &axum::http::Method::GET,
        axum::http::StatusCode::OK,
        elapsed,
    );
    metrics
        .rest_write_counters()
        .admin_writes
        .get_or_create(&schemaops::metrics::MethodLabel { method: "POST" })
        .inc();
    metrics.render()
}

fn metrics() -> String {
    let text = sampled_metrics();
    let mut page = format!(
        "# Metrics\n\n{}",
        generated_from("the metrics registry (`src/metrics.rs`)")
    );
    page.push_str(
        "\nServed at `/metrics` on the health port, in the Prometheus text format. A counter's series \
         end in `_total`.\n\n| metric | type | labels | what it counts |\n|---|---|---|---|\n",
    );
    let mut help = std::collections::BTreeMap::new();
    let mut kinds = std::collections::BTreeMap::new();
    let mut labels: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
    for line in text.lines() {
        if let Some((series, rest)) = line.split_once('{')
            && !line.starts_with('#')
        {
            let family = ["_total", "_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| series.strip_suffix(suffix))
                .unwrap_or(series);
            let names = rest
                .split(',')
                .filter_map(|pair| pair.split_once('=').map(|(name, _)| name.to_owned()));
            labels
                .entry(family.to_owned())
                .or_default()
                .extend(names.filter(|name| name != "le"));
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, what) = rest.split_once(' ').unwrap_or((rest, ""));
            help.insert(name.to_owned(), what.to_owned());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            kinds.insert(name.to_owned(), kind.to_owned());
        }
    }
    // Every metric name the source registers must be on the page.
    let source = include_str!("../../src/metrics.rs");
    let is_name = |part: &&str| {
        part.bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
    };
    for name in source
        .split('"')
        .filter(|part| part.starts_with("schemaops_") && is_name(part))
    {
        assert!(
            help.contains_key(name),
            "{name} has no sample in sampled_metrics(): add one"
        );
    }
    for (name, what) in help {
        let kind = kinds.get(&name).cloned().unwrap_or_default();
        let names = labels.get(&name).map(|names| {
            names
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        });
        let _ = writeln!(
            page,
            "| `{name}` | {kind} | {} | {} |",
            names.unwrap_or_default(),
            cell(&what)
        );
    }
    page
}

/// One common change: the earlier version and the new one.
struct Change {
    what: &'static str,
    previous: &'static str,
    candidate: &'static str,
}

const fn change(what: &'static str, previous: &'static str, candidate: &'static str) -> Change {
    Change {
        what,
        previous,
        candidate,
    }
}

const AVRO_CHANGES: &[Change] = &[
    change(
        "add a field with a default",
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}"#,
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"string","default":""}]}"#,
    ),
    change(
        "add a field without a default",
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}"#,
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"string"}]}"#,
    ),
    change(
        "remove a field that has a default",
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"string","default":""}]}"#,
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}"#,
    ),
    change(
        "remove a field without a default",
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"string"}]}"#,
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}"#,
    ),
    change(
        "widen `int` to `long`",
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#,
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}"#,
    ),
    change(
        "narrow `long` to `int`",
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}"#,
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#,
    ),
    change(
        "make a field nullable (`[\"null\", \"string\"]`)",
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}"#,
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":["null","string"]}]}"#,
    ),
    change(
        "rename a field, keeping the old name as an alias",
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}"#,
        r#"{"type":"record","name":"R","fields":[{"name":"b","type":"string","aliases":["a"]}]}"#,
    ),
    change(
        "add an enum symbol",
        r#"{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}]}"#,
        r#"{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B","C"]}}]}"#,
    ),
    change(
        "add an enum symbol, with a default symbol",
        r#"{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}}]}"#,
        r#"{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B","C"],"default":"A"}}]}"#,
    ),
];

const JSON_CHANGES: &[Change] = &[
    change(
        "add an optional property to an open object",
        r#"{"type":"object","properties":{"a":{"type":"string"}}}"#,
        r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}"#,
    ),
    change(
        "add an optional property to a closed object",
        r#"{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}"#,
        r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"additionalProperties":false}"#,
    ),
    change(
        "add a required property to a closed object",
        r#"{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}"#,
        r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["b"],"additionalProperties":false}"#,
    ),
    change(
        "remove a property from a closed object",
        r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"additionalProperties":false}"#,
        r#"{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}"#,
    ),
    change(
        "make an optional property required",
        r#"{"type":"object","properties":{"a":{"type":"string"}}}"#,
        r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}"#,
    ),
    change(
        "widen `integer` to `number`",
        r#"{"type":"object","properties":{"a":{"type":"integer"}}}"#,
        r#"{"type":"object","properties":{"a":{"type":"number"}}}"#,
    ),
    change(
        "lower a `maxLength`",
        r#"{"type":"object","properties":{"a":{"type":"string","maxLength":20}}}"#,
        r#"{"type":"object","properties":{"a":{"type":"string","maxLength":10}}}"#,
    ),
    change(
        "add an `enum` value",
        r#"{"type":"object","properties":{"a":{"enum":["x","y"]}}}"#,
        r#"{"type":"object","properties":{"a":{"enum":["x","y","z"]}}}"#,
    ),
];

const PROTOBUF_CHANGES: &[Change] = &[
    change(
        "add a field",
        "syntax = \"proto3\";\nmessage M {\n  string a = 1;\n}\n",
        "syntax = \"proto3\";\nmessage M {\n  string a = 1;\n  string b = 2;\n}\n",
    ),
    change(
        "remove a field",
        "syntax = \"proto3\";\nmessage M {\n  string a = 1;\n  string b = 2;\n}\n",
        "syntax = \"proto3\";\nmessage M {\n  string a = 1;\n}\n",
    ),
    change(
        "rename a field (same number)",
        "syntax = \"proto3\";\nmessage M {\n  string a = 1;\n}\n",
        "syntax = \"proto3\";\nmessage M {\n  string b = 1;\n}\n",
    ),
    change(
        "change `int32` to `int64` (one wire family)",
        "syntax = \"proto3\";\nmessage M {\n  int32 a = 1;\n}\n",
        "syntax = \"proto3\";\nmessage M {\n  int64 a = 1;\n}\n",
    ),
    change(
        "change `int32` to `string`",
        "syntax = \"proto3\";\nmessage M {\n  int32 a = 1;\n}\n",
        "syntax = \"proto3\";\nmessage M {\n  string a = 1;\n}\n",
    ),
    change(
        "move a field into a new `oneof`",
        "syntax = \"proto3\";\nmessage M {\n  string a = 1;\n}\n",
        "syntax = \"proto3\";\nmessage M {\n  oneof choice {\n    string a = 1;\n  }\n}\n",
    ),
    change(
        "add an enum value",
        "syntax = \"proto3\";\nenum E {\n  E_UNSPECIFIED = 0;\n}\nmessage M {\n  E e = 1;\n}\n",
        "syntax = \"proto3\";\nenum E {\n  E_UNSPECIFIED = 0;\n  E_MORE = 1;\n}\nmessage M {\n  E e = 1;\n}\n",
    ),
];

/// The engine's verdict on `change` under `mode`: `yes`, or `no` with the first kind found.
fn verdict(format: schemaops::compat::Format, mode: schemaops::compat::Mode, change: &Change) -> String {
    use schemaops::compat::SchemaText;
    let report = schemaops::compat::check(
        format,
        mode,
        &SchemaText::new(change.candidate),
        &[SchemaText::new(change.previous)],
    )
    .unwrap_or_else(|error| panic!("{}: {error}", change.what));
    match report.incompatibilities.first() {
        None => "yes".to_owned(),
        Some(first) => format!("no (`{}`)", first.kind),
    }
}

fn compatibility_tables() -> String {
    use schemaops::compat::{Format, Mode};
    let mut page = format!(
        "# Common changes, judged\n\n{}",
        generated_from("the compatibility engine's own verdicts on the changes below (`tests/docs/reference.rs`)")
    );
    page.push_str(
        "\nWhether each change is compatible under each mode, with the first incompatibility found \
         when it is not. BACKWARD: consumers using the new schema read data written with the earlier \
         one. FORWARD: consumers still on the earlier schema read data written with the new one. FULL: \
         both. The transitive forms ask the same of every earlier version. JSON Schema is judged under \
         the default STRICT policy. [Compatibility semantics](../concepts/compatibility.md) explains \
         each format's rules.\n",
    );
    for (title, format, changes) in [
        ("Avro", Format::Avro, AVRO_CHANGES),
        ("JSON Schema", Format::Json, JSON_CHANGES),
        ("Protobuf", Format::Protobuf, PROTOBUF_CHANGES),
    ] {
        let _ = writeln!(
            page,
            "\n## {title}\n\n| change | BACKWARD | FORWARD | FULL |\n|---|---|---|---|"
        );
        for change in changes {
            let _ = writeln!(
                page,
                "| {} | {} | {} | {} |",
                change.what,
                verdict(format, Mode::Backward, change),
                verdict(format, Mode::Forward, change),
                verdict(format, Mode::Full, change)
            );
        }
    }
    page
}
