//! Properties every Protobuf check must have, on generated proto3 schemas:
//! self-compatibility, FULL = BACKWARD ∧ FORWARD, BACKWARD(a, b) =
//! FORWARD(b, a), transitive ⇒ latest only, and a canonical form that
//! ignores layout (issue 4).

use std::collections::BTreeSet;
use std::fmt::Write as _;

mod support;

use proptest::prelude::*;
use schemaops::compat::{Checker, Format, Mode, Report, SchemaRole, SchemaText};
use support::laws::Laws;

const MESSAGE_NAMES: [&str; 3] = ["Order", "Line", "Refund"];
const SCALARS: [&str; 9] = [
    "int32", "int64", "uint32", "bool", "sint64", "string", "bytes", "fixed32", "double",
];

#[derive(Debug, Clone)]
enum FieldKind {
    Scalar(&'static str),
    Message(usize),
    Enum,
    Map(&'static str),
}

#[derive(Debug, Clone)]
struct FieldShape {
    number: u32,
    name: &'static str,
    label: &'static str,
    kind: FieldKind,
    in_oneof: bool,
}

#[derive(Debug, Clone)]
struct MessageShape {
    fields: Vec<FieldShape>,
    oneof_name: &'static str,
}

#[derive(Debug, Clone)]
struct SchemaShape {
    package: &'static str,
    messages: Vec<MessageShape>,
    order: Vec<usize>,
    enum_values: Vec<u32>,
}

fn field(message_count: usize) -> impl Strategy<Value = (&'static str, &'static str, FieldKind, bool)> {
    let kind = prop_oneof![
        4 => proptest::sample::select(SCALARS.to_vec()).prop_map(FieldKind::Scalar),
        1 => (0..message_count).prop_map(FieldKind::Message),
        1 => Just(FieldKind::Enum),
        1 => proptest::sample::select(vec!["int32", "string"]).prop_map(FieldKind::Map),
    ];
    (
        proptest::sample::select(vec!["id", "count", "note", "total", "at"]),
        proptest::sample::select(vec!["", "", "optional ", "repeated "]),
        kind,
        proptest::bool::weighted(0.25),
    )
}

fn message(message_count: usize) -> impl Strategy<Value = MessageShape> {
    (
        proptest::collection::btree_map(1u32..7, field(message_count), 0..5),
        proptest::sample::select(vec!["choice", "payment"]),
    )
        .prop_map(|(fields, oneof_name)| MessageShape {
            fields: fields
                .into_iter()
                .map(|(number, (name, label, kind, in_oneof))| FieldShape {
                    number,
                    name,
                    label,
                    kind,
                    in_oneof,
                })
                .collect(),
            oneof_name,
        })
}

fn schema_shape() -> impl Strategy<Value = SchemaShape> {
    (1usize..=3)
        .prop_flat_map(|count| {
            (
                proptest::sample::select(vec!["shop", "shop", "store"]),
                proptest::collection::vec(message(count), count),
                Just((0..count).collect::<Vec<usize>>()).prop_shuffle(),
                proptest::collection::btree_set(1u32..4, 0..3),
            )
        })
        .prop_map(|(package, messages, order, enum_values)| SchemaShape {
            package,
            messages,
            order,
            enum_values: enum_values.into_iter().collect(),
        })
}

/// The schema as `.proto` text; `spacing` changes only layout and comments.
fn render(shape: &SchemaShape, spacing: bool) -> String {
    let gap = if spacing { "\n\n  // a comment\n  " } else { " " };
    let mut text = format!("syntax = \"proto3\";\npackage {};\n", shape.package);
    let _ = write!(text, "enum Status {{{gap}UNKNOWN = 0;");
    for value in &shape.enum_values {
        let _ = write!(text, "{gap}S{value} = {value};");
    }
    text.push_str(" }\n");
    for &index in &shape.order {
        let message = &shape.messages[index];
        let _ = write!(text, "message {} {{", MESSAGE_NAMES[index]);
        let mut oneof = Vec::new();
        for field in &message.fields {
            let ty = match &field.kind {
                FieldKind::Scalar(scalar) => (*scalar).to_owned(),
                FieldKind::Message(target) => MESSAGE_NAMES[*target].to_owned(),
                FieldKind::Enum => "Status".to_owned(),
                FieldKind::Map(value) => format!("map<string, {value}>"),
            };
            let name = format!("{}_{}", field.name, field.number);
            if field.in_oneof && !matches!(field.kind, FieldKind::Map(_)) {
                oneof.push(format!("{ty} {name} = {};", field.number));
            } else {
                let label = if matches!(field.kind, FieldKind::Map(_)) {
                    ""
                } else {
                    field.label
                };
                let _ = write!(text, "{gap}{label}{ty} {name} = {};", field.number);
            }
        }
        if !oneof.is_empty() {
            let _ = write!(text, "{gap}oneof {} {{ {} }}", message.oneof_name, oneof.join(" "));
        }
        text.push_str(" }\n");
    }
    text
}

fn schema() -> impl Strategy<Value = String> {
    schema_shape().prop_map(|shape| render(&shape, false))
}

fn laws() -> Laws {
    Laws {
        checker: Checker::default(),
        format: Format::Protobuf,
    }
}

fn run(mode: Mode, previous: &[&str], candidate: &str) -> Report {
    laws().run(mode, previous, candidate)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_schema_is_compatible_with_itself_at_every_mode(a in schema()) {
        laws().self_compatible(&a)?;
    }

    #[test]
    fn full_is_backward_and_forward(a in schema(), b in schema()) {
        laws().full_is_backward_and_forward(&a, &b)?;
    }

    #[test]
    fn backward_of_a_over_b_is_forward_of_b_over_a(a in schema(), b in schema()) {
        laws().backward_is_swapped_forward(&a, &b)?;
    }

    #[test]
    fn a_transitive_verdict_implies_the_latest_only_verdict(
        history in proptest::collection::vec(schema(), 1..4),
        candidate in schema(),
    ) {
        laws().transitive_implies_latest(&history, &candidate)?;
    }

    #[test]
    fn checks_are_deterministic(a in schema(), b in schema()) {
        laws().deterministic(&a, &b)?;
    }

    #[test]
    fn the_canonical_form_ignores_layout_and_comments(shape in schema_shape()) {
        let checker = Checker::default();
        let parse = |text: String| {
            checker.parse(Format::Protobuf, SchemaRole::Candidate, &SchemaText::new(text)).expect("valid")
        };
        let compact = parse(render(&shape, false));
        let spaced = parse(render(&shape, true));
        prop_assert_eq!(compact.canonical(), spaced.canonical());
        prop_assert_eq!(compact.fingerprint(), spaced.fingerprint());
    }
}

#[test]
fn the_generator_yields_both_verdicts() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut verdicts = BTreeSet::new();
    for _ in 0..200 {
        let a = schema().new_tree(&mut runner).unwrap().current();
        let b = schema().new_tree(&mut runner).unwrap().current();
        verdicts.insert(run(Mode::Backward, &[&a], &b).is_compatible());
    }
    assert_eq!(
        verdicts.len(),
        2,
        "the generator should give compatible and incompatible pairs"
    );
}
