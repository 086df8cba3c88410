//! The SIGKILL storm on a Kafka topic (issue 43): two `schemaops registry
//! --store kafka://…` instances on one Tansu broker, 64 concurrent writers
//! through both of them (the follower forwards to the leader): one schema
//! registered by many at once, distinct schemas, soft deletes. Round after
//! round the current leader is SIGKILLed at a random moment while the
//! writers go on, the other instance takes over, and the killed one is
//! restarted. After each round every acknowledged write is on both
//! instances with its ID and version, no ID names two schemas, versions
//! are gapless, and both instances answer alike. Writes refused while no
//! leader is known (50004) or whose forwarding failed (50003) are not
//! acknowledged, so they are not in the ledger; an acknowledged write that
//! is lost fails the test.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::broker::Broker;
use support::registry::RegistryProcess;
use support::storm::{self, Ledger, Moments, OnRefusal, Targets, Writers};

/// Leader kills; the whole test stays within about 90 s.
const ROUNDS: usize = 4;

/// Short, so that the coordinator drops a killed leader within seconds.
const SESSION_TIMEOUT_MS: &str = "2000";

/// How long an election may take.
const SETTLE: Duration = Duration::from_secs(20);

/// How long the writers go on through both instances once the killed one is back.
const AFTER_RESTART: Duration = Duration::from_millis(700);

/// Starts an instance on `data`, its log in `data/registry.log` (a killed
/// leader's followers warn of every write they could not forward).
async fn start_instance(data: &Path, store: &str) -> RegistryProcess {
    RegistryProcess::start_logging_to(
        data,
        &[
            "--store",
            store,
            "--store-topic-replication-factor",
            "1",
            "--store-session-timeout-ms",
            SESSION_TIMEOUT_MS,
        ],
        &data.join("registry.log"),
    )
    .await
}

/// Whether the instance at `url` says it leads the store's writers
/// (`None` when it does not answer).
async fn leads(client: &reqwest::Client, url: &str) -> Option<bool> {
    let text = client
        .get(format!("{url}/metrics"))
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let value = support::metric(&text, "schemaops_registry_store_leader").expect("the leader gauge");
    Some(value == 1.0)
}

/// The index of the one instance that leads, waiting up to [`SETTLE`] for
/// exactly one to say so.
async fn leader_of(client: &reqwest::Client, instances: &[RegistryProcess]) -> usize {
    let started = Instant::now();
    loop {
        let mut leaders = Vec::new();
        for (index, instance) in instances.iter().enumerate() {
            if leads(client, &instance.url).await == Some(true) {
                leaders.push(index);
            }
        }
        if let [only] = leaders.as_slice() {
            return *only;
        }
        assert!(
            started.elapsed() < SETTLE,
            "no single leader within {SETTLE:?}: {leaders:?} say they lead"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_keep_every_acknowledged_write_through_leader_sigkills() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let test_started = Instant::now();
    let store = format!("kafka://{}/_schemas", broker.address);
    let folders = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let client = support::http_client();
    let mut instances = Vec::new();
    for folder in &folders {
        instances.push(start_instance(folder.path(), &store).await);
    }
    leader_of(&client, &instances).await;
    println!("both instances up and one elected after {:?}", test_started.elapsed());

    let mut moments = Moments::from_clock();
    let mut ledger = Ledger::default();
    for round in 0..ROUNDS {
        let targets = Targets::new(instances.iter().map(|instance| instance.url.clone()).collect());
        let writers = Writers::start(targets.clone(), round, OnRefusal::Retry);
        let kill_after = moments.next();
        tokio::time::sleep(kill_after).await;
        let killed = leader_of(&client, &instances).await;
        instances[killed].kill();
        let kill_time = Instant::now();
        // The other instance takes over while the writers go on.
        let survivor = leader_of(&client, &instances).await;
        assert_ne!(survivor, killed, "a killed instance cannot lead");
        let taken_over = kill_time.elapsed();
        instances[killed] = start_instance(folders[killed].path(), &store).await;
        targets.replace(killed, instances[killed].url.clone());
        let restarted = kill_time.elapsed();
        tokio::time::sleep(AFTER_RESTART).await;
        let before = ledger.len();
        writers.stop_into(&mut ledger).await;
        println!(
            "round {round}: SIGKILLed the leader (instance {killed}) after {kill_after:?}; instance {survivor} \
             led {taken_over:?} later, the killed one served again after {restarted:?}; {} writes acknowledged",
            ledger.len() - before
        );
        for instance in &instances {
            storm::assert_ledger_kept(&instance.url, &ledger).await;
        }
        assert_eq!(
            storm::contents(&instances[0].url).await,
            storm::contents(&instances[1].url).await,
            "both instances answer alike after round {round}"
        );
    }
    assert!(ledger.len() > 20, "the writers got through ({} writes)", ledger.len());
    println!(
        "{} acknowledged writes kept through {ROUNDS} leader SIGKILLs in {:?}",
        ledger.len(),
        test_started.elapsed()
    );
}
