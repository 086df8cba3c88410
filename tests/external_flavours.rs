//! The examples applied through the registry double as real Karapace and
//! as Confluent 7.x without data contracts (issue 38, items 1, 2 and 6),
//! each run's table compared with the embedded registry's: the tables
//! differ only where the registry lacks a capability, and each such
//! difference is asserted here. Also: what the capability probe finds on
//! each flavour, and that it leaves nothing behind.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use schemaops::compat::Checker;
use schemaops::registry::Registry;
use schemaops::registry::external::{Capabilities, ExternalConfig, ExternalRegistry, PROBE_SUBJECT};
use serde_json::Value;

mod support;

use support::registry_double::{Flavour, RegistryDouble};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `schemaops COMMAND ARGS…`, off the async runtime so the double keeps serving.
async fn run(command: &'static str, args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_schemaops"))
            .arg(command)
            .args(&args)
            .env("RUST_LOG", "error")
            .output()
            .expect("the binary runs")
    })
    .await
    .unwrap()
}

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
        .to_str()
        .unwrap()
        .to_owned()
}

/// `apply` of `folder` into the embedded registry in `data`, or into the
/// registry at `url` when given.
async fn apply(data: &Path, url: Option<&str>, folder: &str, json: bool) -> Output {
    let mut args = vec!["--data".to_owned(), data.to_str().unwrap().to_owned()];
    if let Some(url) = url {
        args.extend(["--registry-url".to_owned(), url.to_owned()]);
    }
    if json {
        args.extend(["-o".to_owned(), "json".to_owned()]);
    }
    args.push(folder.to_owned());
    run("apply", args).await
}

/// The rows of the table `apply` prints first (up to the first blank line).
fn table(output: &Output) -> Vec<String> {
    text(&output.stdout)
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// A double answering as `flavour`, over a fresh registry.
async fn double(served: &Path, flavour: Flavour) -> RegistryDouble {
    let double = RegistryDouble::start(served).await;
    double.set_flavour(flavour);
    double
}

/// The embedded registry's table for `name`, and the table through the
/// double as `flavour` (applied twice; the second run must print the first
/// run's table again and exit alike).
async fn tables(name: &str, flavour: Flavour) -> (Vec<String>, Vec<String>, RegistryDouble, tempfile::TempDir) {
    let folder = example(name);
    let embedded_data = tempfile::tempdir().unwrap();
    let embedded = apply(embedded_data.path(), None, &folder, false).await;
    assert!(table(&embedded).len() > 1, "{}", text(&embedded.stderr));

    let served = tempfile::tempdir().unwrap();
    let double = double(served.path(), flavour).await;
    let data = tempfile::tempdir().unwrap();
    let first = apply(data.path(), Some(&double.url), &folder, false).await;
    let second = apply(data.path(), Some(&double.url), &folder, false).await;
    let who = flavour.name();
    assert_eq!(
        first.status.code(),
        embedded.status.code(),
        "{who}, {name}: {}{}",
        text(&first.stdout),
        text(&first.stderr)
    );
    assert_eq!(
        first.status.code(),
        second.status.code(),
        "{who}, {name}: {}{}",
        text(&second.stdout),
        text(&second.stderr)
    );
    assert_eq!(
        table(&first),
        table(&second),
        "{who}, {name}: a second apply changes nothing"
    );
    assert_eq!(double.subject_mode_writes(), 0, "{who}, {name}: no mode write was sent");
    (table(&embedded), table(&first), double, served)
}

/// The embedded table with the rows in `changed` replaced.
fn with_rows(embedded: &[String], changed: &[&str]) -> Vec<String> {
    embedded
        .iter()
        .map(|row| {
            let key: Vec<&str> = row.split(' ').take(3).collect();
            changed
                .iter()
                .find(|new| new.split(' ').take(3).collect::<Vec<_>>() == key)
                .map_or_else(|| row.clone(), |new| (*new).to_owned())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_evolution_example_prints_the_embedded_registrys_table_on_every_flavour() {
    for flavour in [Flavour::Karapace, Flavour::Confluent7] {
        let (embedded, external, _double, _served) = tables("evolution", flavour).await;
        assert_eq!(external, embedded, "{}", flavour.name());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_example_prints_the_embedded_registrys_table_on_every_flavour() {
    for flavour in [Flavour::Karapace, Flavour::Confluent7] {
        let (embedded, external, _double, _served) = tables("policy", flavour).await;
        assert_eq!(external, embedded, "{}", flavour.name());
    }
}

/// Without data contracts (Karapace and Confluent 7.x alike), the
/// contracts example differs from the embedded registry's run exactly
/// where a contract is involved: the SubjectConfig's group and the
/// customers Schema's metadata are `ContractsUnsupported`, and the orders
/// Schema's third edit is judged against every version, as the registry
/// judges it, since no group is held. On main, Karapace's 422 made the SubjectConfig
/// `RegistryRejected` and the group was claimed when judging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_contracts_example_differs_only_where_contracts_are_missing() {
    for flavour in [Flavour::Karapace, Flavour::Confluent7] {
        let (embedded, external, double, _served) = tables("contracts", flavour).await;
        let who = flavour.name();
        let expected = with_rows(
            &embedded,
            &[
                "SubjectConfig default orders orders-value - - False ContractsUnsupported",
                "Schema default customers customers-value 1 1 False ContractsUnsupported",
                // Major version 3 is judged against version 1 (no lineage
                // is held) and refused by our engine, as the registry would
                // refuse it; the embedded registry registers it as version 2.
                "Schema default orders orders-value 1 2 False IncompatibleSchema",
            ],
        );
        assert_eq!(external, expected, "{who}");
        let (_, versions) = double.backend_get("/subjects/orders-value/versions").await;
        assert_eq!(versions, serde_json::json!([1]), "{who}");
        // The level was written; the group was never sent, except to the
        // probe subject, which the registry refused or forgot.
        let (_, level) = double.backend_get("/config/orders-value").await;
        assert_eq!(level["compatibilityLevel"], "BACKWARD", "{who}");
        assert!(level.get("compatibilityGroup").is_none(), "{who}: {level}");
        let probe = format!("/config/{PROBE_SUBJECT}");
        assert!(
            double.config_writes_without_level().iter().all(|path| *path == probe),
            "{who}: {:?}",
            double.config_writes_without_level()
        );
        let (status, _) = double.backend_get(&probe).await;
        assert_eq!(status, 404, "{who}: the probe left no configuration");
    }
}

/// `check`'s prediction for the contracts example on Karapace is what
/// `apply` then does, object by object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_predicts_what_apply_does_with_the_contracts_example_on_karapace() {
    let served = tempfile::tempdir().unwrap();
    let double = double(served.path(), Flavour::Karapace).await;
    let folder = example("contracts");
    let predicted = run(
        "check",
        vec![
            "--registry-url".to_owned(),
            double.url.clone(),
            "-o".to_owned(),
            "json".to_owned(),
            folder.clone(),
        ],
    )
    .await;
    let report: Value = serde_json::from_slice(&predicted.stdout)
        .unwrap_or_else(|_| panic!("not JSON: {}{}", text(&predicted.stdout), text(&predicted.stderr)));
    let data = tempfile::tempdir().unwrap();
    let applied = apply(data.path(), Some(&double.url), &folder, true).await;
    let list: Value = serde_json::from_slice(&applied.stdout)
        .unwrap_or_else(|_| panic!("not JSON: {}{}", text(&applied.stdout), text(&applied.stderr)));

    let predictions: Vec<(String, String, String)> = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap().to_owned(),
                o["name"].as_str().unwrap().to_owned(),
                o["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let outcomes: Vec<(String, String, String)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let ready = o["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "Ready")
                .unwrap();
            (
                o["kind"].as_str().unwrap().to_owned(),
                o["metadata"]["name"].as_str().unwrap().to_owned(),
                ready["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(predictions, outcomes, "{report:#}");
    assert_eq!(predicted.status.code(), applied.status.code());
    // No SubjectConfig is RegistryRejected, and no registration was refused
    // by the registry where our engine predicted it would pass.
    assert!(
        outcomes.iter().all(|(_, _, reason)| reason != "RegistryRejected"),
        "{outcomes:?}"
    );
}

fn client(url: &str) -> ExternalRegistry {
    let mut config = ExternalConfig::new(url.parse().unwrap());
    config.retry_backoff = Duration::from_millis(10);
    ExternalRegistry::new(&config, Checker::default()).unwrap()
}

/// What the probe finds on each flavour, with and without a subject in the
/// registry, and that it leaves the registry as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_are_probed_as_each_server_answers_and_nothing_is_left_behind() {
    for with_subject in [false, true] {
        for flavour in [Flavour::Karapace, Flavour::Confluent7] {
            let served = tempfile::tempdir().unwrap();
            let double = double(served.path(), flavour).await;
            if with_subject {
                let (status, _) = double
                    .backend_post(
                        "/subjects/held-value/versions",
                        &serde_json::json!({"schema": "\"string\""}),
                    )
                    .await;
                assert_eq!(status, 200);
            }
            let (_, subjects_before) = double.backend_get("/subjects?deleted=true").await;
            let registry = client(&double.url);
            let found = registry.capabilities().await.unwrap();
            let karapace = flavour == Flavour::Karapace;
            // Karapace has no `verbose` (an invalid schema is 422 whatever
            // it asks); the double does not model Confluent 7.x's answer.
            let expected = Capabilities {
                verbose: !karapace && found.verbose,
                check_all_versions: !karapace,
                mode: true,
                subject_mode: !karapace,
                normalize: true,
                // Known only with a live subject to compare with.
                deleted_only: !karapace && with_subject,
                contexts: !karapace,
                guids: false,
            };
            assert_eq!(found, expected, "{}, with a subject: {with_subject}", flavour.name());
            assert!(!registry.supports_data_contracts().await.unwrap(), "{}", flavour.name());
            let (_, subjects_after) = double.backend_get("/subjects?deleted=true").await;
            assert_eq!(subjects_before, subjects_after, "the probe registers nothing");
            assert_eq!(double.subject_mode_writes(), 0);
            assert_eq!(double.registrations(), 0);
        }
    }
}

/// The embedded registry behind the double, answering as itself, keeps data
/// contracts: the probe says so and removes its configuration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_contract_probe_removes_its_configuration_where_it_was_kept() {
    let served = tempfile::tempdir().unwrap();
    let double = RegistryDouble::start(served.path()).await;
    let registry = client(&double.url);
    assert!(registry.supports_data_contracts().await.unwrap());
    assert_eq!(
        double.config_writes_without_level(),
        vec![format!("/config/{PROBE_SUBJECT}")]
    );
    let (status, _) = double.backend_get(&format!("/config/{PROBE_SUBJECT}")).await;
    assert_eq!(status, 404, "the probe's configuration was removed");
    let found = registry.capabilities().await.unwrap();
    assert!(found.subject_mode && found.guids && found.contexts, "{found:?}");
}

/// Issue 38: on Karapace, a level-only SubjectConfig observed after its
/// level is in force matches the registry (on main, the global mode read as
/// the subject's own made it `matches: false`, "Manage would remove mode").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observed_level_only_subject_config_matches_on_karapace() {
    let served = tempfile::tempdir().unwrap();
    let double = double(served.path(), Flavour::Karapace).await;
    let (status, _) = double
        .backend_post(
            "/subjects/rsvp-value/versions",
            &serde_json::json!({"schema": "\"string\""}),
        )
        .await;
    assert_eq!(status, 200);
    let manifest = |policy: &str| {
        format!(
            "apiVersion: schemaops.dev/v1alpha1\nkind: SubjectConfig\nmetadata:\n  name: rsvp\nspec:\n  \
             subject: rsvp-value\n  compatibility: FORWARD\n{policy}"
        )
    };
    let managed = tempfile::tempdir().unwrap();
    std::fs::write(managed.path().join("rsvp.yaml"), manifest("")).unwrap();
    let data = tempfile::tempdir().unwrap();
    let applied = apply(data.path(), Some(&double.url), managed.path().to_str().unwrap(), false).await;
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied.stdout));

    let observed = tempfile::tempdir().unwrap();
    std::fs::write(
        observed.path().join("rsvp.yaml"),
        manifest("  managementPolicy: Observe\n"),
    )
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let output = apply(data.path(), Some(&double.url), observed.path().to_str().unwrap(), true).await;
    let list: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("not JSON: {}{}", text(&output.stdout), text(&output.stderr)));
    let observation = &list["items"][0]["status"]["observation"];
    assert_eq!(observation["matches"], true, "{:#}", list["items"][0]);
    assert_eq!(double.subject_mode_writes(), 0);
}

/// A registry whose newest version shows metadata keeps data contracts:
/// reads say so, and the probe writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contracts_in_use_are_seen_without_a_probe_write() {
    let served = tempfile::tempdir().unwrap();
    let double = RegistryDouble::start(served.path()).await;
    let (status, _) = double
        .backend_post(
            "/subjects/tagged-value/versions",
            &serde_json::json!({"schema": "\"string\"", "metadata": {"properties": {"owner": "team-a"}}}),
        )
        .await;
    assert_eq!(status, 200);
    let registry = client(&double.url);
    assert!(registry.supports_data_contracts().await.unwrap());
    assert_eq!(double.config_writes_without_level(), Vec::<String>::new());
}

/// Issue 38: an export from Karapace pinned `mode: READWRITE` on every
/// subject (the global mode read as the subject's own), and applying that
/// export to Karapace ended every SubjectConfig `RegistryRejected` (405).
/// Now the export holds no mode Karapace does not really keep, and applying
/// it back (twice) sends no mode write and rejects nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_from_karapace_applies_back_to_karapace_without_a_mode_write() {
    let served = tempfile::tempdir().unwrap();
    let double = double(served.path(), Flavour::Karapace).await;
    let data = tempfile::tempdir().unwrap();
    let first = apply(data.path(), Some(&double.url), &example("evolution"), false).await;
    // The example holds one refused change on purpose (exit 1); 2 would be an error.
    assert_eq!(
        first.status.code(),
        Some(1),
        "{}{}",
        text(&first.stdout),
        text(&first.stderr)
    );

    let out = tempfile::tempdir().unwrap();
    let export_dir = out.path().join("export");
    let export = run(
        "export",
        vec![
            "--registry-url".to_owned(),
            double.url.clone(),
            "--history".to_owned(),
            "--out".to_owned(),
            export_dir.to_str().unwrap().to_owned(),
        ],
    )
    .await;
    assert_eq!(export.status.code(), Some(0), "{}", text(&export.stderr));
    for entry in std::fs::read_dir(&export_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "yaml") {
            continue;
        }
        let content = std::fs::read_to_string(&path).unwrap();
        assert!(
            !content.lines().any(|line| line.trim_start().starts_with("mode:")),
            "{} pins a mode Karapace does not hold per subject:\n{content}",
            path.display()
        );
    }

    // The export is applied as another checkout would: a fresh local folder.
    let adopter = tempfile::tempdir().unwrap();
    let writes_before = double.subject_mode_writes();
    for round in ["first", "second"] {
        let again = apply(adopter.path(), Some(&double.url), export_dir.to_str().unwrap(), false).await;
        let printed = text(&again.stdout);
        assert_eq!(
            again.status.code(),
            Some(0),
            "{round} apply of the export: {printed}{}",
            text(&again.stderr)
        );
        assert!(
            !printed.contains("RegistryRejected"),
            "{round} apply of the export: {printed}"
        );
    }
    assert_eq!(double.subject_mode_writes(), writes_before, "no mode write was sent");
}
