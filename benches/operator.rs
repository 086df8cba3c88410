//! The operator under load (issue 6): 1,000 Schema resources (10 fields
//! each) created through the test API server, then every one edited (half
//! compatibly, half not). Reports the time until everything has converged
//! and the operator's peak RSS, against the targets (30 s, 64 MiB).
//!
//! The scenario runs twice in one run (issue 17): with no SchemaPolicy, and
//! with 100 in force (every one matching the Schemas' namespace, none
//! refusing them), and prints the ratio of the convergence times.
//!
//! `cargo bench --bench operator [-- --schemas N] [-- --policies N]`

#[path = "../tests/support/apiserver/mod.rs"]
#[allow(missing_docs, unused_imports)]
mod apiserver;
#[path = "../tests/support/http.rs"]
mod http;
#[path = "../tests/support/operator.rs"]
#[allow(dead_code, missing_docs)]
mod operator;

use std::time::{Duration, Instant};

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use schemaops::crd::{Schema, SchemaPolicy, SchemaSpec};

const CONCURRENCY: usize = 32;
const TIMEOUT: Duration = Duration::from_secs(300);

/// The value of `--name N`, or `default`.
fn argument(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.windows(2)
        .find(|pair| pair[0] == name)
        .and_then(|pair| pair[1].parse().ok())
        .unwrap_or(default)
}

/// The `index`th of the bench's policies: all match namespace `default`;
/// their rules allow what the bench does (subjects `event-*`, the global
/// BACKWARD level, Retain), so they cost evaluation and refuse nothing.
fn policy(index: usize) -> SchemaPolicy {
    let spec = serde_json::json!({
        "match": {
            "namespaceSelector": {"matchExpressions": [{"key": "bench.schemaops.dev/excluded", "operator": "DoesNotExist"}]},
            "subjects": if index.is_multiple_of(2) { serde_json::json!(["event-*"]) } else { serde_json::json!([]) },
        },
        "rules": {
            "subjects": {"allowed": ["event-*", format!("team-{index}.*")]},
            "compatibility": {"minimum": "BACKWARD"},
            "deletionPolicies": ["Retain", "SoftDelete"],
            "modes": ["READWRITE", "READONLY"],
            "naming": {"avroNamespace": "bench*"},
        },
        "validationActions": [if index.is_multiple_of(3) { "Warn" } else { "Deny" }],
    });
    SchemaPolicy::new(&format!("policy-{index:03}"), serde_json::from_value(spec).unwrap())
}

/// A record with ten fields, plus `extra` more.
fn avro(extra: &str) -> String {
    let mut fields: Vec<String> = (0..10)
        .map(|index| {
            format!(
                r#"{{"name":"f{index}","type":"{}"}}"#,
                ["int", "string", "long", "double", "boolean"][index % 5]
            )
        })
        .collect();
    if !extra.is_empty() {
        fields.push(extra.to_owned());
    }
    format!(
        r#"{{"type":"record","name":"Event","namespace":"bench","fields":[{}]}}"#,
        fields.join(",")
    )
}

fn main() {
    let count = argument("--schemas", 1_000);
    let policies = argument("--policies", 100);
    let (without, _) = scenario(count, 0);
    let (with, peak_kib) = scenario(count, policies);
    println!(
        "convergence with {policies} SchemaPolicies in force: {with:.2?} against {without:.2?} with none ({:.2}×)",
        with.as_secs_f64() / without.as_secs_f64()
    );
    println!(
        "operator peak RSS (with the policies): {:.1} MiB (target under 64 MiB: {})",
        peak_kib as f64 / 1024.0,
        if peak_kib < 64 * 1024 { "met" } else { "MISSED" }
    );
}

/// Creates and edits `count` Schemas with `policies` SchemaPolicies in force;
/// the total convergence time and the operator's peak RSS in KiB.
fn scenario(count: usize, policies: usize) -> (Duration, u64) {
    println!("-- {count} Schemas, {policies} SchemaPolicies");
    let server = apiserver::TestApiServer::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = runtime.block_on(async {
        let mut config = kube::Config::new(server.url().parse().unwrap());
        config.default_namespace = "default".to_owned();
        let client = Client::try_from(config).unwrap();
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for (_, definition) in schemaops::crd::render::definitions() {
            crds.create(&PostParams::default(), &definition).await.unwrap();
        }
        let policy_api: Api<SchemaPolicy> = Api::all(client.clone());
        for index in 0..policies {
            policy_api.create(&PostParams::default(), &policy(index)).await.unwrap();
        }
        client
    });
    let data = tempfile::tempdir().unwrap();
    let operator = operator::OperatorProcess::start(server.kubeconfig(), data.path(), &[]);
    runtime.block_on(operator.wait_ready(Duration::from_secs(30)));
    let schemas: Api<Schema> = Api::namespaced(client, "default");

    let total = runtime.block_on(async {
        let started = Instant::now();
        futures::stream::iter(0..count)
            .map(|index| {
                let schemas = schemas.clone();
                async move {
                    let schema = Schema::new(
                        &format!("event-{index}"),
                        SchemaSpec {
                            metadata: None,
                            rule_set: None,
                            subject: format!("event-{index}-value"),
                            schema_type: Default::default(),
                            schema: Some(avro("")),
                            schema_from: None,
                            references: Vec::new(),
                            deletion_policy: Default::default(),
                            management_policy: Default::default(),
                        },
                    );
                    schemas.create(&PostParams::default(), &schema).await.map(drop)
                }
            })
            .buffer_unordered(CONCURRENCY)
            .try_collect::<Vec<()>>()
            .await
            .unwrap();
        let created = started.elapsed();
        let (ready, _) = converge(&schemas, count).await;
        let first = started.elapsed();
        println!("created {count} Schemas in {created:.2?}; all Ready ({ready}) after {first:.2?}");

        let edited_at = Instant::now();
        futures::stream::iter(0..count)
            .map(|index| {
                let schemas = schemas.clone();
                async move {
                    // Even: a field with a default (compatible); odd: without (refused under BACKWARD).
                    let extra = if index.is_multiple_of(2) {
                        r#"{"name":"added","type":"int","default":0}"#
                    } else {
                        r#"{"name":"added","type":"int"}"#
                    };
                    let patch = serde_json::json!({"spec": {"schema": avro(extra)}});
                    schemas
                        .patch(
                            &format!("event-{index}"),
                            &PatchParams::default(),
                            &Patch::Merge(&patch),
                        )
                        .await
                        .map(drop)
                }
            })
            .buffer_unordered(CONCURRENCY)
            .try_collect::<Vec<()>>()
            .await
            .unwrap();
        let (ready, stalled) = converge(&schemas, count).await;
        let second = edited_at.elapsed();
        assert_eq!(
            (ready, stalled),
            (count.div_ceil(2), count / 2),
            "half registered, half refused"
        );
        println!(
            "edited {count} Schemas (half compatible): converged ({ready} Ready, {stalled} refused) after {second:.2?}"
        );
        let total = first + second;
        println!(
            "convergence: {total:.2?} for {} resource changes (target under 30 s: {})",
            2 * count,
            if total < Duration::from_secs(30) {
                "met"
            } else {
                "MISSED"
            }
        );
        total
    });
    let peak_kib = peak_rss_kib(operator.pid());
    println!("operator peak RSS: {:.1} MiB", peak_kib as f64 / 1024.0);
    (total, peak_kib)
}

/// Waits until every Schema's status describes its generation; returns (Ready, Stalled) counts.
async fn converge(schemas: &Api<Schema>, count: usize) -> (usize, usize) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let list = schemas.list(&ListParams::default()).await.unwrap();
        let mut ready = 0;
        let mut stalled = 0;
        for schema in &list.items {
            let Some(status) = &schema.status else { continue };
            if status.observed_generation != schema.metadata.generation {
                continue;
            }
            let condition = |type_: &str| status.conditions.iter().any(|c| c.type_ == type_ && c.status == "True");
            if condition("Ready") {
                ready += 1;
            } else if condition("Stalled") {
                stalled += 1;
            }
        }
        if ready + stalled == count {
            return (ready, stalled);
        }
        assert!(
            Instant::now() < deadline,
            "not converged after {TIMEOUT:?}: {ready} Ready, {stalled} refused"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// VmHWM of a process, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
