//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod avro_evolution;
pub mod avro_gen;
pub mod broker;
pub mod corpus;
pub mod durability;
pub mod http;
pub mod laws;
pub mod openapi;
pub mod operator;
pub mod postgres;
pub mod precision;
pub mod python;
pub mod refusal;
pub mod registry;
pub mod registry_double;
pub mod shapes;
pub mod storm;

#[allow(unused_imports)] // Not every test binary makes HTTP calls.
pub use http::{http_client, http_client_trusting};

/// Whether every test must run, even one whose outside tool is missing (CI sets it).
pub fn require_all() -> bool {
    std::env::var("SCHEMAOPS_REQUIRE_ALL").is_ok_and(|value| value == "1")
}

/// The Prometheus text served at `{base_url}/metrics`.
pub async fn scrape(base_url: &str) -> String {
    http_client()
        .get(format!("{base_url}/metrics"))
        .send()
        .await
        .expect("the metrics endpoint answers")
        .text()
        .await
        .expect("a text body")
}

/// The value of one series in a Prometheus text scrape, e.g.
/// `metric(text, r#"schemaops_reconciles_total{kind="Schema",registry="default",result="ok"}"#)`.
pub fn metric(scrape: &str, series: &str) -> Option<f64> {
    scrape.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.split_whitespace().next()?.parse().ok()
    })
}
