//! SASL to a real broker (Tansu 0.6.0 with `--authentication`, issue 43):
//! the client speaks SaslHandshake and SaslAuthenticate, and every way of
//! being refused ends in an error that names the cause — a user the broker
//! does not accept (with the broker's own message), a mechanism it does not
//! offer (with the ones it does), no SASL at all — and a registry on such a
//! broker refuses to start with that error.
//!
//! The accepted path (a registry serving on a SCRAM-authenticated topic) is
//! not run here: Tansu 0.6.0 creates SCRAM users only through a broker that
//! does not authenticate, and the storage engines of the packaged build
//! (memory, S3) do not carry them to one that does (see the book's Kafka
//! store page). The SCRAM computation itself is tested against RFC 7677's
//! published exchange in `src/registry/embedded/kafka/sasl.rs`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use schemaops::registry::embedded::kafka::client::{ClientError, Connection, Transport};
use schemaops::registry::embedded::kafka::sasl::{SaslCredentials, SaslMechanism};
use support::broker::Broker;

const TIMEOUT: Duration = Duration::from_secs(20);

fn transport(mechanism: SaslMechanism, username: &str, password: &str) -> Transport {
    Transport {
        timeout: TIMEOUT,
        tls: None,
        sasl: Some(Arc::new(SaslCredentials {
            mechanism,
            username: username.to_owned(),
            password: password.to_owned(),
        })),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_name_the_user_the_mechanism_and_the_broker_s_message() {
    let Some(broker) = Broker::start_authenticating_or_skip() else {
        return;
    };
    for mechanism in [SaslMechanism::ScramSha256, SaslMechanism::ScramSha512] {
        let Err(error) = Connection::connect(&broker.address, transport(mechanism, "alice", "wrong")).await else {
            panic!("{mechanism}: a user the broker does not know was let in");
        };
        let text = error.to_string();
        assert!(
            matches!(error, ClientError::SaslAuthentication { .. }),
            "{mechanism}: {text}"
        );
        let expected = format!("SASL authentication failed for user alice with {mechanism}: ");
        assert!(text.starts_with(&expected), "{text}");
        // Tansu's SCRAM server answers `e=unknown-user` for a user it does not know.
        assert!(text.contains("unknown-user"), "{text}");
    }

    // Without SASL the broker answers ApiVersions, then closes the connection
    // at the first other request; the error says why that may be.
    let mut connection = Connection::connect(&broker.address, TIMEOUT).await.unwrap();
    let Err(error) = connection.live_brokers().await else {
        panic!("a client without SASL was let in");
    };
    let text = error.to_string();
    assert!(text.contains("--store-sasl-mechanism"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mechanism_the_broker_does_not_offer_lists_the_ones_it_does() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    // A broker without `--authentication` offers no mechanism that works;
    // Tansu 0.6.0 answers UNSUPPORTED_SASL_MECHANISM, listing the one asked for.
    let Err(error) = Connection::connect(&broker.address, transport(SaslMechanism::Plain, "alice", "pw")).await else {
        panic!("PLAIN was accepted by a broker that does not authenticate");
    };
    let text = error.to_string();
    assert!(matches!(error, ClientError::SaslMechanism { .. }), "{text}");
    assert!(
        text.contains("does not offer the SASL mechanism PLAIN; it offers: "),
        "{text}"
    );
}

/// Runs `schemaops registry` on `broker`'s `_schemas` topic with `extra`
/// flags and `env`, which must fail to start: its stderr.
fn registry_refusing_to_start(broker: &Broker, extra: &[&str], env: &[(&str, &str)]) -> String {
    let store = format!("kafka://{}/_schemas", broker.address);
    let args: Vec<&str> = ["--store", store.as_str()]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    support::registry::refusing_to_start(&args, env, Duration::from_secs(60))
}

#[test]
fn a_registry_refused_by_the_broker_does_not_start_and_says_why() {
    let Some(broker) = Broker::start_authenticating_or_skip() else {
        return;
    };
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let stderr = registry_refusing_to_start(
            &broker,
            &["--store-sasl-mechanism", mechanism, "--store-sasl-username", "registry"],
            &[("SCHEMAOPS_STORE_SASL_PASSWORD", "not-the-password")],
        );
        assert!(
            stderr.contains(&format!(
                "SASL authentication failed for user registry with {mechanism}: "
            )),
            "{stderr}"
        );
        assert!(!stderr.contains("not-the-password"), "the password leaked: {stderr}");
    }

    // The password from a file works the same.
    let folder = tempfile::tempdir().unwrap();
    let password_file = folder.path().join("password");
    std::fs::write(&password_file, "from-a-file\n").unwrap();
    let stderr = registry_refusing_to_start(
        &broker,
        &[
            "--store-sasl-mechanism",
            "SCRAM-SHA-256",
            "--store-sasl-username",
            "registry",
            "--store-sasl-password-file",
            password_file.to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        stderr.contains("SASL authentication failed for user registry"),
        "{stderr}"
    );

    // No SASL against a broker that requires it.
    let stderr = registry_refusing_to_start(&broker, &[], &[]);
    assert!(stderr.contains("--store-sasl-mechanism"), "{stderr}");

    // A mechanism without a password fails before any connection.
    let stderr = registry_refusing_to_start(
        &broker,
        &["--store-sasl-mechanism", "PLAIN", "--store-sasl-username", "registry"],
        &[],
    );
    assert!(stderr.contains("SCHEMAOPS_STORE_SASL_PASSWORD"), "{stderr}");
}
