//! Schemas evolving under `schemaops apply --registry-url` while real
//! producers and consumers use a real Kafka-protocol broker (issue 9): Tansu,
//! `schemaops registry`, and the official Confluent Python client with its
//! Avro, JSON Schema and Protobuf serializers.
//!
//! For each format and each of BACKWARD, FORWARD and FULL, on its own topic,
//! `tests/python/kafka_evolution.py` applies v1, produces, applies a v2 the
//! mode accepts, produces, reads the whole topic back with the readers the
//! mode promises (and shows the reader it does not promise breaking), then
//! has `apply` refuse an incompatible v3 and the registry answer a producer
//! auto-registering it with HTTP 409, leaving the topic as it was. The
//! script prints one line per check.

mod support;

use std::process::{Command, Output};
use std::time::Instant;

use support::broker::Broker;
use support::registry::RegistryProcess;

const FORMATS: [&str; 3] = ["avro", "json", "protobuf"];

/// Checks each format must pass at the least: 10 per mode.
const MIN_CHECKS: usize = 30;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_evolve_under_apply_while_real_producers_and_consumers_use_a_broker() {
    let Some(python) = support::python::confluent_python_or_skip() else {
        return;
    };
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let registry = RegistryProcess::start(data.path()).await;
    let work = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/kafka_evolution.py");
    let started = Instant::now();
    // One process per format, side by side: each has its own topics and subjects.
    let runs = FORMATS.map(|format| {
        let folder = work.path().join(format);
        std::fs::create_dir(&folder).unwrap();
        let mut command = Command::new(&python);
        command
            .arg(script)
            .args([&broker.address, &registry.url, env!("CARGO_BIN_EXE_schemaops")])
            .arg(folder)
            .arg(format);
        tokio::task::spawn_blocking(move || command.output())
    });
    let mut failed = Vec::new();
    for (format, run) in FORMATS.into_iter().zip(runs) {
        let output: Output = run.await.unwrap().expect("the script runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        println!("{stdout}");
        let checks = stdout.lines().filter(|line| line.starts_with("ok ")).count();
        if !output.status.success() || checks < MIN_CHECKS {
            failed.push(format!(
                "{format}: {} with {checks} checks passed\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    println!(
        "the three formats ran in {:.1} s; the broker's log: {}",
        started.elapsed().as_secs_f64(),
        broker.log.display()
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
