//! HTTP clients for tests and benches. reqwest is built without a crypto
//! provider of its own (the crate uses ring only), so each client gets a
//! ring-based rustls configuration. Benches include this file on its own.

/// A client that trusts `roots` for `https://` URLs.
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

/// A client for plain `http://` test servers.
pub fn http_client() -> reqwest::Client {
    http_client_trusting(rustls::RootCertStore::empty())
}
