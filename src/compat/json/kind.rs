//! Confluent's difference types for JSON Schema, by name.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

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
    type Err = crate::compat::UnknownName;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Kind::ALL
            .iter()
            .copied()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| {
                crate::compat::UnknownName::new(
                    "JSON Schema difference type",
                    text,
                    "Confluent's Difference.Type names",
                )
            })
    }
}
