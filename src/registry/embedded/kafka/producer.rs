//! The store's one writer: an idempotent, transactional producer for
//! partition 0 of the topic, with a stable transactional ID.
//!
//! # Guarantees
//! Each [`TransactionalProducer::write`] is one transaction: its records
//! become visible to readers together, at its COMMIT marker, or never.
//! When another producer starts with the same transactional ID, the broker
//! bumps the ID's epoch and aborts this producer's open transaction; every
//! later request of this producer is refused ([`ProducerError::Fenced`]), so
//! a writer that was paused or cut off cannot append after its successor
//! started.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, EndTxnRequest, FindCoordinatorRequest, InitProducerIdRequest, ProduceRequest,
    ProducerId, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record as BatchRecord, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::client::{ClientError, Connection, Transport, Versioned, topic_name};
use super::format::Encoded;

/// How long the broker may keep a transaction open before aborting it.
const TRANSACTION_TIMEOUT: Duration = Duration::from_secs(60);

/// `key_type` of a FindCoordinator lookup for a transaction coordinator.
const TRANSACTION_COORDINATOR: i8 = 1;

/// `acks` that waits for every in-sync replica.
const ALL_REPLICAS: i16 = -1;

/// Kafka's error codes the producer acts on.
mod code {
    pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
    pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    pub const INVALID_PRODUCER_EPOCH: i16 = 47;
    pub const CONCURRENT_TRANSACTIONS: i16 = 51;
    pub const PRODUCER_FENCED: i16 = 90;
}

/// How long to wait between tries of a request the broker asked to repeat.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// Why a write failed.
#[derive(Debug, thiserror::Error)]
pub enum ProducerError {
    /// A newer producer with the same transactional ID started: this one may
    /// never write again, and its open transaction is aborted.
    #[error("the Kafka producer {transactional_id} was fenced by a newer one with the same transactional ID")]
    Fenced {
        /// The transactional ID.
        transactional_id: String,
    },
    /// A request failed.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// The transactional producer.
pub struct TransactionalProducer {
    coordinator: Connection,
    leader: Connection,
    topic: String,
    transactional_id: String,
    producer_id: i64,
    epoch: i16,
    /// The sequence number of the next record (per producer ID and epoch).
    sequence: i32,
    /// Whether partition 0 was added to the open transaction.
    in_transaction: bool,
    timeout: Duration,
}

impl TransactionalProducer {
    /// Starts a producer with `transactional_id`, fencing any earlier one
    /// with the same ID.
    ///
    /// # Errors
    /// [`ProducerError`] when the brokers cannot be reached or refuse.
    pub async fn start(
        bootstrap: &str,
        topic: &str,
        transactional_id: &str,
        transport: impl Into<Transport>,
    ) -> Result<Self, ProducerError> {
        let transport = transport.into();
        let timeout = transport.timeout;
        let mut bootstrap_connection = Connection::connect_any(bootstrap, transport.clone()).await?;
        let (leader_address, _) =
            bootstrap_connection
                .partition_leader(topic)
                .await?
                .ok_or_else(|| ClientError::Topic {
                    topic: topic.to_owned(),
                    problem: "does not exist".to_owned(),
                })?;
        let deadline = Instant::now() + timeout;
        let coordinator_address = loop {
            let request = FindCoordinatorRequest::default()
                .with_key(StrBytes::from_string(transactional_id.to_owned()))
                .with_key_type(TRANSACTION_COORDINATOR);
            let response = bootstrap_connection.call(&request).await?;
            match response.error_code {
                0 => break format!("{}:{}", response.host.as_str(), response.port),
                code::COORDINATOR_NOT_AVAILABLE | code::COORDINATOR_LOAD_IN_PROGRESS if Instant::now() < deadline => {
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                code => bootstrap_connection.check(FindCoordinatorRequest::NAME, code)?,
            }
        };
        let mut coordinator = reuse_or_connect(bootstrap_connection, &coordinator_address).await?;
        let (producer_id, epoch) = loop {
            let request = InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(StrBytes::from_string(
                    transactional_id.to_owned(),
                ))))
                .with_transaction_timeout_ms(duration_ms(TRANSACTION_TIMEOUT))
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            let response = coordinator.call(&request).await?;
            match response.error_code {
                0 => break (response.producer_id.0, response.producer_epoch),
                // The previous producer's transaction is still being aborted.
                code::CONCURRENT_TRANSACTIONS | code::COORDINATOR_LOAD_IN_PROGRESS if Instant::now() < deadline => {
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                code => coordinator.check(InitProducerIdRequest::NAME, code)?,
            }
        };
        let leader = Connection::connect(&leader_address, transport).await?;
        Ok(Self {
            coordinator,
            leader,
            topic: topic.to_owned(),
            transactional_id: transactional_id.to_owned(),
            producer_id,
            epoch,
            sequence: 0,
            in_transaction: false,
            timeout,
        })
    }

    /// Writes `records` in one transaction and returns the offset of the
    /// first one.
    ///
    /// # Errors
    /// [`ProducerError::Fenced`] when a newer producer took over; another
    /// [`ProducerError`] when a request failed (the transaction is then
    /// aborted if the broker can still be told, else by its timeout).
    pub async fn write(&mut self, records: &[Encoded]) -> Result<i64, ProducerError> {
        let offset = match self.send(records).await {
            Ok(offset) => offset,
            Err(error) => {
                if !matches!(error, ProducerError::Fenced { .. }) && self.in_transaction {
                    let _ = self.end(false).await;
                }
                return Err(error);
            }
        };
        self.commit().await?;
        Ok(offset)
    }

    /// Adds the partition to a new transaction and sends `records` in it;
    /// returns the offset of the first. Nothing is visible before [`Self::commit`].
    ///
    /// # Errors
    /// As [`Self::write`].
    pub async fn send(&mut self, records: &[Encoded]) -> Result<i64, ProducerError> {
        if !self.in_transaction {
            self.add_partition().await?;
            self.in_transaction = true;
        }
        let batch = self.batch(records)?;
        let request = ProduceRequest::default()
            .with_transactional_id(Some(TransactionalId(StrBytes::from_string(
                self.transactional_id.clone(),
            ))))
            .with_acks(ALL_REPLICAS)
            .with_timeout_ms(duration_ms(self.timeout))
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(topic_name(&self.topic))
                    .with_partition_data(vec![
                        PartitionProduceData::default().with_index(0).with_records(Some(batch)),
                    ]),
            ]);
        let response = match self.leader.call(&request).await {
            Ok(response) => response,
            Err(error) => {
                if let Some(fresh) = reconnect_after(&error, &self.leader).await {
                    self.leader = fresh;
                }
                return Err(error.into());
            }
        };
        let partition = response
            .responses
            .iter()
            .flat_map(|topic| &topic.partition_responses)
            .find(|partition| partition.index == 0)
            .ok_or_else(|| {
                self.leader
                    .protocol(ProduceRequest::NAME, "no partition 0 in the answer".to_owned())
            })?;
        let (error_code, base_offset) = (partition.error_code, partition.base_offset);
        self.fenced_or(ProduceRequest::NAME, error_code, Side::Leader)?;
        self.sequence = self
            .sequence
            .wrapping_add(i32::try_from(records.len()).unwrap_or(i32::MAX));
        Ok(base_offset)
    }

    /// Commits the open transaction.
    ///
    /// # Errors
    /// As [`Self::write`]; when fenced, the broker has aborted it.
    pub async fn commit(&mut self) -> Result<(), ProducerError> {
        self.end(true).await
    }

    async fn end(&mut self, committed: bool) -> Result<(), ProducerError> {
        let request = EndTxnRequest::default()
            .with_transactional_id(TransactionalId(StrBytes::from_string(self.transactional_id.clone())))
            .with_producer_id(ProducerId(self.producer_id))
            .with_producer_epoch(self.epoch)
            .with_committed(committed);
        let deadline = Instant::now() + self.timeout;
        loop {
            let response = self.call_coordinator(&request).await?;
            match response.error_code {
                code::CONCURRENT_TRANSACTIONS if Instant::now() < deadline => tokio::time::sleep(RETRY_PAUSE).await,
                code => {
                    self.in_transaction = false;
                    return self.fenced_or(EndTxnRequest::NAME, code, Side::Coordinator);
                }
            }
        }
    }

    async fn add_partition(&mut self) -> Result<(), ProducerError> {
        let request = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(TransactionalId(StrBytes::from_string(self.transactional_id.clone())))
            .with_v3_and_below_producer_id(ProducerId(self.producer_id))
            .with_v3_and_below_producer_epoch(self.epoch)
            .with_v3_and_below_topics(vec![
                AddPartitionsToTxnTopic::default()
                    .with_name(topic_name(&self.topic))
                    .with_partitions(vec![0]),
            ]);
        let deadline = Instant::now() + self.timeout;
        loop {
            let response = self.call_coordinator(&request).await?;
            let code = response
                .results_by_topic_v3_and_below
                .iter()
                .flat_map(|topic| &topic.results_by_partition)
                .map(|partition| partition.partition_error_code)
                .find(|code| *code != 0)
                .unwrap_or(response.error_code);
            match code {
                code::CONCURRENT_TRANSACTIONS if Instant::now() < deadline => tokio::time::sleep(RETRY_PAUSE).await,
                code => return self.fenced_or(AddPartitionsToTxnRequest::NAME, code, Side::Coordinator),
            }
        }
    }

    /// Sends a request to the transaction coordinator; after a broken
    /// connection the next request goes over a new one. (Tansu 0.6.0 closes
    /// the connection instead of answering a fenced producer's EndTxn.)
    async fn call_coordinator<R: Versioned>(&mut self, request: &R) -> Result<R::Response, ClientError> {
        let result = self.coordinator.call(request).await;
        if let Err(error) = &result
            && let Some(fresh) = reconnect_after(error, &self.coordinator).await
        {
            self.coordinator = fresh;
        }
        result
    }

    /// `records` as one transactional batch with this producer's sequence numbers.
    fn batch(&self, records: &[Encoded]) -> Result<Bytes, ProducerError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX));
        let records: Vec<BatchRecord> = records
            .iter()
            .zip(0..)
            .map(|(record, index)| BatchRecord {
                transactional: true,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: self.producer_id,
                producer_epoch: self.epoch,
                timestamp_type: TimestampType::Creation,
                offset: i64::from(index),
                sequence: self.sequence.wrapping_add(index),
                timestamp: now,
                key: Some(Bytes::copy_from_slice(&record.key)),
                value: record.value.as_deref().map(Bytes::copy_from_slice),
                headers: Default::default(),
            })
            .collect();
        let mut buffer = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buffer,
            &records,
            &RecordEncodeOptions {
                version: 2,
                compression: Compression::None,
            },
        )
        .map_err(|error| {
            self.leader
                .protocol(ProduceRequest::NAME, format!("cannot encode the batch: {error}"))
        })?;
        Ok(buffer.freeze())
    }

    /// `Ok` for no error, [`ProducerError::Fenced`] for the fencing codes,
    /// the broker's error otherwise.
    fn fenced_or(&self, api: &'static str, code: i16, side: Side) -> Result<(), ProducerError> {
        match code {
            0 => Ok(()),
            code::PRODUCER_FENCED | code::INVALID_PRODUCER_EPOCH => Err(ProducerError::Fenced {
                transactional_id: self.transactional_id.clone(),
            }),
            code => {
                let connection = match side {
                    Side::Coordinator => &self.coordinator,
                    Side::Leader => &self.leader,
                };
                connection.check(api, code).map_err(ProducerError::from)
            }
        }
    }
}

/// Which connection a request went to.
#[derive(Clone, Copy)]
enum Side {
    Coordinator,
    Leader,
}

/// A new connection to the same broker when `error` broke the old one.
async fn reconnect_after(error: &ClientError, broken: &Connection) -> Option<Connection> {
    if !matches!(error, ClientError::Io { .. } | ClientError::Timeout { .. }) {
        return None;
    }
    Connection::connect(broken.address(), broken.transport().clone())
        .await
        .ok()
}

/// The bootstrap connection when it is the broker wanted, else a new one.
async fn reuse_or_connect(connection: Connection, address: &str) -> Result<Connection, ClientError> {
    if connection.address() == address {
        Ok(connection)
    } else {
        Connection::connect(address, connection.transport().clone()).await
    }
}

fn duration_ms(duration: Duration) -> i32 {
    i32::try_from(duration.as_millis()).unwrap_or(i32::MAX)
}
