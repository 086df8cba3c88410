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

/// A reqwest client for plain-HTTP test servers. reqwest is built without a
/// default crypto provider (`rustls-no-provider`), so `Client::new()` panics;
/// this hands it a ring-based rustls configuration instead.
pub fn http_client() -> reqwest::Client {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .build()
        .expect("the HTTP client builds")
}
