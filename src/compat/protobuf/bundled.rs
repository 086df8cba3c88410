//! The `.proto` files Confluent's registry knows without a reference,
//! beyond protobuf's own well-known types (which protox bundles): Google's
//! common types (`google/type/*.proto`: money, date, postal address, …) and
//! Confluent's own (`confluent/meta.proto`, `confluent/type/decimal.proto`).
//! A schema may import them by these paths, as with Confluent.
//!
//! The files under `bundled/` are written from the public definitions' facts
//! (package, message and field names, numbers and types), nothing else.

use protox::file::{File, FileResolver};

/// Every bundled file: its import path and text.
pub const FILES: [(&str, &str); 19] = [
    ("confluent/meta.proto", include_str!("bundled/confluent/meta.proto")),
    (
        "confluent/type/decimal.proto",
        include_str!("bundled/confluent/type/decimal.proto"),
    ),
    (
        "google/type/calendar_period.proto",
        include_str!("bundled/google/type/calendar_period.proto"),
    ),
    (
        "google/type/color.proto",
        include_str!("bundled/google/type/color.proto"),
    ),
    ("google/type/date.proto", include_str!("bundled/google/type/date.proto")),
    (
        "google/type/datetime.proto",
        include_str!("bundled/google/type/datetime.proto"),
    ),
    (
        "google/type/dayofweek.proto",
        include_str!("bundled/google/type/dayofweek.proto"),
    ),
    (
        "google/type/decimal.proto",
        include_str!("bundled/google/type/decimal.proto"),
    ),
    ("google/type/expr.proto", include_str!("bundled/google/type/expr.proto")),
    (
        "google/type/fraction.proto",
        include_str!("bundled/google/type/fraction.proto"),
    ),
    (
        "google/type/interval.proto",
        include_str!("bundled/google/type/interval.proto"),
    ),
    (
        "google/type/latlng.proto",
        include_str!("bundled/google/type/latlng.proto"),
    ),
    (
        "google/type/localized_text.proto",
        include_str!("bundled/google/type/localized_text.proto"),
    ),
    (
        "google/type/money.proto",
        include_str!("bundled/google/type/money.proto"),
    ),
    (
        "google/type/month.proto",
        include_str!("bundled/google/type/month.proto"),
    ),
    (
        "google/type/phone_number.proto",
        include_str!("bundled/google/type/phone_number.proto"),
    ),
    (
        "google/type/postal_address.proto",
        include_str!("bundled/google/type/postal_address.proto"),
    ),
    (
        "google/type/quaternion.proto",
        include_str!("bundled/google/type/quaternion.proto"),
    ),
    (
        "google/type/timeofday.proto",
        include_str!("bundled/google/type/timeofday.proto"),
    ),
];

/// Resolves imports of the bundled files.
#[derive(Debug, Default, Clone, Copy)]
pub struct BundledFileResolver;

impl FileResolver for BundledFileResolver {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match FILES.iter().find(|(path, _)| *path == name) {
            Some((path, text)) => File::from_source(path, text),
            None => Err(protox::Error::file_not_found(name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::{Format, SchemaRole, SchemaText};

    #[test]
    fn every_bundled_file_compiles_and_a_schema_may_import_it() {
        for (path, _) in FILES {
            let text = format!("syntax = \"proto3\";\npackage p;\nimport \"{path}\";\nmessage M {{ int32 a = 1; }}\n");
            let schema = SchemaText {
                text,
                references: Vec::new(),
            };
            let checker = crate::compat::Checker::new(crate::compat::Limits::default());
            let parsed = checker.parse(Format::Protobuf, SchemaRole::Candidate, &schema);
            assert!(parsed.is_ok(), "{path}: {:?}", parsed.err());
        }
    }
}
