//! JSON Schema: parsing (drafts 4, 6, 7, 2019-09 and 2020-12), local `$ref`
//! resolution, and compatibility by Confluent's difference catalogue.
//!
//! The check runs in two steps, as Confluent's does. First a walk records
//! every difference between the schema whose data must be read (the
//! "original") and the schema that reads it (the "update"), each as a
//! [`Change`] with Confluent's type name ([`Kind`]) and path. Then one table,
//! [`is_compatible`], judges each kind under a [`JsonPolicy`]. BACKWARD walks
//! from the earlier version to the candidate; FORWARD walks the other way.
//!
//! Content models decide most verdicts. An object is *open* when it allows
//! any additional property (`additionalProperties` absent or `true`),
//! *closed* with `additionalProperties: false`, and *partially open* when
//! `patternProperties` or an `additionalProperties` schema constrain the
//! extra properties. Adding a property to an open object is not BACKWARD
//! compatible under STRICT: data written earlier may already carry that name
//! with another type. Closing an open object is never compatible.
//!
//! The schemas are read as Confluent's loader reads them, quirks included,
//! so the differences match its lists: a `type` array is an `anyOf` of one
//! schema per type; keywords of several types without `type` make an
//! `allOf`; `$ref` replaces its siblings; equal subschemas of a combined
//! schema count once. With `$schema` 2019-09 or 2020-12, a changed `$id` is
//! not reported, `properties: {}` alone constrains nothing, `minContains`
//! defaults to 1 under `contains`, and `items: true|false` without
//! `prefixItems` says whether any items may appear (reported as
//! `additionalItems`). Recursive schemas are compared pair by pair with
//! each pair's result remembered; a pair met again while it is being
//! compared is assumed unchanged, and results that leaned on that
//! assumption are kept only once it proves true, so a change deep in a
//! recursive structure is never masked.
//!
//! Where we knowingly differ from Confluent:
//! - `format`, `contains` and `propertyNames` are read and checked for
//!   validity but, as in Confluent, changes to them are not reported.
//! - Remote `$ref`s (to other documents) are an error here, not a fetch.
//! - An unknown `$schema` URI is refused rather than read as draft-07.
//! - The LENIENT table was worked out from Confluent's documented intent
//!   and the corpus: besides STRICT's compatible kinds it accepts closing
//!   or narrowing an open model, adding optional (or defaulted required)
//!   properties to an open model, removing properties from a closed one,
//!   and properties not covered by a partially open model.
//! - When several maximum matchings of combined subschemas exist, the one
//!   reported is the first found in document order; Confluent's depends on
//!   hash order. The verdict does not depend on the choice.

mod diff;
mod model;
mod parse;

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

pub use model::Draft;
pub use parse::ParseError;

use super::{Direction, Incompatibility, SchemaPath, SchemaText};
use model::{Meta, Node, NodeId};

/// How many node comparisons one check may make before it gives up as too
/// complex to decide (combined schemas compare every pair of subschemas).
pub const DEFAULT_STEP_BUDGET: usize = 2_000_000;

/// Which of Confluent's two tables judges the differences.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JsonPolicy {
    /// Confluent's default: a reader must accept anything an earlier writer
    /// could have written, including properties an open model let through.
    #[default]
    Strict,
    /// Assumes writers only write the properties their schema declares, so
    /// adding optional properties to open models and closing models is allowed.
    Lenient,
}

impl JsonPolicy {
    /// The policy's name, as Confluent spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            JsonPolicy::Strict => "STRICT",
            JsonPolicy::Lenient => "LENIENT",
        }
    }
}

impl fmt::Display for JsonPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for JsonPolicy {
    type Err = super::UnknownName;

    /// Accepts `strict` or `lenient` in any case.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_uppercase().as_str() {
            "STRICT" => Ok(JsonPolicy::Strict),
            "LENIENT" => Ok(JsonPolicy::Lenient),
            _ => Err(super::UnknownName::new("JSON Schema policy", text, "STRICT, LENIENT")),
        }
    }
}

macro_rules! kinds {
    ($($variant:ident => $name:literal,)*) => {
        /// Confluent's difference types for JSON Schema (`Difference.Type`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Kind {
            $(
                #[doc = concat!("Confluent's `", $name, "`.")]
                $variant,
            )*
        }

        impl Kind {
            /// Every kind, in Confluent's order.
            pub const ALL: &'static [Kind] = &[$(Kind::$variant,)*];

            /// Confluent's name for the kind.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Kind::$variant => $name,)*
                }
            }
        }
    };
}

kinds! {
    IdChanged => "ID_CHANGED",
    DescriptionChanged => "DESCRIPTION_CHANGED",
    TitleChanged => "TITLE_CHANGED",
    DefaultChanged => "DEFAULT_CHANGED",
    SchemaAdded => "SCHEMA_ADDED",
    SchemaRemoved => "SCHEMA_REMOVED",
    TypeExtended => "TYPE_EXTENDED",
    TypeNarrowed => "TYPE_NARROWED",
    TypeChanged => "TYPE_CHANGED",
    MaxLengthAdded => "MAX_LENGTH_ADDED",
    MaxLengthRemoved => "MAX_LENGTH_REMOVED",
    MaxLengthIncreased => "MAX_LENGTH_INCREASED",
    MaxLengthDecreased => "MAX_LENGTH_DECREASED",
    MinLengthAdded => "MIN_LENGTH_ADDED",
    MinLengthRemoved => "MIN_LENGTH_REMOVED",
    MinLengthIncreased => "MIN_LENGTH_INCREASED",
    MinLengthDecreased => "MIN_LENGTH_DECREASED",
    PatternAdded => "PATTERN_ADDED",
    PatternRemoved => "PATTERN_REMOVED",
    PatternChanged => "PATTERN_CHANGED",
    MaximumAdded => "MAXIMUM_ADDED",
    MaximumRemoved => "MAXIMUM_REMOVED",
    MaximumIncreased => "MAXIMUM_INCREASED",
    MaximumDecreased => "MAXIMUM_DECREASED",
    MinimumAdded => "MINIMUM_ADDED",
    MinimumRemoved => "MINIMUM_REMOVED",
    MinimumIncreased => "MINIMUM_INCREASED",
    MinimumDecreased => "MINIMUM_DECREASED",
    ExclusiveMaximumAdded => "EXCLUSIVE_MAXIMUM_ADDED",
    ExclusiveMaximumRemoved => "EXCLUSIVE_MAXIMUM_REMOVED",
    ExclusiveMaximumIncreased => "EXCLUSIVE_MAXIMUM_INCREASED",
    ExclusiveMaximumDecreased => "EXCLUSIVE_MAXIMUM_DECREASED",
    ExclusiveMinimumAdded => "EXCLUSIVE_MINIMUM_ADDED",
    ExclusiveMinimumRemoved => "EXCLUSIVE_MINIMUM_REMOVED",
    ExclusiveMinimumIncreased => "EXCLUSIVE_MINIMUM_INCREASED",
    ExclusiveMinimumDecreased => "EXCLUSIVE_MINIMUM_DECREASED",
    MultipleOfAdded => "MULTIPLE_OF_ADDED",
    MultipleOfRemoved => "MULTIPLE_OF_REMOVED",
    MultipleOfExpanded => "MULTIPLE_OF_EXPANDED",
    MultipleOfReduced => "MULTIPLE_OF_REDUCED",
    MultipleOfChanged => "MULTIPLE_OF_CHANGED",
    RequiredAttributeAdded => "REQUIRED_ATTRIBUTE_ADDED",
    RequiredAttributeWithDefaultAdded => "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
    RequiredAttributeRemoved => "REQUIRED_ATTRIBUTE_REMOVED",
    MaxPropertiesAdded => "MAX_PROPERTIES_ADDED",
    MaxPropertiesRemoved => "MAX_PROPERTIES_REMOVED",
    MaxPropertiesIncreased => "MAX_PROPERTIES_INCREASED",
    MaxPropertiesDecreased => "MAX_PROPERTIES_DECREASED",
    MinPropertiesAdded => "MIN_PROPERTIES_ADDED",
    MinPropertiesRemoved => "MIN_PROPERTIES_REMOVED",
    MinPropertiesIncreased => "MIN_PROPERTIES_INCREASED",
    MinPropertiesDecreased => "MIN_PROPERTIES_DECREASED",
    AdditionalPropertiesAdded => "ADDITIONAL_PROPERTIES_ADDED",
    AdditionalPropertiesRemoved => "ADDITIONAL_PROPERTIES_REMOVED",
    AdditionalPropertiesExtended => "ADDITIONAL_PROPERTIES_EXTENDED",
    AdditionalPropertiesNarrowed => "ADDITIONAL_PROPERTIES_NARROWED",
    DependencyArrayAdded => "DEPENDENCY_ARRAY_ADDED",
    DependencyArrayRemoved => "DEPENDENCY_ARRAY_REMOVED",
    DependencyArrayExtended => "DEPENDENCY_ARRAY_EXTENDED",
    DependencyArrayNarrowed => "DEPENDENCY_ARRAY_NARROWED",
    DependencyArrayChanged => "DEPENDENCY_ARRAY_CHANGED",
    DependencySchemaAdded => "DEPENDENCY_SCHEMA_ADDED",
    DependencySchemaRemoved => "DEPENDENCY_SCHEMA_REMOVED",
    RequiredPropertyAddedToOpenContentModel => "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
    RequiredPropertyWithDefaultAddedToOpenContentModel => "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
    OptionalPropertyAddedToOpenContentModel => "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
    PropertyWithEmptySchemaAddedToOpenContentModel => "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    RequiredPropertyAddedToUnopenContentModel => "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    RequiredPropertyWithDefaultAddedToUnopenContentModel => "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
    OptionalPropertyAddedToUnopenContentModel => "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    PropertyRemovedFromOpenContentModel => "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
    PropertyWithFalseRemovedFromClosedContentModel => "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    PropertyRemovedFromClosedContentModel => "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    PropertyRemovedIsCoveredByPartiallyOpenContentModel => "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    PropertyRemovedNotCoveredByPartiallyOpenContentModel => "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    PropertyAddedIsCoveredByPartiallyOpenContentModel => "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    PropertyAddedNotCoveredByPartiallyOpenContentModel => "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    UnevaluatedPropertiesAdded => "UNEVALUATED_PROPERTIES_ADDED",
    UnevaluatedPropertiesRemoved => "UNEVALUATED_PROPERTIES_REMOVED",
    UnevaluatedPropertiesExtended => "UNEVALUATED_PROPERTIES_EXTENDED",
    UnevaluatedPropertiesNarrowed => "UNEVALUATED_PROPERTIES_NARROWED",
    MaxItemsAdded => "MAX_ITEMS_ADDED",
    MaxItemsRemoved => "MAX_ITEMS_REMOVED",
    MaxItemsIncreased => "MAX_ITEMS_INCREASED",
    MaxItemsDecreased => "MAX_ITEMS_DECREASED",
    MinItemsAdded => "MIN_ITEMS_ADDED",
    MinItemsRemoved => "MIN_ITEMS_REMOVED",
    MinItemsIncreased => "MIN_ITEMS_INCREASED",
    MinItemsDecreased => "MIN_ITEMS_DECREASED",
    MaxContainsAdded => "MAX_CONTAINS_ADDED",
    MaxContainsRemoved => "MAX_CONTAINS_REMOVED",
    MaxContainsIncreased => "MAX_CONTAINS_INCREASED",
    MaxContainsDecreased => "MAX_CONTAINS_DECREASED",
    MinContainsAdded => "MIN_CONTAINS_ADDED",
    MinContainsRemoved => "MIN_CONTAINS_REMOVED",
    MinContainsIncreased => "MIN_CONTAINS_INCREASED",
    MinContainsDecreased => "MIN_CONTAINS_DECREASED",
    UniqueItemsAdded => "UNIQUE_ITEMS_ADDED",
    UniqueItemsRemoved => "UNIQUE_ITEMS_REMOVED",
    AdditionalItemsAdded => "ADDITIONAL_ITEMS_ADDED",
    AdditionalItemsRemoved => "ADDITIONAL_ITEMS_REMOVED",
    AdditionalItemsExtended => "ADDITIONAL_ITEMS_EXTENDED",
    AdditionalItemsNarrowed => "ADDITIONAL_ITEMS_NARROWED",
    UnevaluatedItemsAdded => "UNEVALUATED_ITEMS_ADDED",
    UnevaluatedItemsRemoved => "UNEVALUATED_ITEMS_REMOVED",
    UnevaluatedItemsExtended => "UNEVALUATED_ITEMS_EXTENDED",
    UnevaluatedItemsNarrowed => "UNEVALUATED_ITEMS_NARROWED",
    ItemAddedToOpenContentModel => "ITEM_ADDED_TO_OPEN_CONTENT_MODEL",
    ItemWithEmptySchemaAddedToOpenContentModel => "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    ItemAddedToClosedContentModel => "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
    ItemRemovedFromOpenContentModel => "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
    ItemWithFalseRemovedFromClosedContentModel => "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    ItemRemovedFromClosedContentModel => "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    ItemRemovedIsCoveredByPartiallyOpenContentModel => "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ItemRemovedNotCoveredByPartiallyOpenContentModel => "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ItemAddedIsCoveredByPartiallyOpenContentModel => "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    ItemAddedNotCoveredByPartiallyOpenContentModel => "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    EnumArrayExtended => "ENUM_ARRAY_EXTENDED",
    EnumArrayNarrowed => "ENUM_ARRAY_NARROWED",
    EnumArrayChanged => "ENUM_ARRAY_CHANGED",
    CombinedTypeExtended => "COMBINED_TYPE_EXTENDED",
    CombinedTypeChanged => "COMBINED_TYPE_CHANGED",
    ProductTypeExtended => "PRODUCT_TYPE_EXTENDED",
    ProductTypeNarrowed => "PRODUCT_TYPE_NARROWED",
    SumTypeExtended => "SUM_TYPE_EXTENDED",
    SumTypeNarrowed => "SUM_TYPE_NARROWED",
    CombinedTypeSubschemasChanged => "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
    NotTypeExtended => "NOT_TYPE_EXTENDED",
    NotTypeNarrowed => "NOT_TYPE_NARROWED",
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = super::UnknownName;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Kind::ALL
            .iter()
            .copied()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| {
                super::UnknownName::new("JSON Schema difference type", text, "Confluent's Difference.Type names")
            })
    }
}

/// Whether a difference of this kind keeps data flowing from the original's
/// writers to the update's readers, under `policy`. The one table that judges.
pub fn is_compatible(kind: Kind, policy: JsonPolicy) -> bool {
    let lenient = policy == JsonPolicy::Lenient;
    match kind {
        // Annotations and relaxations: always fine.
        Kind::IdChanged
        | Kind::DescriptionChanged
        | Kind::TitleChanged
        | Kind::DefaultChanged
        | Kind::SchemaRemoved
        | Kind::TypeExtended
        | Kind::MaxLengthIncreased
        | Kind::MaxLengthRemoved
        | Kind::MinLengthDecreased
        | Kind::MinLengthRemoved
        | Kind::PatternRemoved
        | Kind::MaximumIncreased
        | Kind::MaximumRemoved
        | Kind::MinimumDecreased
        | Kind::MinimumRemoved
        | Kind::ExclusiveMaximumIncreased
        | Kind::ExclusiveMaximumRemoved
        | Kind::ExclusiveMinimumDecreased
        | Kind::ExclusiveMinimumRemoved
        | Kind::MultipleOfReduced
        | Kind::MultipleOfRemoved
        | Kind::RequiredAttributeWithDefaultAdded
        | Kind::RequiredAttributeRemoved
        | Kind::DependencyArrayNarrowed
        | Kind::DependencyArrayRemoved
        | Kind::DependencySchemaRemoved
        | Kind::MaxPropertiesIncreased
        | Kind::MaxPropertiesRemoved
        | Kind::MinPropertiesDecreased
        | Kind::MinPropertiesRemoved
        | Kind::AdditionalPropertiesAdded
        | Kind::AdditionalPropertiesExtended
        | Kind::UnevaluatedPropertiesAdded
        | Kind::UnevaluatedPropertiesExtended
        | Kind::PropertyWithEmptySchemaAddedToOpenContentModel
        | Kind::RequiredPropertyWithDefaultAddedToUnopenContentModel
        | Kind::OptionalPropertyAddedToUnopenContentModel
        | Kind::PropertyWithFalseRemovedFromClosedContentModel
        | Kind::PropertyRemovedFromOpenContentModel
        | Kind::PropertyAddedIsCoveredByPartiallyOpenContentModel
        | Kind::PropertyRemovedIsCoveredByPartiallyOpenContentModel
        | Kind::MaxItemsIncreased
        | Kind::MaxItemsRemoved
        | Kind::MinItemsDecreased
        | Kind::MinItemsRemoved
        | Kind::MaxContainsIncreased
        | Kind::MaxContainsRemoved
        | Kind::MinContainsDecreased
        | Kind::MinContainsRemoved
        | Kind::UniqueItemsRemoved
        | Kind::AdditionalItemsAdded
        | Kind::AdditionalItemsExtended
        | Kind::UnevaluatedItemsAdded
        | Kind::UnevaluatedItemsExtended
        | Kind::ItemWithEmptySchemaAddedToOpenContentModel
        | Kind::ItemAddedToClosedContentModel
        | Kind::ItemWithFalseRemovedFromClosedContentModel
        | Kind::ItemRemovedFromOpenContentModel
        | Kind::ItemAddedIsCoveredByPartiallyOpenContentModel
        | Kind::ItemRemovedIsCoveredByPartiallyOpenContentModel
        | Kind::EnumArrayExtended
        | Kind::CombinedTypeExtended
        | Kind::ProductTypeNarrowed
        | Kind::SumTypeExtended
        | Kind::NotTypeNarrowed => true,
        // Content-model changes that only matter if writers put undeclared
        // properties into open objects: LENIENT assumes they do not.
        Kind::AdditionalPropertiesRemoved
        | Kind::AdditionalPropertiesNarrowed
        | Kind::UnevaluatedPropertiesRemoved
        | Kind::UnevaluatedPropertiesNarrowed
        | Kind::OptionalPropertyAddedToOpenContentModel
        | Kind::RequiredPropertyWithDefaultAddedToOpenContentModel
        | Kind::PropertyRemovedFromClosedContentModel
        | Kind::PropertyAddedNotCoveredByPartiallyOpenContentModel
        | Kind::PropertyRemovedNotCoveredByPartiallyOpenContentModel => lenient,
        // New or tighter constraints, and changed types: always breaking.
        Kind::SchemaAdded
        | Kind::TypeNarrowed
        | Kind::TypeChanged
        | Kind::MaxLengthAdded
        | Kind::MaxLengthDecreased
        | Kind::MinLengthAdded
        | Kind::MinLengthIncreased
        | Kind::PatternAdded
        | Kind::PatternChanged
        | Kind::MaximumAdded
        | Kind::MaximumDecreased
        | Kind::MinimumAdded
        | Kind::MinimumIncreased
        | Kind::ExclusiveMaximumAdded
        | Kind::ExclusiveMaximumDecreased
        | Kind::ExclusiveMinimumAdded
        | Kind::ExclusiveMinimumIncreased
        | Kind::MultipleOfAdded
        | Kind::MultipleOfExpanded
        | Kind::MultipleOfChanged
        | Kind::RequiredAttributeAdded
        | Kind::MaxPropertiesAdded
        | Kind::MaxPropertiesDecreased
        | Kind::MinPropertiesAdded
        | Kind::MinPropertiesIncreased
        | Kind::DependencyArrayAdded
        | Kind::DependencyArrayExtended
        | Kind::DependencyArrayChanged
        | Kind::DependencySchemaAdded
        | Kind::RequiredPropertyAddedToOpenContentModel
        | Kind::RequiredPropertyAddedToUnopenContentModel
        | Kind::MaxItemsAdded
        | Kind::MaxItemsDecreased
        | Kind::MinItemsAdded
        | Kind::MinItemsIncreased
        | Kind::MaxContainsAdded
        | Kind::MaxContainsDecreased
        | Kind::MinContainsAdded
        | Kind::MinContainsIncreased
        | Kind::UniqueItemsAdded
        | Kind::AdditionalItemsRemoved
        | Kind::AdditionalItemsNarrowed
        | Kind::UnevaluatedItemsRemoved
        | Kind::UnevaluatedItemsNarrowed
        | Kind::ItemAddedToOpenContentModel
        | Kind::ItemRemovedFromClosedContentModel
        | Kind::ItemRemovedNotCoveredByPartiallyOpenContentModel
        | Kind::ItemAddedNotCoveredByPartiallyOpenContentModel
        | Kind::EnumArrayNarrowed
        | Kind::EnumArrayChanged
        | Kind::CombinedTypeChanged
        | Kind::ProductTypeExtended
        | Kind::SumTypeNarrowed
        | Kind::CombinedTypeSubschemasChanged
        | Kind::NotTypeExtended => false,
    }
}

/// A JSON Schema document, parsed, validated and with its `$ref`s resolved.
#[derive(Debug, Clone)]
pub struct JsonSchema {
    draft: Draft,
    nodes: Vec<Node>,
    metas: Vec<Meta>,
    /// Per node: true when some `$ref` names it, so walks may meet it twice.
    shared: Vec<bool>,
    /// Per node read from the text: a fingerprint of its JSON, when its
    /// subtree has no `$ref` or `not` (which can differ, or report a
    /// difference, even where the text is the same).
    digests: Vec<Option<parse::Digest>>,
    root: NodeId,
    canonical: String,
}

impl JsonSchema {
    /// Parses a schema text.
    ///
    /// # Errors
    /// [`ParseError`] naming the problem and its place: text that is not
    /// JSON, a keyword of the wrong shape (`{"type": 5}`), a `$ref` that
    /// names nothing in the document or only leads round to itself.
    pub fn parse(schema: &SchemaText) -> Result<Self, ParseError> {
        let document: Value = serde_json::from_str(&schema.text).map_err(|error| {
            let message = error.to_string();
            let problem = if message.starts_with("recursion limit exceeded") {
                format!(
                    "the document nests more than {} levels deep",
                    super::json_tree::MAX_NESTING
                )
            } else if error.is_eof() {
                "the text ends before the JSON document does".to_owned()
            } else {
                let message = message.split(" at line ").next().unwrap_or(&message);
                format!("not valid JSON: {message}")
            };
            ParseError {
                problem,
                position: format!("line {} column {}", error.line(), error.column()),
            }
        })?;
        let parsed = parse::parse(&document)?;
        let mut shared = vec![false; parsed.nodes.len()];
        for node in &parsed.nodes {
            if let Node::Ref(target) = node {
                shared[*target as usize] = true;
            }
        }
        Ok(Self {
            shared,
            digests: parsed.digests,
            draft: parsed.draft,
            nodes: parsed.nodes,
            metas: parsed.metas,
            root: parsed.root,
            canonical: document.to_string(),
        })
    }

    /// The draft the document was read with.
    pub fn draft(&self) -> Draft {
        self.draft
    }

    /// The canonical text: the document with keys sorted and no whitespace,
    /// so layout and key order do not change a schema's identity.
    pub fn canonical(&self) -> String {
        self.canonical.clone()
    }

    /// SHA-256 of the canonical text, in lowercase hex.
    pub fn fingerprint(&self) -> String {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(self.canonical.as_bytes());
        digest.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// How many schema nodes the document has: a measure of checking cost.
    pub fn size(&self) -> usize {
        self.nodes.len()
    }
}

/// One difference between two schemas, as Confluent's `SchemaDiff` reports it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Change {
    /// Confluent's type name.
    pub kind: Kind,
    /// Where: a JSON Pointer into the update (or into the original, for
    /// what the update no longer has); [`SchemaPath::to_confluent`] gives
    /// Confluent's `#/properties/foo` form.
    pub path: SchemaPath,
}

/// The walk could not finish within its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "too complex to decide: comparing the schemas needs more than {budget} steps or nests deeper than \
     the checker allows (combined schemas compare every pair of subschemas); simplify the \
     anyOf/oneOf/allOf nesting or the chains of `$ref`"
)]
pub struct TooComplex {
    /// The budget that ran out.
    pub budget: usize,
}

/// Every difference from `original` to `update`, with Confluent's kinds
/// and paths. Which sub-comparisons count as compatible (matching combined
/// subschemas, partially open models) depends on `policy`, as in Confluent.
///
/// # Errors
/// [`TooComplex`] when the walk needs more than `budget` comparisons.
pub fn differences(
    original: &JsonSchema,
    update: &JsonSchema,
    policy: JsonPolicy,
    budget: usize,
) -> Result<Vec<Change>, TooComplex> {
    let shallow = diff::Differ::new(original, update, policy, budget, diff::SHALLOW_MAX_DEPTH).run();
    let raw = match shallow {
        Ok(raw) => raw,
        Err(error) if error.too_deep => deep_walk(original, update, policy, budget)?,
        Err(_) => return Err(TooComplex { budget }),
    };
    Ok(raw
        .iter()
        .map(|change| {
            let mut path = SchemaPath::root();
            for step in diff::steps_of(change) {
                path = match step {
                    diff::Step::Key(key) => path.key(key),
                    diff::Step::Index(index) => path.index(index),
                };
            }
            Change {
                kind: change.kind,
                path,
            }
        })
        .collect())
}

/// The walk again, on a thread with a stack large enough for deeply
/// recursive schemas; still bounded by the step budget and a depth limit.
fn deep_walk<'a>(
    original: &'a JsonSchema,
    update: &'a JsonSchema,
    policy: JsonPolicy,
    budget: usize,
) -> Result<Vec<diff::RawChange<'a>>, TooComplex> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("json-schema-diff".to_owned())
            .stack_size(diff::DEEP_STACK_BYTES)
            .spawn_scoped(scope, || {
                diff::Differ::new(original, update, policy, budget, diff::DEEP_MAX_DEPTH).run()
            })
            .ok()
            .and_then(|handle| handle.join().ok())
            .and_then(Result::ok)
            .ok_or(TooComplex { budget })
    })
}

/// Every incompatibility between `candidate` and the earlier version at
/// 1-based position `version`, in one `direction`, under `policy`.
pub(crate) fn check(
    candidate: &JsonSchema,
    earlier: &JsonSchema,
    direction: Direction,
    version: usize,
    policy: JsonPolicy,
    budget: usize,
) -> Result<Vec<Incompatibility>, TooComplex> {
    let (original, update) = match direction {
        Direction::Backward => (earlier, candidate),
        Direction::Forward => (candidate, earlier),
    };
    let sides = Sides { direction, version };
    Ok(differences(original, update, policy, budget)?
        .into_iter()
        .filter(|change| !is_compatible(change.kind, policy))
        .map(|change| Incompatibility {
            kind: super::Kind::Json(change.kind),
            message: format!(
                "{}: {}",
                explain(change.kind, &change.path, &sides),
                sides.consequence()
            ),
            path: change.path,
            version,
        })
        .collect())
}

/// Who writes the data and who reads it, in words.
struct Sides {
    direction: Direction,
    version: usize,
}

impl Sides {
    fn writer(&self) -> String {
        match self.direction {
            Direction::Backward => format!("version {}", self.version),
            Direction::Forward => "the new schema".to_owned(),
        }
    }

    fn reader(&self) -> String {
        match self.direction {
            Direction::Backward => "the new schema".to_owned(),
            Direction::Forward => format!("version {}", self.version),
        }
    }

    fn consequence(&self) -> String {
        match self.direction {
            Direction::Backward => format!(
                "consumers using the new schema may reject records written with version {}",
                self.version
            ),
            Direction::Forward => format!(
                "consumers still using version {} may reject records written with the new schema",
                self.version
            ),
        }
    }
}

/// The last key of a path: the property or keyword a change is about.
fn last_name(path: &SchemaPath) -> String {
    match path.segments().last() {
        Some(super::Segment::Key(key)) => key.clone(),
        Some(super::Segment::Index(index)) => index.to_string(),
        None => "/".to_owned(),
    }
}

/// What changed at `path`, in a sentence, without the consequence.
fn explain(kind: Kind, path: &SchemaPath, sides: &Sides) -> String {
    let (writer, reader) = (sides.writer(), sides.reader());
    let name = last_name(path);
    match kind {
        Kind::OptionalPropertyAddedToOpenContentModel
        | Kind::RequiredPropertyAddedToOpenContentModel
        | Kind::RequiredPropertyWithDefaultAddedToOpenContentModel => format!(
            "property `{name}` (at {path}) is declared by {reader} but not by {writer}, whose object is open \
             (additional properties allowed), so data written with {writer} may already carry a `{name}` of \
             another type; close the object in {writer} (`additionalProperties: false`) or leave the property out"
        ),
        Kind::RequiredPropertyAddedToUnopenContentModel => format!(
            "property `{name}` (at {path}) is required by {reader} without a default, but {writer}'s object is \
             closed or partially open and does not declare it, so its data lacks `{name}`"
        ),
        Kind::PropertyRemovedFromClosedContentModel => format!(
            "property `{name}` (at {path}) is declared by {writer} but not by {reader}, whose object is closed \
             (`additionalProperties: false`), so data carrying `{name}` is refused"
        ),
        Kind::PropertyAddedNotCoveredByPartiallyOpenContentModel => format!(
            "property `{name}` (at {path}) is declared by {reader} with a schema that does not accept what \
             {writer}'s partially open object (patternProperties or an additionalProperties schema) allowed under that name"
        ),
        Kind::PropertyRemovedNotCoveredByPartiallyOpenContentModel => format!(
            "property `{name}` (at {path}) is declared by {writer} but not by {reader}, whose partially open \
             object (patternProperties or an additionalProperties schema) does not accept its values"
        ),
        Kind::AdditionalPropertiesRemoved | Kind::UnevaluatedPropertiesRemoved => format!(
            "the object at {} is open in {writer} but closed in {reader}, so properties {writer} allowed \
             beyond the declared ones are refused; an open object can never be closed compatibly",
            parent(path)
        ),
        Kind::AdditionalPropertiesNarrowed | Kind::UnevaluatedPropertiesNarrowed => format!(
            "the object at {} allows any additional property in {writer} but only ones matching a schema in \
             {reader} (open to partially open)",
            parent(path)
        ),
        Kind::ItemAddedToOpenContentModel => format!(
            "item {name} (at {path}) is constrained by {reader}, but {writer}'s array allows any additional item there"
        ),
        Kind::ItemRemovedFromClosedContentModel => {
            format!("item {name} (at {path}) exists in {writer} but {reader}'s array allows no additional items")
        }
        Kind::ItemAddedNotCoveredByPartiallyOpenContentModel
        | Kind::ItemRemovedNotCoveredByPartiallyOpenContentModel => format!(
            "item {name} (at {path}) has a schema that does not accept what the other version's additional items allow"
        ),
        Kind::TypeChanged => format!("the type at {path} differs between {writer} and {reader}"),
        Kind::TypeNarrowed => format!("the type at {path} was narrowed from number to integer in {reader}"),
        Kind::SchemaAdded => format!("{reader} adds a schema at {path} where {writer} had none"),
        Kind::RequiredAttributeAdded => {
            format!("property `{name}` (at {path}) is required by {reader} without a default, but optional in {writer}")
        }
        Kind::EnumArrayNarrowed => format!("the enum at {path} lost values that {writer} allows"),
        Kind::EnumArrayChanged => format!("the allowed values at {path} differ between {writer} and {reader}"),
        Kind::CombinedTypeChanged => format!(
            "the combination at {path} changed between allOf, anyOf and oneOf in a way that rejects data {writer} allows"
        ),
        Kind::CombinedTypeSubschemasChanged => {
            format!("the subschemas at {path} cannot be matched one to one between {writer} and {reader}")
        }
        Kind::SumTypeNarrowed => format!("the anyOf/oneOf at {path} has fewer alternatives in {reader}"),
        Kind::ProductTypeExtended => format!("the allOf at {path} has more subschemas in {reader}"),
        Kind::NotTypeExtended => format!("the `not` at {path} forbids more in {reader} than in {writer}"),
        Kind::DependencyArrayAdded
        | Kind::DependencyArrayExtended
        | Kind::DependencyArrayChanged
        | Kind::DependencySchemaAdded => {
            format!("the dependency of `{name}` (at {path}) demands more in {reader} than in {writer}")
        }
        Kind::AdditionalItemsRemoved
        | Kind::AdditionalItemsNarrowed
        | Kind::UnevaluatedItemsRemoved
        | Kind::UnevaluatedItemsNarrowed => format!(
            "the array at {} allows fewer additional items in {reader} than in {writer}",
            parent(path)
        ),
        other => format!(
            "`{name}` at {path} is stricter in {reader} than in {writer} ({})",
            other.as_str().to_ascii_lowercase().replace('_', " ")
        ),
    }
}

fn parent(path: &SchemaPath) -> SchemaPath {
    let mut parent = SchemaPath::root();
    let segments = path.segments();
    for segment in &segments[..segments.len().saturating_sub(1)] {
        parent = match segment {
            super::Segment::Key(key) => parent.key(key),
            super::Segment::Index(index) => parent.index(*index),
        };
    }
    parent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_accepts_every_kind_strict_accepts() {
        for &kind in Kind::ALL {
            if is_compatible(kind, JsonPolicy::Strict) {
                assert!(is_compatible(kind, JsonPolicy::Lenient), "{kind}");
            }
        }
    }

    #[test]
    fn every_kind_reads_back_from_its_confluent_name() {
        for &kind in Kind::ALL {
            assert_eq!(kind.as_str().parse::<Kind>(), Ok(kind));
            assert_eq!(serde_json::to_string(&kind).ok(), Some(format!("\"{kind}\"")));
        }
        assert!("NOT_A_KIND".parse::<Kind>().is_err());
    }

    #[test]
    fn policies_parse_in_any_case() {
        assert_eq!("lenient".parse::<JsonPolicy>(), Ok(JsonPolicy::Lenient));
        assert_eq!("STRICT".parse::<JsonPolicy>(), Ok(JsonPolicy::Strict));
        let error = "sloppy".parse::<JsonPolicy>().unwrap_err().to_string();
        assert!(error.contains("STRICT, LENIENT"), "{error}");
    }

    #[test]
    fn a_draft_is_chosen_by_its_schema_uri() {
        let draft = |text: &str| JsonSchema::parse(&SchemaText::new(text)).map(|schema| schema.draft());
        assert_eq!(draft("{}"), Ok(Draft::Draft7));
        assert_eq!(
            draft(r#"{"$schema":"http://json-schema.org/draft-04/schema#"}"#),
            Ok(Draft::Draft4)
        );
        assert_eq!(
            draft(r#"{"$schema":"http://json-schema.org/draft-06/schema#"}"#),
            Ok(Draft::Draft6)
        );
        assert_eq!(
            draft(r#"{"$schema":"https://json-schema.org/draft/2019-09/schema"}"#),
            Ok(Draft::Draft2019)
        );
        assert_eq!(
            draft(r#"{"$schema":"https://json-schema.org/draft/2020-12/schema"}"#),
            Ok(Draft::Draft2020)
        );
    }
}
