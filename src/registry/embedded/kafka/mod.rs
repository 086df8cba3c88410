//! The Kafka store (issue 43): the registry's state as records in a
//! single-partition, compacted topic in Confluent Schema Registry's
//! `_schemas` format, so schemaops can read and write the topic an existing
//! Confluent or Karapace deployment keeps.
//!
//! * [`format`](mod@format): Confluent's record format, byte for byte.
//! * [`client`]: the few Kafka requests needed, over plain TCP or TLS.
//! * [`sasl`]: PLAIN and SCRAM authentication messages.
//! * [`reader`]: committed records of the topic, in offset order.
//! * [`replay`]: records to the store's changes and snapshot, and back.
//! * [`producer`]: the one transactional writer, fenced at the broker.
//! * [`election`]: which instance writes, through Kafka group membership.
//! * [`topic_check`]: the topic created or verified at start.
//! * [`topic_store`]: [`topic_store::KafkaStore`], the `Store` on a topic.
//!
//! It knows nothing of the registry's in-memory state or of HTTP.
//!
//! # Not yet (issue 43)
//! Subjects outside the default context, the
//! operator's Lease deciding the store's leadership (through
//! [`election::Leadership::set`]).
//!
//! # The client (decided in issue 43, first session)
//!
//! The store speaks the Kafka protocol itself, with the `kafka-protocol`
//! crate for the message types and record batches, rather than through
//! librdkafka (`rdkafka`) or a complete pure-Rust client (`krafka`):
//!
//! * Its reader must see the control records: it keeps a transaction's
//!   records until the transaction's COMMIT marker and drops them at its
//!   ABORT marker. Brokers are supposed to list aborted transactions in
//!   `read_committed` fetches so that clients can drop them, but the test
//!   broker (Tansu 0.6.0) writes the markers and sends an empty list, so
//!   with a client that relies on the list an aborted or fenced write shows
//!   up as committed. Reading the markers works with every broker.
//! * Its writer needs only the transactional producer's few requests
//!   (FindCoordinator, InitProducerId, AddPartitionsToTxn, Produce, EndTxn)
//!   for one partition.
//! * No C code: librdkafka with a vendored OpenSSL costs about 14 minutes of
//!   build-script time on the busy 2-core machine (OpenSSL 559 s, librdkafka
//!   273 s; -O2 in every profile) and adds OpenSSL beside rustls to the
//!   static image; `kafka-protocol` builds in about 22 s (19 s in release)
//!   and adds well under 1 MB to a binary.

pub mod client;
pub mod election;
pub mod format;
pub mod producer;
pub mod reader;
pub mod replay;
pub mod sasl;
pub mod topic_check;
pub mod topic_store;
