//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod avro_gen;
pub mod corpus;
pub mod http;
pub mod laws;
pub mod operator;
pub mod postgres;
pub mod refusal;
pub mod registry;

#[allow(unused_imports)] // Not every test binary makes HTTP calls.
pub use http::{http_client, http_client_trusting};

/// Whether every test must run, even one whose outside tool is missing (CI sets it).
pub fn require_all() -> bool {
    std::env::var("SCHEMAOPS_REQUIRE_ALL").is_ok_and(|value| value == "1")
}
