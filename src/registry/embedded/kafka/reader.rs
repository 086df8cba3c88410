//! Reads the store's topic from an offset to its end and yields the
//! committed records, decoded, in offset order.
//!
//! # Guarantees
//! A record written inside a transaction is yielded only after the
//! transaction's COMMIT marker is read, and never when its ABORT marker is
//! (also the marker the broker writes when a newer producer with the same
//! transactional ID fences an open transaction). This does not rely on the
//! broker's list of aborted transactions in `read_committed` fetches, which
//! some brokers leave empty (Tansu 0.6.0 does). Records written outside a
//! transaction (as Confluent and Karapace write them) are yielded as read,
//! but never ahead of an undecided transaction before them.

use std::collections::VecDeque;
use std::time::Duration;

use kafka_protocol::records::Record as BatchRecord;

use super::client::{ClientError, Connection, Transport};
use super::format::{self, Decoded};

/// How long one fetch waits for records that are not there yet.
const FETCH_WAIT: Duration = Duration::from_millis(500);

/// The control record type of an ABORT marker (a COMMIT marker is 1).
const ABORT_MARKER: i16 = 0;

/// A committed record of the topic, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its offset.
    pub offset: i64,
    /// What it says.
    pub decoded: Decoded,
}

/// A reader of partition 0 of the store's topic.
pub struct TopicReader {
    connection: Connection,
    topic: String,
    /// The next offset to fetch.
    position: i64,
    transactions: TransactionFilter,
}

impl TopicReader {
    /// Connects to the leader of the topic's partition, to read from `offset`.
    ///
    /// # Errors
    /// [`ClientError`] when the brokers cannot be reached, or the topic is
    /// missing or has more than one partition.
    pub async fn open(
        bootstrap: &str,
        topic: &str,
        offset: i64,
        transport: impl Into<Transport>,
    ) -> Result<Self, ClientError> {
        Ok(Self {
            connection: Self::connect(bootstrap, topic, transport.into()).await?,
            topic: topic.to_owned(),
            position: offset,
            transactions: TransactionFilter::default(),
        })
    }

    /// Connects again (after the connection failed), to go on from where
    /// the last successful fetch ended; undecided transactions stay held.
    ///
    /// # Errors
    /// As [`Self::open`].
    pub async fn reconnect(&mut self, bootstrap: &str) -> Result<(), ClientError> {
        let transport = self.connection.transport().clone();
        self.connection = Self::connect(bootstrap, &self.topic, transport).await?;
        Ok(())
    }

    async fn connect(bootstrap: &str, topic: &str, transport: Transport) -> Result<Connection, ClientError> {
        let mut connection = Connection::connect_any(bootstrap, transport.clone()).await?;
        let (leader, partitions) = connection
            .partition_leader(topic)
            .await?
            .ok_or_else(|| ClientError::Topic {
                topic: topic.to_owned(),
                problem: "does not exist".to_owned(),
            })?;
        if partitions != 1 {
            return Err(ClientError::Topic {
                topic: topic.to_owned(),
                problem: format!("has {partitions} partitions; the store's log must have exactly one"),
            });
        }
        if leader != connection.address() {
            connection = Connection::connect(&leader, transport).await?;
        }
        Ok(connection)
    }

    /// The offset after the last record read, markers included.
    pub fn position(&self) -> i64 {
        self.position
    }

    /// Reads every record committed before this call, from where the last
    /// call stopped. Records that do not decode are logged and skipped, as
    /// Karapace's non-strict reader does.
    ///
    /// # Errors
    /// [`ClientError`] when a request fails; the next call reads again from
    /// where the last successful fetch ended.
    pub async fn read_to_end(&mut self) -> Result<Vec<Entry>, ClientError> {
        let end = self.connection.end_offset(&self.topic).await?;
        let mut entries = Vec::new();
        while self.position < end {
            let records = self.connection.fetch(&self.topic, self.position, FETCH_WAIT).await?;
            let Some(last) = records.last() else {
                // The end moved back (the log was truncated) or the broker has
                // nothing yet: ask again next time.
                break;
            };
            self.position = last.offset + 1;
            for record in records {
                self.transactions.push(record);
            }
            entries.extend(self.transactions.drain_decided().filter_map(decode_entry));
        }
        Ok(entries)
    }
}

fn decode_entry(record: BatchRecord) -> Option<Entry> {
    match format::decode(record.key.as_deref(), record.value.as_deref()) {
        Ok(decoded) => {
            if let Decoded::Skipped { keytype } = &decoded {
                tracing::warn!(offset = record.offset, keytype = %keytype, "Skipped a record of an unknown key type");
            }
            Some(Entry {
                offset: record.offset,
                decoded,
            })
        }
        Err(error) => {
            tracing::warn!(
                offset = record.offset,
                error = &error as &dyn std::error::Error,
                "Skipped a record that does not decode"
            );
            None
        }
    }
}

/// Holds the records of open transactions until their markers decide them.
#[derive(Default)]
struct TransactionFilter {
    /// Records in offset order; `Some(producer)` while undecided.
    held: VecDeque<(Option<i64>, BatchRecord)>,
}

impl TransactionFilter {
    /// Takes the next record in offset order.
    fn push(&mut self, record: BatchRecord) {
        if record.control {
            let producer = record.producer_id;
            if control_type(&record) == Some(ABORT_MARKER) {
                self.held.retain(|(undecided, _)| *undecided != Some(producer));
            } else {
                for (undecided, _) in &mut self.held {
                    if *undecided == Some(producer) {
                        *undecided = None;
                    }
                }
            }
        } else if record.transactional {
            self.held.push_back((Some(record.producer_id), record));
        } else {
            self.held.push_back((None, record));
        }
    }

    /// The decided records at the front, in offset order.
    fn drain_decided(&mut self) -> impl Iterator<Item = BatchRecord> + '_ {
        let decided = self
            .held
            .iter()
            .position(|(undecided, _)| undecided.is_some())
            .unwrap_or(self.held.len());
        self.held.drain(..decided).map(|(_, record)| record)
    }
}

/// The type of a control record: its key is a version (i16) then a type (i16).
fn control_type(record: &BatchRecord) -> Option<i16> {
    let key = record.key.as_deref()?;
    Some(i16::from_be_bytes([*key.get(2)?, *key.get(3)?]))
}
