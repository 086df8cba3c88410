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

/// An HTTP client for the tests. reqwest is built without a crypto provider
/// (the crate uses ring only), so its rustls configuration is given here;
/// `roots` are the CAs it trusts for `https://` URLs.
pub fn http_client_trusting(roots: rustls::RootCertStore) -> reqwest::Client {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .build()
        .expect("the client builds")
}

/// An HTTP client for plain `http://` test servers.
pub fn http_client() -> reqwest::Client {
    http_client_trusting(rustls::RootCertStore::empty())
}
