//! The SIGKILL durability check, shared by the SQLite and PostgreSQL stores:
//! concurrent writers register distinct schemas while the registry process
//! is killed, then a restarted registry must hold every registration it
//! acknowledged, with the same ID, and versions without gaps.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::registry::RegistryProcess;

/// How many subjects the writers share.
const SUBJECTS: usize = 4;

/// Distinct Avro schemas (their docs differ) that are all compatible with each other.
pub fn schema(index: usize) -> String {
    format!(r#"{{"type":"record","name":"R","doc":"{index}","fields":[{{"name":"f","type":"long"}}]}}"#)
}

/// A registration the registry answered with success.
#[derive(Debug)]
pub struct Acknowledged {
    /// The subject it was registered under.
    pub subject: String,
    /// Which [`schema`] it was.
    pub index: usize,
    /// The ID the registry answered with.
    pub id: u64,
}

/// Runs `writers` concurrent writers against `registry`, each registering up
/// to 200 distinct schemas, and SIGKILLs the registry after `kill_after`.
/// Returns every registration acknowledged before the kill.
pub async fn register_until_killed(
    registry: &mut RegistryProcess,
    writers: usize,
    kill_after: Duration,
) -> Vec<Acknowledged> {
    let client = super::http_client();
    let tasks: Vec<_> = (0..writers)
        .map(|writer| {
            let client = client.clone();
            let url = registry.url.clone();
            tokio::spawn(async move {
                let mut acknowledged = Vec::new();
                for step in 0..200 {
                    let index = writer * 1000 + step;
                    let subject = format!("subject-{}", writer % SUBJECTS);
                    let reply = client
                        .post(format!("{url}/subjects/{subject}/versions"))
                        .json(&json!({ "schema": schema(index) }))
                        .send()
                        .await;
                    let Ok(response) = reply else { break };
                    if !response.status().is_success() {
                        break;
                    }
                    match response.json::<Value>().await.map(|body| body["id"].as_u64()) {
                        Ok(Some(id)) => acknowledged.push(Acknowledged { subject, index, id }),
                        // The answer was cut off by the kill: not acknowledged.
                        _ => break,
                    }
                }
                acknowledged
            })
        })
        .collect();
    tokio::time::sleep(kill_after).await;
    registry.kill();
    let mut acknowledged = Vec::new();
    for task in tasks {
        acknowledged.extend(task.await.expect("a writer task"));
    }
    acknowledged
}

/// Asserts that the registry at `url` holds every acknowledged registration
/// under its subject with the ID it was given, that no ID names two
/// schemas, and that every subject's versions run 1..=N without gaps.
pub async fn assert_all_kept(url: &str, acknowledged: &[Acknowledged]) {
    let client = super::http_client();
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    for Acknowledged { subject, index, id } in acknowledged {
        let response = client
            .post(format!("{url}/subjects/{subject}"))
            .json(&json!({ "schema": schema(*index) }))
            .send()
            .await
            .expect("the restarted registry answers");
        assert!(
            response.status().is_success(),
            "acknowledged schema {index} under {subject} is gone"
        );
        let found: Value = response.json().await.expect("a JSON answer");
        assert_eq!(found["id"].as_u64(), Some(*id), "schema {index} kept its ID");
        if let Some(other) = seen.insert(*id, *index) {
            panic!("ID {id} was given to schemas {other} and {index}");
        }
    }
    for subject in 0..SUBJECTS {
        let versions: Vec<u64> = client
            .get(format!("{url}/subjects/subject-{subject}/versions"))
            .send()
            .await
            .expect("the restarted registry answers")
            .json()
            .await
            .expect("a list of versions");
        let expected: Vec<u64> = (1..=versions.len() as u64).collect();
        assert_eq!(versions, expected, "versions of subject-{subject} run without gaps");
    }
}
