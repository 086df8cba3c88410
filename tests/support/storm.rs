//! The SIGKILL storm, shared by the SQLite and PostgreSQL stores: 64
//! concurrent writers (one schema registered by many at once, distinct
//! schemas, and soft deletes of versions they registered) while the registry
//! process is killed at random moments and restarted, round after round.
//! After every restart each acknowledged write must still be there, as it
//! was acknowledged.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::durability::schema;
use super::registry::RegistryProcess;

/// Concurrent writers per round.
pub const WRITERS: usize = 64;
/// Subjects the distinct schemas are spread over.
const SUBJECTS: usize = 8;
/// The subject every "same schema" writer registers to.
const SHARED_SUBJECT: &str = "storm-shared";

/// What the registry acknowledged.
#[derive(Debug, Default)]
pub struct Ledger {
    /// (subject, schema index) → (ID, version) of each acknowledged registration.
    registered: BTreeMap<(String, usize), (u64, u64)>,
    /// (subject, version) of each acknowledged soft delete.
    deleted: BTreeSet<(String, u64)>,
    /// (subject, version) of soft deletes sent but not acknowledged: either outcome is right.
    maybe_deleted: BTreeSet<(String, u64)>,
}

impl Ledger {
    /// How many writes were acknowledged.
    pub fn len(&self) -> usize {
        self.registered.len() + self.deleted.len()
    }
}

/// A small deterministic generator for the kill moments, seeded per run.
pub struct Moments(u64);

impl Moments {
    /// Seeded from the clock; the seed is printed so a failure can be rerun.
    pub fn from_clock() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |elapsed| elapsed.as_nanos() as u64)
            | 1;
        println!("storm seed {seed}");
        Self(seed)
    }

    /// The next moment to kill at: 300 to 1,500 ms into a round.
    pub fn next(&mut self) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        Duration::from_millis(300 + self.0 % 1_200)
    }
}

/// One round: writers run against `registry` until it is SIGKILLed after
/// `kill_after`; what they were told succeeded goes into `ledger`.
pub async fn round(registry: &mut RegistryProcess, round: usize, kill_after: Duration, ledger: &mut Ledger) {
    let writers = Writers::start(Targets::new(vec![registry.url.clone()]), round, OnRefusal::Stop);
    tokio::time::sleep(kill_after).await;
    registry.kill();
    writers.stop_into(ledger).await;
}

/// The registry URLs writers send to, writer `n` to the `n % len`-th; a
/// restarted instance's new URL replaces its old one while they write.
#[derive(Clone)]
pub struct Targets(Arc<RwLock<Vec<String>>>);

impl Targets {
    /// Writers spread over `urls`.
    pub fn new(urls: Vec<String>) -> Self {
        Self(Arc::new(RwLock::new(urls)))
    }

    /// Points the writers of slot `slot` at `url` from their next write on.
    pub fn replace(&self, slot: usize, url: String) {
        self.0.write().unwrap()[slot] = url;
    }

    fn for_writer(&self, writer: usize) -> String {
        let urls = self.0.read().unwrap();
        urls[writer % urls.len()].clone()
    }
}

/// What a writer does when a write is not acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRefusal {
    /// Stops: the one registry it writes to was killed.
    Stop,
    /// Waits a moment and goes on: another instance (or this one, once a
    /// leader is elected again) may take the next write.
    Retry,
}

/// [`WRITERS`] concurrent writers, running until stopped.
pub struct Writers {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<(Registered, Deletes, Deletes)>>,
}

impl Writers {
    /// Starts the writers of round `round` against `targets`.
    pub fn start(targets: Targets, round: usize, on_refusal: OnRefusal) -> Self {
        let client = super::http_client();
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..WRITERS)
            .map(|writer| {
                let (client, targets, stop) = (client.clone(), targets.clone(), Arc::clone(&stop));
                tokio::spawn(
                    async move { write_until_stopped(&client, &targets, writer, round, on_refusal, &stop).await },
                )
            })
            .collect();
        Self { stop, tasks }
    }

    /// Stops the writers and enters what was acknowledged into `ledger`.
    pub async fn stop_into(self, ledger: &mut Ledger) {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            let (registered, deleted, maybe_deleted) = task.await.expect("a writer task");
            for (key, answer) in registered {
                if let Some(earlier) = ledger.registered.insert(key.clone(), answer) {
                    assert_eq!(earlier, answer, "{key:?} was acknowledged twice with different answers");
                }
            }
            ledger.deleted.extend(deleted);
            ledger.maybe_deleted.extend(maybe_deleted);
        }
    }
}

type Registered = Vec<((String, usize), (u64, u64))>;
type Deletes = Vec<(String, u64)>;

/// How long a writer waits after a refused write before it tries again.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// How long one write may take before it counts as not acknowledged.
const WRITE_TIMEOUT: Duration = Duration::from_secs(15);

async fn write_until_stopped(
    client: &reqwest::Client,
    targets: &Targets,
    writer: usize,
    round: usize,
    on_refusal: OnRefusal,
    stop: &AtomicBool,
) -> (Registered, Deletes, Deletes) {
    let mut registered = Vec::new();
    let mut deleted = Vec::new();
    let mut maybe_deleted = Vec::new();
    for step in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let url = targets.for_writer(writer);
        // A quarter of the writers register one schema together; the others distinct ones.
        let (subject, index) = if writer.is_multiple_of(4) {
            (SHARED_SUBJECT.to_owned(), 0)
        } else {
            (
                format!("storm-{}", writer % SUBJECTS),
                1 + round * 1_000_000 + writer * 10_000 + step,
            )
        };
        let Some(answer) = register(client, &url, &subject, index).await else {
            match on_refusal {
                OnRefusal::Stop => break,
                OnRefusal::Retry => {
                    tokio::time::sleep(RETRY_PAUSE).await;
                    continue;
                }
            }
        };
        registered.push(((subject.clone(), index), answer));
        // Every eighth writer soft-deletes each third version it registered.
        if writer % 8 == 1 && step % 3 == 2 {
            let reply = client
                .delete(format!("{url}/subjects/{subject}/versions/{}", answer.1))
                .timeout(WRITE_TIMEOUT)
                .send()
                .await;
            let acknowledged = match reply {
                Ok(response) if response.status().is_success() => response.json::<Value>().await.is_ok(),
                _ => false,
            };
            if !acknowledged {
                maybe_deleted.push((subject, answer.1));
                match on_refusal {
                    OnRefusal::Stop => break,
                    OnRefusal::Retry => {
                        tokio::time::sleep(RETRY_PAUSE).await;
                        continue;
                    }
                }
            }
            deleted.push((subject, answer.1));
        }
    }
    (registered, deleted, maybe_deleted)
}

/// Registers `schema(index)` under `subject`; `None` unless acknowledged.
async fn register(client: &reqwest::Client, url: &str, subject: &str, index: usize) -> Option<(u64, u64)> {
    let response = client
        .post(format!("{url}/subjects/{subject}/versions"))
        .json(&json!({ "schema": schema(index) }))
        .timeout(WRITE_TIMEOUT)
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let id = response.json::<Value>().await.ok()?["id"].as_u64()?;
    // The version the ID got under the subject: asked of the same registry.
    let version = client
        .post(format!("{url}/subjects/{subject}?deleted=true"))
        .json(&json!({ "schema": schema(index) }))
        .timeout(WRITE_TIMEOUT)
        .send()
        .await
        .ok()?
        .json::<Value>()
        .await
        .ok()?["version"]
        .as_u64()?;
    Some((id, version))
}

/// Asserts that the registry at `url` holds everything in `ledger`: each
/// registration with its ID and version, soft-deleted exactly where a
/// delete was acknowledged; no ID names two schemas; every subject's
/// versions (soft-deleted included) run 1..=N without gaps.
pub async fn assert_ledger_kept(url: &str, ledger: &Ledger) {
    let client = super::http_client();
    let started = Instant::now();
    let mut ids: BTreeMap<u64, usize> = BTreeMap::new();
    let mut lives: BTreeMap<String, Option<Vec<u64>>> = BTreeMap::new();
    for ((subject, index), (id, version)) in &ledger.registered {
        let found: Value = client
            .get(format!("{url}/subjects/{subject}/versions/{version}?deleted=true"))
            .send()
            .await
            .expect("the restarted registry answers")
            .json()
            .await
            .expect("a JSON answer");
        assert_eq!(
            found["id"].as_u64(),
            Some(*id),
            "{subject} version {version} (schema {index})"
        );
        assert_eq!(
            found["schema"].as_str(),
            Some(schema(*index).as_str()),
            "{subject} version {version}"
        );
        if let Some(other) = ids.insert(*id, *index)
            && other != *index
        {
            panic!("ID {id} was given to schemas {other} and {index}");
        }
        let live = lives.entry(subject.clone()).or_default();
        if live.is_none() {
            *live = Some(
                client
                    .get(format!("{url}/subjects/{subject}/versions"))
                    .send()
                    .await
                    .expect("an answer")
                    .json()
                    .await
                    .unwrap_or_default(),
            );
        }
        let key = (subject.clone(), *version);
        if !ledger.maybe_deleted.contains(&key) {
            let gone = !live.as_ref().is_some_and(|live| live.contains(version));
            assert_eq!(
                gone,
                ledger.deleted.contains(&key),
                "{subject} version {version}: soft-deleted exactly when a delete was acknowledged"
            );
        }
    }
    let subjects: BTreeSet<&String> = ledger.registered.keys().map(|(subject, _)| subject).collect();
    for subject in subjects {
        let versions: Vec<u64> = client
            .get(format!("{url}/subjects/{subject}/versions?deleted=true"))
            .send()
            .await
            .expect("an answer")
            .json()
            .await
            .expect("a list of versions");
        let expected: Vec<u64> = (1..=versions.len() as u64).collect();
        assert_eq!(versions, expected, "versions of {subject} run without gaps");
    }
    println!(
        "checked {} acknowledged writes in {:?}",
        ledger.len(),
        started.elapsed()
    );
}

/// Everything the registry at `url` holds, as `/schemas` lists it: every
/// version (soft-deleted ones included) with its subject, ID and schema,
/// then the live versions alone; two instances on one store must agree.
pub async fn contents(url: &str) -> (Value, Value) {
    let client = super::http_client();
    let mut lists = Vec::new();
    for query in ["?deleted=true", ""] {
        let list: Value = client
            .get(format!("{url}/schemas{query}"))
            .send()
            .await
            .expect("the registry answers")
            .json()
            .await
            .expect("a JSON list");
        lists.push(list);
    }
    let live = lists.pop().expect("two lists");
    (lists.pop().expect("two lists"), live)
}
