//! Named JSON Schema scenarios (issue 3): the seed table of open and closed
//! content models, each change under BACKWARD and FORWARD, with both
//! policies; "open → closed is impossible"; and the messages people read.

use schemaops::compat::json::{DEFAULT_STEP_BUDGET, JsonPolicy, JsonSchema, differences};
use schemaops::compat::{Checker, Format, Limits, Mode, Report, SchemaText};

const STRICT: JsonPolicy = JsonPolicy::Strict;
const LENIENT: JsonPolicy = JsonPolicy::Lenient;

/// An object with `name` (required) and, when `email` is given, an `email`
/// property, required or not; `closed` sets `additionalProperties: false`.
fn object(email: Option<Email>, closed: bool) -> String {
    let mut properties = r#""name":{"type":"string"}"#.to_owned();
    let mut required = r#""name""#.to_owned();
    if let Some(email) = email {
        properties.push_str(r#","email":{"type":"string"}"#);
        if email == Email::Required {
            required.push_str(r#","email""#);
        }
    }
    format!(
        r#"{{"type":"object","properties":{{{properties}}},"required":[{required}],"additionalProperties":{}}}"#,
        !closed
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Email {
    Optional,
    Required,
}

fn run(policy: JsonPolicy, mode: Mode, previous: &str, candidate: &str) -> Report {
    Checker::new(Limits::default())
        .with_json_policy(policy)
        .check(
            Format::Json,
            mode,
            &SchemaText::new(candidate),
            &[SchemaText::new(previous)],
        )
        .expect("both schemas are valid")
}

fn compatible(policy: JsonPolicy, mode: Mode, previous: &str, candidate: &str) -> bool {
    run(policy, mode, previous, candidate).is_compatible()
}

fn kinds(report: &Report) -> Vec<String> {
    report.incompatibilities.iter().map(|i| i.kind.to_string()).collect()
}

/// One row of the seed table: (previous, candidate), then the verdicts for
/// BACKWARD and FORWARD under STRICT and LENIENT.
fn row(previous: &str, candidate: &str, backward: [bool; 2], forward: [bool; 2]) {
    for (index, policy) in [STRICT, LENIENT].into_iter().enumerate() {
        assert_eq!(
            compatible(policy, Mode::Backward, previous, candidate),
            backward[index],
            "BACKWARD under {policy}"
        );
        assert_eq!(
            compatible(policy, Mode::Forward, previous, candidate),
            forward[index],
            "FORWARD under {policy}"
        );
        assert_eq!(
            compatible(policy, Mode::Full, previous, candidate),
            backward[index] && forward[index],
            "FULL under {policy}"
        );
    }
}

#[test]
fn adding_an_optional_property_to_an_open_model_breaks_backward_but_not_forward() {
    row(
        &object(None, false),
        &object(Some(Email::Optional), false),
        [false, true],
        [true, true],
    );
    let report = run(
        STRICT,
        Mode::Backward,
        &object(None, false),
        &object(Some(Email::Optional), false),
    );
    assert_eq!(kinds(&report), ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"]);
    assert_eq!(report.incompatibilities[0].path.to_string(), "/properties/email");
    assert_eq!(report.incompatibilities[0].path.to_confluent(), "#/properties/email");
}

#[test]
fn adding_a_required_property_to_an_open_model_breaks_backward_under_both_policies() {
    row(
        &object(None, false),
        &object(Some(Email::Required), false),
        [false, false],
        [true, true],
    );
}

#[test]
fn removing_an_optional_property_from_an_open_model_breaks_forward_only() {
    row(
        &object(Some(Email::Optional), false),
        &object(None, false),
        [true, true],
        [false, true],
    );
}

#[test]
fn removing_a_required_property_from_an_open_model_breaks_forward_under_both_policies() {
    row(
        &object(Some(Email::Required), false),
        &object(None, false),
        [true, true],
        [false, false],
    );
}

#[test]
fn adding_an_optional_property_to_a_closed_model_is_fully_compatible_under_lenient() {
    row(
        &object(None, true),
        &object(Some(Email::Optional), true),
        [true, true],
        [false, true],
    );
}

#[test]
fn adding_a_required_property_to_a_closed_model_breaks_backward() {
    row(
        &object(None, true),
        &object(Some(Email::Required), true),
        [false, false],
        [false, true],
    );
}

#[test]
fn removing_an_optional_property_from_a_closed_model_breaks_backward_under_strict() {
    row(
        &object(Some(Email::Optional), true),
        &object(None, true),
        [false, true],
        [true, true],
    );
}

#[test]
fn removing_a_required_property_from_a_closed_model_breaks_backward_under_strict() {
    row(
        &object(Some(Email::Required), true),
        &object(None, true),
        [false, true],
        [false, false],
    );
}

#[test]
fn closing_an_open_model_is_impossible_under_strict() {
    for (previous, candidate) in [
        (object(None, false), object(None, true)),
        (
            object(Some(Email::Optional), false),
            object(Some(Email::Optional), true),
        ),
    ] {
        let report = run(STRICT, Mode::Backward, &previous, &candidate);
        assert_eq!(kinds(&report), ["ADDITIONAL_PROPERTIES_REMOVED"]);
        let message = &report.incompatibilities[0].message;
        assert!(message.contains("open in version 1 but closed"), "{message}");
        assert!(message.contains("never be closed compatibly"), "{message}");
        assert!(!compatible(STRICT, Mode::Full, &previous, &candidate));
        assert!(!compatible(STRICT, Mode::FullTransitive, &previous, &candidate));
    }
}

#[test]
fn opening_a_closed_model_is_backward_compatible() {
    assert!(compatible(
        STRICT,
        Mode::Backward,
        &object(None, true),
        &object(None, false)
    ));
    assert!(!compatible(
        STRICT,
        Mode::Forward,
        &object(None, true),
        &object(None, false)
    ));
}

#[test]
fn the_message_names_the_open_model_and_who_breaks() {
    let previous = r#"{"type":"object","properties":{"id":{"type":"string"}}}"#;
    let candidate = r#"{"type":"object","properties":{"id":{"type":"string"},"venue":{"type":"string"}}}"#;
    let report = run(STRICT, Mode::Backward, previous, candidate);
    let message = &report.incompatibilities[0].message;
    assert!(message.contains("`venue`"), "{message}");
    assert!(message.contains("open (additional properties allowed)"), "{message}");
    assert!(message.contains("written with version 1"), "{message}");
}

#[test]
fn transitive_checks_report_the_version_each_break_is_against() {
    let v1 = r#"{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}"#;
    let v2 =
        r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"additionalProperties":false}"#;
    let v3 = r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"},"c":{"type":"number"}},"additionalProperties":false}"#;
    let previous = [SchemaText::new(v1), SchemaText::new(v2)];
    let report = Checker::default()
        .check(Format::Json, Mode::ForwardTransitive, &SchemaText::new(v3), &previous)
        .expect("valid");
    let found: Vec<(String, String, usize)> = report
        .incompatibilities
        .iter()
        .map(|i| (i.kind.to_string(), i.path.to_string(), i.version))
        .collect();
    assert_eq!(
        found,
        [
            (
                "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL".to_owned(),
                "/properties/b".to_owned(),
                1
            ),
            (
                "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL".to_owned(),
                "/properties/c".to_owned(),
                1
            ),
            (
                "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL".to_owned(),
                "/properties/c".to_owned(),
                2
            ),
        ]
    );
}

#[test]
fn references_to_definitions_and_defs_are_followed() {
    let previous = r##"{"type":"object","properties":{"home":{"$ref":"#/definitions/Address"}},
        "definitions":{"Address":{"type":"object","properties":{"zip":{"type":"string"}}}}}"##;
    let candidate = r##"{"type":"object","properties":{"home":{"$ref":"#/$defs/Address"}},
        "$defs":{"Address":{"type":"object","properties":{"zip":{"type":"integer"}}}}}"##;
    let report = run(STRICT, Mode::Backward, previous, candidate);
    assert_eq!(kinds(&report), ["TYPE_CHANGED"]);
    assert_eq!(
        report.incompatibilities[0].path.to_string(),
        "/properties/home/properties/zip"
    );
}

#[test]
fn references_relative_to_an_id_are_followed() {
    let schema = |zip: &str| {
        format!(
            r#"{{"$id":"https://example.com/order.json","type":"object",
            "properties":{{"ship":{{"$ref":"address.json"}}}},
            "definitions":{{"a":{{"$id":"https://example.com/address.json","type":"object",
            "properties":{{"zip":{{"type":"{zip}"}}}}}}}}}}"#
        )
    };
    assert!(compatible(
        STRICT,
        Mode::Backward,
        &schema("integer"),
        &schema("number")
    ));
    assert!(!compatible(
        STRICT,
        Mode::Backward,
        &schema("number"),
        &schema("integer")
    ));
}

#[test]
fn a_recursive_schema_is_compared_without_looping() {
    let tree = |value: &str| {
        format!(
            r##"{{"type":"object","properties":{{"value":{{"type":"{value}"}},
            "children":{{"type":"array","items":{{"$ref":"#"}}}}}}}}"##
        )
    };
    assert!(compatible(STRICT, Mode::Full, &tree("string"), &tree("string")));
    let report = run(STRICT, Mode::Backward, &tree("integer"), &tree("string"));
    assert_eq!(kinds(&report), ["TYPE_CHANGED"]);
}

#[test]
fn differences_list_compatible_changes_too() {
    let parse = |text: &str| JsonSchema::parse(&SchemaText::new(text)).expect("valid");
    let original = parse(r#"{"type":"string","maxLength":5,"title":"a"}"#);
    let update = parse(r#"{"type":"string","maxLength":9,"title":"b"}"#);
    let found: Vec<(String, String)> = differences(&original, &update, STRICT, DEFAULT_STEP_BUDGET)
        .expect("small")
        .into_iter()
        .map(|change| (change.kind.to_string(), change.path.to_confluent()))
        .collect();
    assert_eq!(
        found,
        [
            ("TITLE_CHANGED".to_owned(), "#/".to_owned()),
            ("MAX_LENGTH_INCREASED".to_owned(), "#/maxLength".to_owned()),
        ]
    );
}

#[test]
fn layout_and_key_order_do_not_change_a_schemas_identity() {
    let checker = Checker::default();
    let parse = |text: &str| {
        checker
            .parse(
                Format::Json,
                schemaops::compat::SchemaRole::Candidate,
                &SchemaText::new(text),
            )
            .expect("valid")
    };
    let a = parse(r#"{"type":"object","properties":{"a":{"type":"string"}}}"#);
    let b = parse("{\n  \"properties\": { \"a\": { \"type\": \"string\" } },\n  \"type\": \"object\"\n}");
    let c = parse(r#"{"type":"object","properties":{"a":{"type":"integer"}}}"#);
    assert_eq!(
        a.canonical(),
        r#"{"properties":{"a":{"type":"string"}},"type":"object"}"#
    );
    assert_eq!(a.fingerprint(), b.fingerprint());
    assert_ne!(a.fingerprint(), c.fingerprint());
}

/// A number that must be a multiple of `step` (written as JSON number text).
fn multiple_of(step: &str) -> String {
    format!(r#"{{"type":"number","multipleOf":{step}}}"#)
}

/// The differences found from `multipleOf: original` to `multipleOf: update`, then from
/// `update` back to `original` (what BACKWARD, then FORWARD, judges for original → update).
fn multiple_of_kinds(original: &str, update: &str) -> [Vec<String>; 2] {
    let parse = |step: &str| JsonSchema::parse(&SchemaText::new(multiple_of(step))).expect("valid");
    let (original, update) = (parse(original), parse(update));
    [(&original, &update), (&update, &original)].map(|(from, to)| {
        differences(from, to, STRICT, DEFAULT_STEP_BUDGET)
            .expect("small")
            .into_iter()
            .map(|change| change.kind.to_string())
            .collect()
    })
}

#[test]
fn a_multiple_of_step_that_is_not_a_multiple_breaks_both_directions() {
    // 1e9 = 3 × 333333333.33…: the old relative tolerance rounded that ratio to a whole number
    // and called FORWARD compatible.
    row(&multiple_of("3"), &multiple_of("1e9"), [false, false], [false, false]);
    assert_eq!(
        multiple_of_kinds("3", "1e9"),
        [["MULTIPLE_OF_CHANGED"], ["MULTIPLE_OF_CHANGED"]]
    );
    // 1.0000000001 and 1 are within the old tolerance of each other, yet neither divides the other.
    assert_eq!(
        multiple_of_kinds("1", "1.0000000001"),
        [["MULTIPLE_OF_CHANGED"], ["MULTIPLE_OF_CHANGED"]]
    );
}

#[test]
fn a_multiple_of_step_far_apart_in_magnitude_is_judged_exactly() {
    // 1e300 = 1e600 × 1e-300, a whole number: the candidate's values are all old values, so
    // FORWARD holds and BACKWARD breaks. In f64 the ratio overflows one way and underflows to 0
    // the other, which gave the opposite verdicts.
    row(
        &multiple_of("1e-300"),
        &multiple_of("1e300"),
        [false, false],
        [true, true],
    );
    assert_eq!(
        multiple_of_kinds("1e-300", "1e300"),
        [["MULTIPLE_OF_EXPANDED"], ["MULTIPLE_OF_REDUCED"]]
    );
}

#[test]
fn a_decimal_multiple_of_step_is_judged_in_decimal_not_binary() {
    // 0.3 = 3 × 0.1 in decimal, though 0.3 / 0.1 is 2.9999999999999996 in binary.
    row(&multiple_of("0.1"), &multiple_of("0.3"), [false, false], [true, true]);
    assert_eq!(
        multiple_of_kinds("0.1", "0.3"),
        [["MULTIPLE_OF_EXPANDED"], ["MULTIPLE_OF_REDUCED"]]
    );
}

#[test]
fn a_coarser_multiple_of_step_breaks_backward_and_a_finer_one_breaks_forward() {
    // Confluent's NumberSchemaDiff: a new step that is a multiple of the old one is
    // MULTIPLE_OF_EXPANDED (old data may not fit), the reverse MULTIPLE_OF_REDUCED.
    row(&multiple_of("2"), &multiple_of("4"), [false, false], [true, true]);
    row(&multiple_of("4"), &multiple_of("2"), [true, true], [false, false]);
    assert_eq!(
        multiple_of_kinds("2", "4"),
        [["MULTIPLE_OF_EXPANDED"], ["MULTIPLE_OF_REDUCED"]]
    );
}

#[test]
fn a_changed_type_inside_a_property_names_the_property() {
    let previous =
        r#"{"type":"object","properties":{"rsvp":{"type":"object","properties":{"guests":{"type":"integer"}}}}}"#;
    let candidate =
        r#"{"type":"object","properties":{"rsvp":{"type":"object","properties":{"guests":{"type":"string"}}}}}"#;
    let report = run(JsonPolicy::Strict, Mode::Backward, previous, candidate);
    let message = &report.incompatibilities[0].message;
    assert!(
        message.contains("the type of property `guests` (at /properties/rsvp/properties/guests"),
        "{message}"
    );
}
