use clap::CommandFactory;

use super::*;
use crate::compat::{Format, Mode};
use crate::registry::api::{AccessPolicy, RestWrites};
use crate::registry::embedded::postgres::PostgresOptions;
use crate::registry::external::ExternalAuth;

#[test]
fn verify_cli() {
    Cli::command().debug_assert();
}

#[test]
fn leader_election_is_off_by_default_and_takes_its_timings_from_the_flags() {
    assert!(operator_config(&[]).unwrap().leader_election.is_none());
    let election = operator_config(&[
        "--leader-election",
        "--lease-namespace",
        "ops",
        "--lease-duration-seconds",
        "3",
        "--renew-seconds",
        "1",
    ])
    .unwrap()
    .leader_election
    .unwrap();
    assert_eq!(election.lease_name, "schemaops-leader");
    assert_eq!(election.lease_namespace, "ops");
    assert_eq!(election.lease_duration, std::time::Duration::from_secs(3));
    assert_eq!(election.renew_period, std::time::Duration::from_secs(1));
    assert!(!election.identity.is_empty());
}

#[test]
fn a_renew_period_not_shorter_than_the_lease_is_refused() {
    let error = operator_config(&[
        "--leader-election",
        "--lease-duration-seconds",
        "5",
        "--renew-seconds",
        "5",
    ])
    .unwrap_err();
    assert!(error.contains("--renew-seconds"), "{error}");
}

#[test]
fn a_pair_check_resolves_into_a_pair_job() {
    let cli = Cli::parse_from([
        "schemaops",
        "compat",
        "--mode",
        "full_transitive",
        "--previous",
        "a.avsc",
        "--previous",
        "b.avsc",
        "--candidate",
        "c.avsc",
    ]);
    let Command::Compat(args) = cli.command else {
        panic!("a compat command");
    };
    let config = args.into_config().unwrap();
    assert_eq!(
        config.job,
        CompatJob::Pair {
            format: Format::Avro,
            mode: Mode::FullTransitive,
            previous: vec!["a.avsc".into(), "b.avsc".into()],
            candidate: "c.avsc".into(),
            references: Vec::new(),
            output: OutputFormat::Text,
        }
    );
}

fn operator_config(args: &[&str]) -> Result<OperatorConfig, String> {
    let cli = Cli::try_parse_from(["schemaops", "operator"].iter().chain(args)).map_err(|e| e.to_string())?;
    let Command::Operator(args) = cli.command else {
        panic!("an operator command");
    };
    args.into_config()
}

#[test]
fn the_webhook_is_off_unless_an_address_is_given() {
    assert_eq!(operator_config(&[]).unwrap().webhook, None);
}

#[test]
fn a_generated_webhook_certificate_names_the_service_in_the_watched_namespace() {
    let config = operator_config(&["--webhook-listen", "127.0.0.1:0", "--namespace", "kafka"]).unwrap();
    let webhook = config.webhook.unwrap();
    let WebhookCertificate::Generated { names } = webhook.certificate else {
        panic!("a generated certificate");
    };
    assert!(names.contains(&"schemaops-webhook.kafka.svc".to_owned()), "{names:?}");
    assert!(names.contains(&"localhost".to_owned()) && names.contains(&"127.0.0.1".to_owned()));
}

#[test]
fn webhook_dns_names_repeat_and_replace_the_defaults() {
    let config = operator_config(&[
        "--webhook-listen",
        "127.0.0.1:0",
        "--webhook-dns-name",
        "a.example",
        "--webhook-dns-name",
        "b.example",
    ])
    .unwrap();
    assert_eq!(
        config.webhook.unwrap().certificate,
        WebhookCertificate::Generated {
            names: vec!["a.example".to_owned(), "b.example".to_owned()]
        }
    );
}

#[test]
fn a_webhook_certificate_file_needs_its_key() {
    let error = operator_config(&["--webhook-listen", "127.0.0.1:0", "--webhook-cert-file", "tls.crt"]).unwrap_err();
    assert!(error.contains("--webhook-key-file"), "{error}");
}

#[test]
fn registry_defaults_listen_on_loopback_with_data_in_dot_schemaops() {
    let cli = Cli::parse_from(["schemaops", "registry"]);
    let Command::Registry(args) = cli.command else {
        panic!("a registry command");
    };
    let config = args.into_config().unwrap();
    assert_eq!(config.listen.to_string(), "127.0.0.1:8081");
    assert_eq!(config.database, std::path::PathBuf::from(".schemaops/registry.db"));
    assert_eq!(config.postgres, None);
    assert_eq!(config.access, AccessPolicy::default());
}

#[test]
fn the_operator_listens_on_loopback_and_takes_rest_writes_as_gitops_only_by_default() {
    let config = operator_config(&[]).unwrap();
    assert_eq!(config.registry_listen.to_string(), "127.0.0.1:8081");
    assert_eq!(config.health_listen.to_string(), "127.0.0.1:8080");
    assert_eq!(config.access.writes, RestWrites::GitOpsOnly);
    let open = operator_config(&["--rest-writes", "open", "--admin-credentials", "root:pw"]).unwrap();
    assert_eq!(open.access.writes, RestWrites::Open);
    assert_eq!(open.access.admins.len(), 1);
}

#[test]
fn an_empty_admin_credentials_file_stops_the_start_with_the_flag_named() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let path = file.path().to_str().unwrap();
    let error = operator_config(&["--admin-credentials-file", path]).unwrap_err();
    assert!(
        error.contains("--admin-credentials-file") && error.contains("holds no credentials"),
        "{error}"
    );
    let error = operator_config(&["--admin-credentials-file", "/nonexistent/admin"]).unwrap_err();
    assert!(
        error.contains("cannot read the credentials file /nonexistent/admin"),
        "{error}"
    );
}

#[test]
fn store_takes_only_a_postgres_url() {
    let registry = |store: &str| {
        let cli = Cli::parse_from(["schemaops", "registry", "--store", store]);
        let Command::Registry(args) = cli.command else {
            panic!("a registry command");
        };
        args.into_config()
    };
    let config = registry("postgres://u:p@db:5432/registry").unwrap();
    assert_eq!(
        config.postgres,
        Some(PostgresOptions::new("postgres://u:p@db:5432/registry"))
    );
    let error = registry("mysql://db/registry").unwrap_err();
    assert!(error.contains("--store"), "{error}");
    let config = operator_config(&["--store", "postgresql://db/registry"]).unwrap();
    assert_eq!(config.postgres, Some(PostgresOptions::new("postgresql://db/registry")));
}

fn registry_config(args: &[&str]) -> Result<RegistryConfig, String> {
    let cli = Cli::try_parse_from(["schemaops", "registry"].iter().chain(args)).map_err(|e| e.to_string())?;
    let Command::Registry(args) = cli.command else {
        panic!("a registry command");
    };
    args.into_config()
}

#[test]
fn a_store_ca_file_needs_a_store_whose_dsn_says_sslmode_require() {
    let ca = tempfile::NamedTempFile::new().unwrap();
    let ca = ca.path().to_str().unwrap();
    let with_tls = "postgres://u:secret@db:5432/registry?sslmode=require";
    type Run = fn(&[&str]) -> Result<Option<PostgresOptions>, String>;
    let commands: [(&str, Run); 2] = [
        ("registry", |args| registry_config(args).map(|config| config.postgres)),
        ("operator", |args| operator_config(args).map(|config| config.postgres)),
    ];
    for (command, run) in commands {
        let error = run(&["--store-ca-file", ca]).unwrap_err();
        assert!(error.contains("--store-ca-file needs --store"), "{command}: {error}");
        for plain in [
            "postgres://u:secret@db:5432/registry",
            "postgres://u:secret@db:5432/registry?sslmode=prefer",
            "postgres://u:secret@db:5432/registry?sslmode=disable",
        ] {
            let error = run(&["--store", plain, "--store-ca-file", ca]).unwrap_err();
            assert!(error.contains("add sslmode=require"), "{command} {plain}: {error}");
            assert!(!error.contains("secret"), "{command}: the password leaked: {error}");
            // Without the CA file, the same DSNs are plain connections, as before.
            assert_eq!(run(&["--store", plain]).unwrap(), Some(PostgresOptions::new(plain)));
        }
        let options = run(&["--store", with_tls, "--store-ca-file", ca]).unwrap().unwrap();
        assert_eq!(options.ca_file.as_deref(), Some(std::path::Path::new(ca)), "{command}");
        assert!(!format!("{options:?}").contains("secret"), "{command}: {options:?}");
        assert_eq!(
            run(&["--store", with_tls]).unwrap(),
            Some(PostgresOptions::new(with_tls)),
            "{command}: the system's CAs alone"
        );
        let error = run(&["--store", with_tls, "--store-ca-file", "/nonexistent/ca.pem"]).unwrap_err();
        assert!(
            error.contains("--store-ca-file /nonexistent/ca.pem is not a readable file"),
            "{command}: {error}"
        );
        // libpq's verify-full is what require means here; tokio-postgres knows no other names.
        let error = run(&["--store", "postgres://u:secret@db/registry?sslmode=verify-full"]).unwrap_err();
        assert!(
            error.contains("--store is not a valid PostgreSQL URL"),
            "{command}: {error}"
        );
        assert!(!error.contains("secret"), "{command}: the password leaked: {error}");
    }
}

#[test]
fn a_store_client_certificate_needs_its_key_a_store_and_sslmode_require() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let file = file.path().to_str().unwrap();
    let with_tls = "postgres://u:secret@db:5432/registry?sslmode=require";
    let identity = ["--store-client-cert", file, "--store-client-key", file];
    let registry = |args: &[&str]| registry_config(args).map(|config| config.postgres);
    let error = registry(&identity).unwrap_err();
    assert!(error.contains("--store-client-cert needs --store"), "{error}");
    let error = registry(&[&["--store", "postgres://u:secret@db/registry"][..], &identity].concat()).unwrap_err();
    assert!(error.contains("add sslmode=require"), "{error}");
    assert!(!error.contains("secret"), "the password leaked: {error}");
    let error = registry(&["--store", with_tls, "--store-client-cert", file]).unwrap_err();
    assert!(
        error.contains("--store-client-cert needs --store-client-key"),
        "{error}"
    );
    let error = registry(&["--store", with_tls, "--store-client-key", file]).unwrap_err();
    assert!(
        error.contains("--store-client-key needs --store-client-cert"),
        "{error}"
    );
    let options = operator_config(&[&["--store", with_tls][..], &identity].concat())
        .unwrap()
        .postgres
        .unwrap();
    assert_eq!(options.client_identity, Some((file.into(), file.into())));
    assert!(!format!("{options:?}").contains("secret"), "{options:?}");
}

#[test]
fn inline_credentials_are_comma_separated() {
    let cli = Cli::parse_from(["schemaops", "registry", "--write-credentials", "ci:pw, token2"]);
    let Command::Registry(args) = cli.command else {
        panic!("a registry command");
    };
    assert_eq!(args.into_config().unwrap().access.writers.len(), 2);
}

#[test]
fn without_a_registry_url_the_embedded_registry_is_used() {
    assert_eq!(operator_config(&[]).unwrap().external_registry, None);
    let error = operator_config(&["--registry-ca-file", "ca.pem"]).unwrap_err();
    assert!(error.contains("--registry-ca-file needs --registry-url"), "{error}");
}

#[test]
fn registry_basic_credentials_come_from_flags_or_a_file_and_never_show() {
    let config = operator_config(&[
        "--registry-url",
        "https://registry.example:8081/apis/ccompat/v7",
        "--registry-username",
        "alice",
        "--registry-password",
        "hunter2-secret",
    ])
    .unwrap()
    .external_registry
    .unwrap();
    assert_eq!(
        config.auth,
        ExternalAuth::Basic {
            user: "alice".to_owned(),
            password: "hunter2-secret".to_owned()
        }
    );
    assert!(!format!("{config:?}").contains("hunter2-secret"));
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("token");
    std::fs::write(&file, "tok-abc\n").unwrap();
    let config = operator_config(&[
        "--registry-url",
        "http://127.0.0.1:8081",
        "--registry-token-file",
        file.to_str().unwrap(),
    ])
    .unwrap()
    .external_registry
    .unwrap();
    assert_eq!(config.auth, ExternalAuth::Bearer("tok-abc".to_owned()));
}

#[test]
fn registry_connection_mistakes_name_the_flag() {
    let cases: [(&[&str], &str); 5] = [
        (&["--registry-url", "ftp://x"], "--registry-url"),
        (&["--registry-url", "https://u:p@x"], "must not hold credentials"),
        (
            &["--registry-url", "https://x", "--registry-username", "u"],
            "--registry-username needs",
        ),
        (
            &["--registry-url", "https://x", "--registry-ca-file", "/no/such/ca.pem"],
            "--registry-ca-file",
        ),
        (
            &["--registry-url", "https://x", "--registry-timeout-seconds", "0"],
            "--registry-timeout-seconds",
        ),
    ];
    for (args, expected) in cases {
        let error = operator_config(args).unwrap_err();
        assert!(error.contains(expected), "{args:?}: {error}");
        assert!(!error.contains("u:p@"), "{error}");
    }
    assert!(
        operator_config(&[
            "--registry-url",
            "https://x",
            "--registry-token",
            "t",
            "--registry-username",
            "u"
        ])
        .is_err()
    );
    assert!(operator_config(&["--registry-url", "https://x", "--registry-client-cert", "c.pem"]).is_err());
}

#[test]
fn apply_takes_the_registry_connection_flags() {
    let apply = |args: &[&str]| {
        let cli = Cli::parse_from(["schemaops", "apply"].iter().chain(args).chain(&["manifests/"]));
        let Command::Apply(args) = cli.command else {
            panic!("an apply command");
        };
        args.into_config()
    };
    assert_eq!(apply(&[]).unwrap().registry, None);
    let config = apply(&[
        "--registry-url",
        "http://127.0.0.1:8081/",
        "--registry-timeout-seconds",
        "3",
    ])
    .unwrap();
    let registry = config.registry.unwrap();
    assert_eq!(registry.display_url(), "http://127.0.0.1:8081");
    assert_eq!(registry.timeout, std::time::Duration::from_secs(3));
    let error = apply(&["--registry-token", "t"]).unwrap_err();
    assert!(error.contains("--registry-token needs --registry-url"), "{error}");
}

#[test]
fn check_without_data_starts_from_an_empty_registry() {
    let cli = Cli::parse_from(["schemaops", "check", "-o", "github", "manifests/"]);
    let Command::Check(args) = cli.command else {
        panic!("a check command");
    };
    let config = args.into_config().unwrap();
    assert_eq!(config.source, CheckSource::Empty);
    assert_eq!(config.output, CheckOutput::Github);
}

#[test]
fn check_refuses_a_data_folder_that_does_not_exist() {
    let cli = Cli::parse_from(["schemaops", "check", "--data", "/nonexistent/schemaops", "m/"]);
    let Command::Check(args) = cli.command else {
        panic!("a check command");
    };
    assert!(args.into_config().unwrap_err().contains("--data"));
}

#[test]
fn cases_and_candidate_together_are_refused() {
    let parsed = Cli::try_parse_from(["schemaops", "compat", "--cases", "x.jsonl", "--candidate", "c.avsc"]);
    assert!(parsed.is_err());
}

#[test]
fn a_kafka_store_url_names_its_brokers_and_topic_and_the_writer_defaults_to_schemaops_topic() {
    use crate::registry::embedded::kafka::topic_check::TopicPolicy;
    let config = registry_config(&["--store", "kafka://k-0:9092,k-1:9092/_schemas"]).unwrap();
    assert_eq!(config.postgres, None);
    let kafka = config.kafka.unwrap();
    assert_eq!(kafka.bootstrap, "k-0:9092,k-1:9092");
    assert_eq!(kafka.topic, "_schemas");
    assert_eq!(kafka.transactional_id, "schemaops-_schemas");
    assert!(!kafka.read_only);
    assert_eq!(kafka.topic_policy, TopicPolicy::default());

    let kafka = operator_config(&[
        "--store",
        "kafka://k-0:9092/schemas",
        "--store-read-only",
        "--store-transactional-id",
        "registry-writer",
        "--store-topic-replication-factor",
        "1",
        "--store-no-create-topic",
    ])
    .unwrap()
    .kafka
    .unwrap();
    assert!(kafka.read_only);
    assert_eq!(kafka.transactional_id, "registry-writer");
    assert_eq!(
        kafka.topic_policy,
        TopicPolicy {
            create: false,
            replication_factor: 1,
            skip_validation: false
        }
    );
}

#[test]
fn a_wrong_kafka_store_url_or_option_is_refused_naming_the_flag() {
    for (args, expected) in [
        (&["--store", "kafka://k-0:9092"][..], "names no topic"),
        (
            &["--store", "kafka://k-0/_schemas"][..],
            "`k-0` is not a broker address",
        ),
        (
            &["--store", "kafka://k-0:9092,/_schemas"][..],
            "`` is not a broker address",
        ),
        (
            &["--store", "kafka://k-0:9092/bad topic"][..],
            "`bad topic` is not a Kafka topic name",
        ),
        (&["--store", "kafka://k-0:9092/"][..], "is not a Kafka topic name"),
        (&["--store-read-only"][..], "--store-read-only is for the Kafka store"),
        (
            &["--store", "postgres://db/r", "--store-transactional-id", "x"][..],
            "--store-transactional-id is for the Kafka store",
        ),
        (
            &["--store", "kafka://k-0:9092/s", "--store-topic-replication-factor", "0"][..],
            "--store-topic-replication-factor must be at least 1",
        ),
    ] {
        let error = registry_config(args).unwrap_err();
        assert!(error.contains(expected), "{args:?}: {error}");
        assert!(error.contains("--store"), "{args:?}: {error}");
    }
}

#[test]
fn a_writing_kafka_instance_joins_the_election_with_its_flags_and_a_read_only_one_does_not() {
    use std::time::Duration;
    let url = "kafka://k-0:9092/_schemas";
    let election = registry_config(&["--store", url])
        .unwrap()
        .kafka
        .unwrap()
        .election
        .unwrap();
    assert_eq!(election.advertised_url, "", "filled in from --listen when serving");
    assert!(election.eligible);
    assert_eq!(election.session_timeout, Duration::from_secs(10));

    let election = registry_config(&[
        "--store",
        url,
        "--store-advertised-url",
        "https://registry-1.example:8081",
        "--store-leader-eligibility",
        "false",
        "--store-session-timeout-ms",
        "6000",
    ])
    .unwrap()
    .kafka
    .unwrap()
    .election
    .unwrap();
    assert_eq!(election.advertised_url, "https://registry-1.example:8081");
    assert!(!election.eligible);
    assert_eq!(election.session_timeout, Duration::from_secs(6));

    let read_only = registry_config(&["--store", url, "--store-read-only"])
        .unwrap()
        .kafka
        .unwrap();
    assert_eq!(read_only.election, None);
}

#[test]
fn wrong_election_flags_are_refused_and_the_operator_takes_them_as_the_registry_does() {
    let url = "kafka://k-0:9092/_schemas";
    for (args, expected) in [
        (
            &["--store", url, "--store-advertised-url", "registry-1:8081"][..],
            "is not an http:// or https:// URL",
        ),
        (
            &["--store", url, "--store-session-timeout-ms", "10"][..],
            "--store-session-timeout-ms must be between",
        ),
        (
            &["--store", "postgres://db/r", "--store-leader-eligibility", "false"][..],
            "--store-leader-eligibility is for the Kafka store",
        ),
    ] {
        let error = registry_config(args).unwrap_err();
        assert!(error.contains(expected), "{args:?}: {error}");
    }
    let election = operator_config(&["--store", url, "--store-advertised-url", "http://op:8081"])
        .unwrap()
        .kafka
        .unwrap()
        .election
        .unwrap();
    assert_eq!(election.advertised_url, "http://op:8081");
    assert!(election.eligible);
    let error = operator_config(&["--store", url, "--store-session-timeout-ms", "10"]).unwrap_err();
    assert!(error.contains("--store-session-timeout-ms must be between"), "{error}");
}

#[test]
fn the_kafka_store_takes_tls_and_its_files_only_with_store_tls() {
    use crate::registry::embedded::kafka::topic_store::KafkaTls;
    let url = "kafka://k-0:9093/_schemas";
    let folder = tempfile::tempdir().unwrap();
    let ca = folder.path().join("ca.pem");
    std::fs::write(&ca, "").unwrap();
    let ca = ca.to_str().unwrap();
    let kafka = registry_config(&["--store", url, "--store-tls", "--store-ca-file", ca])
        .unwrap()
        .kafka
        .unwrap();
    assert_eq!(
        kafka.tls,
        Some(KafkaTls {
            ca_file: Some(ca.into()),
            client_identity: None
        })
    );
    assert_eq!(registry_config(&["--store", url]).unwrap().kafka.unwrap().tls, None);
    for (args, expected) in [
        (
            &["--store", url, "--store-ca-file", ca][..],
            "--store-ca-file is used over TLS only: add --store-tls",
        ),
        (
            &["--store", url, "--store-tls", "--store-client-cert", ca][..],
            "--store-client-cert needs --store-client-key",
        ),
        (
            &["--store", url, "--store-tls", "--store-ca-file", "/no/such/ca.pem"][..],
            "is not a readable file",
        ),
        (
            &["--store", "postgres://db/r", "--store-tls"][..],
            "--store-tls is for the Kafka store",
        ),
    ] {
        let error = registry_config(args).unwrap_err();
        assert!(error.contains(expected), "{args:?}: {error}");
    }
}
