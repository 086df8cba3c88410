//! [`KafkaStore`]: the [`Store`] on a topic. Every instance reads the topic
//! from the start and follows it; the revision is the offset after the last
//! record read; a write is one transaction of the instance's transactional
//! producer.
//!
//! # Guarantees
//! A write is made only on top of everything committed (the reader catches
//! up after the producer started, and a producer started later by another
//! instance fences this one), and acknowledged only after this instance's
//! reader read it back. Once fenced, an instance writes no more: every
//! later write fails until it is started again.
//!
//! With a [`Leadership`] ([`KafkaStore::led_by`]) an instance writes only
//! while it leads the group ([`super::election`]), with a producer started
//! for the generation it leads; otherwise writes get [`NoLeader`] (the HTTP
//! layer forwards them to the leader before they get here). A fenced
//! leader steps down and follows; without a `Leadership` a fenced instance
//! refuses every later write until restarted. An instance opened
//! [`read_only`](KafkaOptions::read_only) never starts a producer and
//! refuses writes with [`ReadOnlyStore`].
//!
//! # When the broker is away
//! Reads are served from what was read before: a catch-up that cannot reach
//! the broker logs a warning and reports nothing new; the reader connects
//! again, with a backoff of up to [`MAX_RECONNECT_BACKOFF`] between tries,
//! and carries on from its offset. A write fails while the broker is away;
//! the next write starts a new producer.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::Mutex;

use std::path::PathBuf;

use super::client::{ClientError, Transport};
use super::election::{ElectionOptions, Leadership, Role};
use super::producer::{ProducerError, TransactionalProducer};
use super::reader::TopicReader;
use super::replay::{Fingerprint, Replay};
use super::sasl::SaslCredentials;
use super::topic_check::{self, TopicPolicy};
use crate::registry::embedded::store::{
    Applied, Batch, CatchUp, Change, NoLeader, ReadOnlyStore, Snapshot, Store, StoreError,
};

/// How many caught-up batches an instance keeps for [`Store::changes_since`]
/// callers that are behind; older revisions get [`CatchUp::Reload`].
const KEPT_BATCHES: usize = 1024;

/// The longest pause between two tries to reach the broker again.
pub const MAX_RECONNECT_BACKOFF: Duration = Duration::from_secs(2);

/// Where the store lives and who writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaOptions {
    /// `host:port` of a broker, or several separated by commas.
    pub bootstrap: String,
    /// The topic (`_schemas` for Confluent's default).
    pub topic: String,
    /// The writer's transactional ID: the same for every instance, so a
    /// new writer fences the old one.
    pub transactional_id: String,
    /// How long a request may take.
    pub timeout: Duration,
    /// Never write: refuse every write with [`ReadOnlyStore`].
    pub read_only: bool,
    /// What to check, or create, about the topic at start.
    pub topic_policy: TopicPolicy,
    /// TLS to the brokers; `None`: plain TCP.
    pub tls: Option<KafkaTls>,
    /// SASL authentication on every connection; `None`: none.
    pub sasl: Option<SaslCredentials>,
    /// How this instance takes part in the leader election, when it may
    /// write and runs one ([`KafkaStore::led_by`]); an empty advertised URL
    /// is filled in by the registry from the address it listens on.
    pub election: Option<ElectionOptions>,
}

impl KafkaOptions {
    /// The defaults for `topic` on `bootstrap`: the transactional ID
    /// `schemaops-<topic>`, 30-second requests, writing, and the topic
    /// created or verified as Confluent does.
    pub fn new(bootstrap: impl Into<String>, topic: impl Into<String>) -> Self {
        let topic = topic.into();
        Self {
            bootstrap: bootstrap.into(),
            transactional_id: Self::default_transactional_id(&topic),
            topic,
            timeout: Duration::from_secs(30),
            read_only: false,
            topic_policy: TopicPolicy::default(),
            election: None,
            tls: None,
            sasl: None,
        }
    }

    /// The transactional ID every instance on `topic` shares by default.
    pub fn default_transactional_id(topic: &str) -> String {
        format!("schemaops-{topic}")
    }
}

/// TLS to the brokers: the system's CAs and `ca_file`'s are trusted; a
/// client certificate when the brokers authenticate clients by certificate.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KafkaTls {
    /// PEM CA certificates trusted besides the system's.
    pub ca_file: Option<PathBuf>,
    /// PEM certificate chain and private key presented to the brokers.
    pub client_identity: Option<(PathBuf, PathBuf)>,
}

impl KafkaOptions {
    /// How to reach the brokers: the request timeout, TLS and SASL.
    ///
    /// # Errors
    /// When a PEM file cannot be read or TLS refuses it.
    pub fn transport(&self) -> Result<Transport, StoreError> {
        Ok(Transport {
            timeout: self.timeout,
            tls: self.tls_config()?,
            sasl: self.sasl.clone().map(Arc::new),
        })
    }

    fn tls_config(&self) -> Result<Option<Arc<rustls::ClientConfig>>, StoreError> {
        let Some(tls) = &self.tls else {
            return Ok(None);
        };
        let mut roots = rustls::RootCertStore::empty();
        crate::registry::tls::add_system_roots(&mut roots);
        if let Some(path) = &tls.ca_file {
            crate::registry::tls::add_ca_file(&mut roots, path)?;
        }
        let builder = crate::registry::tls::client_builder(roots)?;
        let config = match &tls.client_identity {
            Some((cert, key)) => {
                let (chain, key) = crate::registry::tls::read_client_identity(cert, key)?;
                builder.with_client_auth_cert(chain, key)?
            }
            None => builder.with_no_client_auth(),
        };
        Ok(Some(Arc::new(config)))
    }
}

/// The store on a Kafka topic.
pub struct KafkaStore {
    options: KafkaOptions,
    transport: Transport,
    fingerprint: Arc<Fingerprint<'static>>,
    leadership: Option<Arc<Leadership>>,
    state: Mutex<State>,
}

struct State {
    reader: TopicReader,
    replay: Replay,
    /// The batches read since start, newest last, at most [`KEPT_BATCHES`].
    recent: VecDeque<Batch>,
    /// The revision the oldest kept batch follows.
    kept_since: u64,
    producer: Option<TransactionalProducer>,
    /// The generation `producer` was started for, when elected.
    producer_generation: Option<i32>,
    fenced: bool,
    /// Set while the broker cannot be reached: when to try again, and the
    /// pause after that.
    reconnect: Option<(Instant, Duration)>,
}

impl KafkaStore {
    /// Creates or verifies the topic (see [`topic_check`]; a read-only
    /// instance creates nothing), then connects to it.
    ///
    /// # Errors
    /// When the brokers cannot be reached, or the topic is missing or refused.
    pub async fn open(options: KafkaOptions, fingerprint: Arc<Fingerprint<'static>>) -> Result<Self, StoreError> {
        let policy = TopicPolicy {
            create: options.topic_policy.create && !options.read_only,
            ..options.topic_policy
        };
        let transport = options.transport()?;
        let report =
            topic_check::create_or_verify(&options.bootstrap, &options.topic, policy, transport.clone()).await?;
        if report.created {
            tracing::info!(topic = %options.topic, "Created the store's topic");
        }
        for warning in &report.warnings {
            tracing::warn!(topic = %options.topic, "{warning}");
        }
        let reader = TopicReader::open(&options.bootstrap, &options.topic, 0, transport.clone()).await?;
        Ok(Self {
            options,
            transport,
            fingerprint,
            leadership: None,
            state: Mutex::new(State {
                reader,
                replay: Replay::default(),
                recent: VecDeque::new(),
                kept_since: 0,
                producer: None,
                producer_generation: None,
                fenced: false,
                reconnect: None,
            }),
        })
    }

    /// Writes only while `leadership` says this instance leads.
    #[must_use]
    pub fn led_by(mut self, leadership: Arc<Leadership>) -> Self {
        self.leadership = Some(leadership);
        self
    }

    /// Like [`Self::catch_up`] for reads: when the broker cannot be reached
    /// the state read so far is served (with a warning), and the reader
    /// connects again later.
    async fn catch_up_or_serve_stale(&self, state: &mut State) -> Result<(), StoreError> {
        if let Some((retry_at, _)) = state.reconnect
            && Instant::now() < retry_at
        {
            return Ok(());
        }
        match self.catch_up(state).await {
            Err(error) if is_unreachable(error.as_ref()) => {
                let pause = state.reconnect.map_or(Duration::from_millis(100), |(_, pause)| {
                    (pause * 2).min(MAX_RECONNECT_BACKOFF)
                });
                tracing::warn!(
                    error = error.as_ref() as &dyn std::error::Error,
                    retry_in = ?pause,
                    "The Kafka store's broker cannot be reached; serving what was read before"
                );
                state.reconnect = Some((Instant::now() + pause, pause));
                Ok(())
            }
            other => other,
        }
    }

    /// Reads what was committed since the last read into the model; the
    /// changes, as one batch, when there were records.
    async fn catch_up(&self, state: &mut State) -> Result<(), StoreError> {
        if state.reconnect.is_some() {
            state.reader.reconnect(&self.options.bootstrap).await?;
            tracing::info!(topic = %self.options.topic, "Reached the Kafka store's broker again");
            state.reconnect = None;
        }
        let entries = match state.reader.read_to_end().await {
            Ok(entries) => entries,
            Err(error) => {
                if is_unreachable(&error) {
                    state.reconnect = Some((Instant::now(), Duration::from_millis(100)));
                }
                return Err(Box::new(error));
            }
        };
        let mut changes = Vec::new();
        for entry in &entries {
            changes.extend(state.replay.apply(entry, self.fingerprint.as_ref())?);
        }
        if !entries.is_empty() {
            let revision = state.replay.position();
            state.recent.push_back(Batch { revision, changes });
            while state.recent.len() > KEPT_BATCHES {
                if let Some(dropped) = state.recent.pop_front() {
                    state.kept_since = dropped.revision;
                }
            }
        }
        Ok(())
    }

    /// While an elected store writes, its instance does not leave the
    /// election (see [`Leadership::leave`]).
    async fn writing(&self) -> Option<tokio::sync::RwLockReadGuard<'_, ()>> {
        match &self.leadership {
            Some(leadership) => Some(leadership.writing().await),
            None => None,
        }
    }

    /// Writes `changes` as one transaction when nothing was committed after
    /// `revision`, then reads it back.
    async fn write_after(
        &self,
        state: &mut State,
        revision: Option<u64>,
        changes: &[Change],
    ) -> Result<Applied, StoreError> {
        if self.options.read_only {
            return Err(Box::new(ReadOnlyStore));
        }
        if state.fenced {
            return Err(Box::new(ProducerError::Fenced {
                transactional_id: self.options.transactional_id.clone(),
            }));
        }
        let generation = match self.leadership.as_ref().map(|leadership| leadership.role()) {
            None => None,
            Some(Role::Leader { generation }) => Some(generation),
            Some(Role::Follower { .. } | Role::Unknown) => {
                state.producer = None;
                return Err(Box::new(NoLeader));
            }
        };
        if state.producer_generation != generation {
            // Our own election fenced the producer of an earlier generation.
            state.producer = None;
        }
        if state.producer.is_none() {
            // Started before the catch-up: a writer that started earlier is
            // fenced now, one that starts later fences us.
            let producer = TransactionalProducer::start(
                &self.options.bootstrap,
                &self.options.topic,
                &self.options.transactional_id,
                self.transport.clone(),
            )
            .await?;
            state.producer = Some(producer);
            state.producer_generation = generation;
        }
        self.catch_up(state).await?;
        let position = state.replay.position();
        if revision.is_some_and(|revision| revision != position) {
            return Ok(Applied::Behind);
        }
        let records = state.replay.encode_changes(changes)?;
        if records.is_empty() {
            return Ok(Applied::Committed { revision: position });
        }
        let producer = state.producer.as_mut().expect("started above");
        let first = match producer.write(&records).await {
            Ok(first) => first,
            Err(error) => {
                // A producer that failed is not trusted again: the next write starts a new one.
                state.producer = None;
                if matches!(error, ProducerError::Fenced { .. }) {
                    match &self.leadership {
                        Some(leadership) => {
                            tracing::warn!("The store's producer was fenced by a newer leader; stepping down");
                            leadership.step_down();
                        }
                        None => state.fenced = true,
                    }
                }
                return Err(Box::new(error));
            }
        };
        let last = u64::try_from(first).unwrap_or(0) + u64::try_from(records.len()).unwrap_or(0);
        // Acknowledged only once our own reader applied it.
        while state.replay.position() < last {
            let before = state.reader.position();
            self.catch_up(state).await?;
            if state.reader.position() == before {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        Ok(Applied::Committed {
            revision: state.replay.position(),
        })
    }
}

#[async_trait]
impl Store for KafkaStore {
    async fn load(&self) -> Result<Snapshot, StoreError> {
        let mut state = self.state.lock().await;
        self.catch_up(&mut state).await?;
        Ok(state.replay.snapshot())
    }

    async fn apply(&self, changes: Vec<Change>) -> Result<(), StoreError> {
        let _writing = self.writing().await;
        let mut state = self.state.lock().await;
        self.write_after(&mut state, None, &changes).await.map(|_| ())
    }

    async fn changes_since(&self, revision: u64) -> Result<CatchUp, StoreError> {
        let mut state = self.state.lock().await;
        self.catch_up_or_serve_stale(&mut state).await?;
        if revision >= state.replay.position() {
            return Ok(CatchUp::Batches(Vec::new()));
        }
        if revision < state.kept_since {
            return Ok(CatchUp::Reload);
        }
        Ok(CatchUp::Batches(
            state
                .recent
                .iter()
                .filter(|batch| batch.revision > revision)
                .cloned()
                .collect(),
        ))
    }

    async fn apply_after(&self, revision: u64, changes: Vec<Change>) -> Result<Applied, StoreError> {
        let _writing = self.writing().await;
        let mut state = self.state.lock().await;
        self.write_after(&mut state, Some(revision), &changes).await
    }
}

/// Whether a request failed because the broker is away (rather than
/// answering badly), so that connecting again may help.
fn is_unreachable(error: &(dyn std::error::Error + 'static)) -> bool {
    matches!(
        error.downcast_ref::<ClientError>(),
        Some(ClientError::Connect { .. } | ClientError::Io { .. } | ClientError::Timeout { .. })
    )
}
