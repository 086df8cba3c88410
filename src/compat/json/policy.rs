//! The judging half of the check: Confluent's two policies and the one
//! table that says, for every kind of difference, whether it keeps data
//! flowing from the original's writers to the update's readers.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::Kind;

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
    type Err = crate::compat::UnknownName;

    /// Accepts `strict` or `lenient` in any case.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_uppercase().as_str() {
            "STRICT" => Ok(JsonPolicy::Strict),
            "LENIENT" => Ok(JsonPolicy::Lenient),
            _ => Err(crate::compat::UnknownName::new(
                "JSON Schema policy",
                text,
                "STRICT, LENIENT",
            )),
        }
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
