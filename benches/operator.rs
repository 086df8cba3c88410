//! The operator under load. One run prints:
//!
//! - 1,000 Schema resources (10 fields each) created through the test API
//!   server from 32 clients, all Ready, then every one edited (half
//!   compatibly, half not) and converged (issue 6), twice: with no
//!   SchemaPolicy and with 100 in force, every one matching the Schemas'
//!   namespace and none refusing them (issue 17); the ratio of the times and
//!   the operator's peak RSS against the old targets (30 s, 64 MiB);
//! - the same at 10,000 Schemas with no policy (issue 20): creation to all
//!   Ready, edit convergence, total and the operator's peak RSS against the
//!   targets (under 60 s, under 128 MiB);
//! - evidence that the test API server is not the bottleneck, from the same
//!   run: the CPU time of the server's threads (it runs in this process, on
//!   threads named `test-apiserver`) next to the operator's, over the
//!   10,000-Schema scenario, and the requests per second the scenario needed
//!   next to what the server answers alone (the same creates, edits and
//!   status writes from 32 clients with no operator running).
//!
//! `cargo bench --bench operator [-- --schemas N] [-- --policies N] [-- --large N]`
//! (`--large 0` skips the large scenario).

#[path = "../tests/support/apiserver/mod.rs"]
#[allow(missing_docs, unused_imports)]
mod apiserver;
#[path = "../tests/support/http.rs"]
mod http;
#[path = "../tests/support/operator.rs"]
#[allow(dead_code, missing_docs)]
mod operator;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client, ResourceExt as _};
use schemaops::crd::{Schema, SchemaPolicy, SchemaSpec};

/// The clients that create and edit the Schemas, each with its own connections.
const CLIENTS: usize = 32;
const TIMEOUT: Duration = Duration::from_secs(300);
/// Clock ticks per second in `/proc/*/stat` (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

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

/// What one scenario measured.
struct Figures {
    /// From the first create to the last create answered.
    created: Duration,
    /// From the first create to every Schema Ready.
    ready: Duration,
    /// From the first edit to every Schema converged.
    edited: Duration,
    /// The operator's peak RSS, KiB.
    peak_kib: u64,
    /// CPU time over both phases: the operator process, the test API
    /// server's threads, and the whole bench process (server, clients, polling).
    operator_cpu: f64,
    apiserver_cpu: f64,
    bench_cpu: f64,
    /// Requests the test API server answered over both phases.
    requests: u64,
}

impl Figures {
    fn total(&self) -> Duration {
        self.ready + self.edited
    }
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

fn main() {
    let count = argument("--schemas", 1_000);
    let policies = argument("--policies", 100);
    let large = argument("--large", 10_000);
    let without = scenario(count, 0);
    let with = scenario(count, policies);
    println!(
        "== {count} Schemas: convergence with {policies} SchemaPolicies in force: {:.2?} against {:.2?} with none ({:.2}×)",
        with.total(),
        without.total(),
        with.total().as_secs_f64() / without.total().as_secs_f64()
    );
    for (label, figures) in [("no policy", &without), ("with the policies", &with)] {
        println!(
            "== {count} Schemas, {label}: Ready in {:.2?}, edits converged in {:.2?}, {:.2?} in all (target under 30 s: {}); operator peak RSS {:.1} MiB (target under 64 MiB: {})",
            figures.ready,
            figures.edited,
            figures.total(),
            verdict(figures.total() < Duration::from_secs(30)),
            figures.peak_kib as f64 / 1024.0,
            verdict(figures.peak_kib < 64 * 1024),
        );
    }
    if large == 0 {
        return;
    }
    let alone = apiserver_alone(large);
    let figures = scenario(large, 0);
    println!(
        "== {large} Schemas from {CLIENTS} clients: all Ready in {:.2?} (creates answered after {:.2?}), edits converged in {:.2?}, {:.2?} in all (target under 60 s: {})",
        figures.ready,
        figures.created,
        figures.edited,
        figures.total(),
        verdict(figures.total() < Duration::from_secs(60)),
    );
    println!(
        "== {large} Schemas: operator peak RSS {:.1} MiB (target under 128 MiB: {})",
        figures.peak_kib as f64 / 1024.0,
        verdict(figures.peak_kib < 128 * 1024),
    );
    let wall = figures.total().as_secs_f64();
    let needed = figures.requests as f64 / wall;
    println!(
        "== test API server over the {large}-Schema scenario ({wall:.1} s): its threads used {:.1} s of CPU ({:.0}% of one core), the operator {:.1} s ({:.0}%), the whole bench process {:.1} s; {} requests, {needed:.0}/s on average",
        figures.apiserver_cpu,
        100.0 * figures.apiserver_cpu / wall,
        figures.operator_cpu,
        100.0 * figures.operator_cpu / wall,
        figures.bench_cpu,
        figures.requests,
    );
    println!(
        "== test API server alone (no operator, {CLIENTS} clients): {alone:.0} requests/s on the same creates, edits and status writes, {:.1}× what the scenario needed",
        alone / needed
    );
}

/// The test API server with no operator: `count` Schemas created, edited
/// and given a status by server-side apply (the writes the operator makes
/// per Schema), from [`CLIENTS`] clients; requests per second over all three.
fn apiserver_alone(count: usize) -> f64 {
    println!("-- the test API server alone, {count} Schemas");
    let server = apiserver::TestApiServer::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (elapsed, requests) = runtime.block_on(async {
        let clients = clients(&server).await;
        let before = server.requests();
        let started = Instant::now();
        create_all(&clients, count).await;
        edit_all(&clients, count).await;
        futures::stream::iter(0..count)
            .map(|index| {
                let schemas = clients[index % CLIENTS].clone();
                async move {
                    let patch = serde_json::json!({
                        "apiVersion": <Schema as kube::Resource>::api_version(&()),
                        "kind": <Schema as kube::Resource>::kind(&()),
                        "status": {"observedGeneration": 2, "conditions": [{
                            "type": "Ready", "status": "True", "reason": "Registered", "message": "bench",
                            "lastTransitionTime": "2026-12-03T00:00:00Z", "observedGeneration": 2,
                        }]},
                    });
                    schemas
                        .patch_status(
                            &format!("event-{index}"),
                            &PatchParams::apply("bench").force(),
                            &Patch::Apply(&patch),
                        )
                        .await
                        .map(drop)
                }
            })
            .buffer_unordered(CLIENTS)
            .try_collect::<Vec<()>>()
            .await
            .unwrap();
        (started.elapsed(), server.requests() - before)
    });
    let rate = requests as f64 / elapsed.as_secs_f64();
    println!("{requests} requests in {elapsed:.2?}: {rate:.0}/s");
    rate
}

/// Installs the CRDs; [`CLIENTS`] Schema APIs in `default`, each on a client of its own.
async fn clients(server: &apiserver::TestApiServer) -> Vec<Api<Schema>> {
    let mut config = kube::Config::new(server.url().parse().unwrap());
    config.default_namespace = "default".to_owned();
    let client = Client::try_from(config.clone()).unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    for (_, definition) in schemaops::crd::render::definitions() {
        crds.create(&PostParams::default(), &definition).await.unwrap();
    }
    (0..CLIENTS)
        .map(|_| Api::namespaced(Client::try_from(config.clone()).unwrap(), "default"))
        .collect()
}

/// Creates Schemas `event-0` .. `event-{count-1}`, spread over the clients.
async fn create_all(clients: &[Api<Schema>], count: usize) {
    futures::stream::iter(0..count)
        .map(|index| {
            let schemas = clients[index % CLIENTS].clone();
            async move {
                let schema = Schema::new(
                    &format!("event-{index}"),
                    SchemaSpec {
                        metadata: None,
                        rule_set: None,
                        subject: format!("event-{index}-value"),
                        registry_ref: None,
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
        .buffer_unordered(CLIENTS)
        .try_collect::<Vec<()>>()
        .await
        .unwrap();
}

/// Edits every Schema: even ones gain a field with a default (compatible),
/// odd ones a field without (refused under BACKWARD).
async fn edit_all(clients: &[Api<Schema>], count: usize) {
    futures::stream::iter(0..count)
        .map(|index| {
            let schemas = clients[index % CLIENTS].clone();
            async move {
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
        .buffer_unordered(CLIENTS)
        .try_collect::<Vec<()>>()
        .await
        .unwrap();
}

/// Creates and edits `count` Schemas with `policies` SchemaPolicies in force.
fn scenario(count: usize, policies: usize) -> Figures {
    println!("-- {count} Schemas, {policies} SchemaPolicies");
    let server = apiserver::TestApiServer::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let clients = runtime.block_on(async {
        let clients = clients(&server).await;
        let policy_api: Api<SchemaPolicy> = Api::all(clients[0].clone().into_client());
        for index in 0..policies {
            policy_api.create(&PostParams::default(), &policy(index)).await.unwrap();
        }
        clients
    });
    let data = tempfile::tempdir().unwrap();
    let operator = operator::OperatorProcess::start(server.kubeconfig(), data.path(), &[]);
    runtime.block_on(operator.wait_ready(Duration::from_secs(30)));
    let schemas = clients[0].clone();

    let cpu_before = (
        process_cpu(&operator.pid().to_string()),
        apiserver_cpu(),
        process_cpu("self"),
    );
    let requests_before = server.requests();
    let (created, ready, edited) = runtime.block_on(async {
        let started = Instant::now();
        create_all(&clients, count).await;
        let created = started.elapsed();
        let (ready, _) = converge(&schemas, count).await;
        let first = started.elapsed();
        println!("created {count} Schemas in {created:.2?}; all Ready ({ready}) after {first:.2?}");

        let edited_at = Instant::now();
        edit_all(&clients, count).await;
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
        (created, first, second)
    });
    let figures = Figures {
        created,
        ready,
        edited,
        peak_kib: peak_rss_kib(operator.pid()),
        operator_cpu: process_cpu(&operator.pid().to_string()) - cpu_before.0,
        apiserver_cpu: apiserver_cpu() - cpu_before.1,
        bench_cpu: process_cpu("self") - cpu_before.2,
        requests: server.requests() - requests_before,
    };
    println!(
        "convergence: {:.2?} for {} resource changes; operator peak RSS {:.1} MiB; CPU: operator {:.1} s, test API server {:.1} s",
        figures.total(),
        2 * count,
        figures.peak_kib as f64 / 1024.0,
        figures.operator_cpu,
        figures.apiserver_cpu,
    );
    figures
}

/// Waits until every Schema's status describes its generation; returns
/// (Ready, Stalled) counts. Follows a watch (one list, then the changes), so
/// that waiting costs the API server little however many Schemas there are.
async fn converge(schemas: &Api<Schema>, count: usize) -> (usize, usize) {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    let mut outcomes = Outcomes::default();
    let mut watch = std::pin::pin!(watcher(schemas.clone(), watcher::Config::default()).default_backoff());
    loop {
        let event = match tokio::time::timeout_at(deadline, watch.next()).await {
            Ok(Some(Ok(event))) => event,
            Ok(Some(Err(_))) => continue,
            Ok(None) | Err(_) => panic!(
                "not converged after {TIMEOUT:?}: {} Ready, {} refused",
                outcomes.ready, outcomes.stalled
            ),
        };
        match event {
            watcher::Event::Init => outcomes = Outcomes::default(),
            watcher::Event::InitApply(schema) | watcher::Event::Apply(schema) => {
                outcomes.set(schema.name_any(), outcome(&schema));
            }
            watcher::Event::Delete(schema) => outcomes.set(schema.name_any(), None),
            watcher::Event::InitDone => {}
        }
        if outcomes.ready + outcomes.stalled == count {
            return (outcomes.ready, outcomes.stalled);
        }
    }
}

/// Each Schema's outcome, and how many are Ready and refused, kept as they change.
#[derive(Default)]
struct Outcomes {
    by_name: HashMap<String, Option<bool>>,
    ready: usize,
    stalled: usize,
}

impl Outcomes {
    fn set(&mut self, name: String, outcome: Option<bool>) {
        let before = self.by_name.insert(name, outcome).flatten();
        for (value, delta) in [(before, -1isize), (outcome, 1)] {
            match value {
                Some(true) => self.ready = self.ready.saturating_add_signed(delta),
                Some(false) => self.stalled = self.stalled.saturating_add_signed(delta),
                None => {}
            }
        }
    }
}

/// Whether a Schema's status describes its generation: Ready (`Some(true)`), refused
/// (`Some(false)`), or not yet (`None`).
fn outcome(schema: &Schema) -> Option<bool> {
    let status = schema.status.as_ref()?;
    if status.observed_generation != schema.metadata.generation {
        return None;
    }
    let condition = |type_: &str| status.conditions.iter().any(|c| c.type_ == type_ && c.status == "True");
    if condition("Ready") {
        Some(true)
    } else if condition("Stalled") {
        Some(false)
    } else {
        None
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

/// User plus system CPU seconds of a process (`self` or a pid), from `/proc/{pid}/stat`.
fn process_cpu(pid: &str) -> f64 {
    stat_cpu(&std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default())
}

/// User plus system CPU seconds of this process's threads named `test-apiserver`
/// (the test API server's runtime; only one server runs at a time).
fn apiserver_cpu() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    tasks
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm")).is_ok_and(|name| name.starts_with("test-apiserver"))
        })
        .map(|task| stat_cpu(&std::fs::read_to_string(task.path().join("stat")).unwrap_or_default()))
        .sum()
}

/// utime + stime of a `stat` line, in seconds: fields 14 and 15, counted after the `)` that ends
/// the command name (which may hold spaces).
fn stat_cpu(stat: &str) -> f64 {
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|value| value.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / TICKS_PER_SECOND
}
