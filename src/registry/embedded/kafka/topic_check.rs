//! The checks on the store's topic at start, after Confluent's
//! `KafkaStore.createOrVerifySchemaTopic`: a missing topic is created (one
//! partition, `cleanup.policy=compact`, the wanted replication factor or as
//! many replicas as there are live brokers, whichever is smaller); an
//! existing one must have one partition and `cleanup.policy=compact`, and a
//! replication below the wanted one is a warning. Skipping every check (as
//! Confluent's `kafkastore.topic.skip.validation`) is the caller's choice.
//!
//! Beyond Confluent, `min.insync.replicas` is read: below 2 an acknowledged
//! write may live on one broker only, above the replication factor no write
//! is ever acknowledged; both are warnings.

use super::client::{ClientError, Connection, Transport};

/// What to do about the topic at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicPolicy {
    /// Create the topic when it is missing.
    pub create: bool,
    /// The replication factor wanted (Confluent's
    /// `kafkastore.topic.replication.factor`, 3 by default).
    pub replication_factor: i16,
    /// Check nothing and create nothing.
    pub skip_validation: bool,
}

impl Default for TopicPolicy {
    fn default() -> Self {
        Self {
            create: true,
            replication_factor: 3,
            skip_validation: false,
        }
    }
}

/// What the checks found that was not as wanted but did not refuse the
/// topic, for the log and for tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicReport {
    /// Whether the topic was created.
    pub created: bool,
    /// Warnings, one sentence each.
    pub warnings: Vec<String>,
}

/// Creates or verifies `topic` under `policy`; a refusal is a
/// [`ClientError::Topic`] naming the topic and what is wrong.
///
/// # Errors
/// [`ClientError`] when the brokers cannot be reached, the topic cannot be
/// created, or it is refused.
pub async fn create_or_verify(
    bootstrap: &str,
    topic: &str,
    policy: TopicPolicy,
    transport: impl Into<Transport>,
) -> Result<TopicReport, ClientError> {
    let mut report = TopicReport::default();
    if policy.skip_validation {
        return Ok(report);
    }
    let mut connection = Connection::connect_any(bootstrap, transport).await?;
    if connection.topic_layout(topic).await?.is_none() {
        if !policy.create {
            return Err(ClientError::Topic {
                topic: topic.to_owned(),
                problem: "does not exist (and creating it was not allowed)".to_owned(),
            });
        }
        let live = connection.live_brokers().await?;
        if live == 0 {
            return Err(ClientError::Topic {
                topic: topic.to_owned(),
                problem: "cannot be created: the cluster has no live broker".to_owned(),
            });
        }
        let replication = policy.replication_factor.min(i16::try_from(live).unwrap_or(i16::MAX));
        if replication < policy.replication_factor {
            report.warnings.push(format!(
                "created topic {topic} with a replication factor of {replication}, below the wanted {}: \
                 the cluster has {live} live brokers",
                policy.replication_factor
            ));
        }
        report.created = connection
            .create_topic(topic, replication, &[("cleanup.policy", "compact")])
            .await?;
    }
    verify(&mut connection, topic, policy, &mut report).await?;
    Ok(report)
}

async fn verify(
    connection: &mut Connection,
    topic: &str,
    policy: TopicPolicy,
    report: &mut TopicReport,
) -> Result<(), ClientError> {
    let refuse = |problem: String| ClientError::Topic {
        topic: topic.to_owned(),
        problem,
    };
    let layout = connection
        .topic_layout(topic)
        .await?
        .ok_or_else(|| refuse("does not exist".to_owned()))?;
    if layout.partitions != 1 {
        return Err(refuse(format!(
            "has {} partitions; the store's log must have exactly 1 (records of one subject would be \
             ordered per partition only)",
            layout.partitions
        )));
    }
    let wanted = usize::try_from(policy.replication_factor).unwrap_or(0);
    if layout.replicas < wanted {
        report.warnings.push(format!(
            "topic {topic} has {} replicas, below the wanted {wanted}: a broker's loss may lose schemas",
            layout.replicas
        ));
    }
    let configs = connection
        .topic_configs(topic, &["cleanup.policy", "min.insync.replicas"])
        .await?;
    let cleanup = configs.first().cloned().flatten();
    if cleanup.as_deref().map(str::trim) != Some("compact") {
        return Err(refuse(format!(
            "has cleanup.policy={}; it must be `compact`, or the broker deletes schemas once they are older \
             than the retention time",
            cleanup.as_deref().unwrap_or("(not reported)")
        )));
    }
    let min_insync = configs
        .get(1)
        .cloned()
        .flatten()
        .and_then(|value| value.trim().parse::<usize>().ok());
    match min_insync {
        Some(min) if min > layout.replicas => report.warnings.push(format!(
            "topic {topic} has min.insync.replicas={min} but {} replicas: no write can be acknowledged",
            layout.replicas
        )),
        Some(min) if min < 2 && wanted >= 2 => report.warnings.push(format!(
            "topic {topic} has min.insync.replicas={min}: an acknowledged write may be on one broker only"
        )),
        _ => {}
    }
    Ok(())
}
