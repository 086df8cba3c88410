//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod avro_gen;
pub mod corpus;
pub mod laws;
pub mod operator;
pub mod refusal;
pub mod registry;

/// Whether every test must run, even one whose outside tool is missing (CI sets it).
pub fn require_all() -> bool {
    std::env::var("SCHEMAOPS_REQUIRE_ALL").is_ok_and(|value| value == "1")
}

/// An HTTP client for tests. reqwest is built without a TLS crypto provider
/// of its own (the crate uses ring only), so the process default is set first.
pub fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}
