//! The few Kafka requests the store needs, over one connection per broker:
//! message types and record batches from the `kafka-protocol` crate, framing
//! and version choice here.
//!
//! Plain TCP or TLS, then SASL when [`Transport::sasl`] is set: every
//! connection authenticates before its first request.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_request::ApiVersionsRequest;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, ApiVersionsResponse, CreateTopicsRequest,
    CreateTopicsResponse, DescribeConfigsRequest, DescribeConfigsResponse, EndTxnRequest, EndTxnResponse, FetchRequest,
    FetchResponse, FindCoordinatorRequest, FindCoordinatorResponse, HeartbeatRequest, HeartbeatResponse,
    InitProducerIdRequest, InitProducerIdResponse, JoinGroupRequest, JoinGroupResponse, ListOffsetsRequest,
    ListOffsetsResponse, MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse, RequestHeader,
    ResponseHeader, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
    SyncGroupRequest, SyncGroupResponse, TopicName,
};
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use std::io::Read as _;

use kafka_protocol::compression::{self, Decompressor as _};
use kafka_protocol::records::{Compression, Record as BatchRecord, RecordBatchDecoder};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use super::sasl::{SaslCredentials, SaslExchange};

/// The client ID brokers log for our requests.
const CLIENT_ID: &str = "schemaops";

/// The largest response accepted (Kafka's default `socket.request.max.bytes`).
const MAX_RESPONSE_BYTES: usize = 100 * 1024 * 1024;

/// How much one fetch may return.
const FETCH_MAX_BYTES: i32 = 8 * 1024 * 1024;

/// `isolation_level` of a fetch or offset lookup that sees committed
/// transactions only.
const READ_COMMITTED: i8 = 1;

/// `timestamp` of a ListOffsets lookup for the end of the log.
const LATEST_OFFSET: i64 = -1;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No connection to the broker.
    #[error("cannot connect to the Kafka broker {address}")]
    Connect {
        /// `host:port`.
        address: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The broker did not answer in time.
    #[error("the Kafka broker {address} did not answer {api} within {timeout:?}")]
    Timeout {
        /// `host:port`.
        address: String,
        /// The request.
        api: &'static str,
        /// How long we waited.
        timeout: Duration,
    },
    /// The connection broke.
    #[error("the connection to the Kafka broker {address} failed during {api}{hint}")]
    Io {
        /// `host:port`.
        address: String,
        /// The request.
        api: &'static str,
        /// A likely cause, or empty.
        hint: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The broker does not offer the SASL mechanism asked for.
    #[error(
        "the Kafka broker {address} does not offer the SASL mechanism {mechanism}; it offers: {}",
        if offered.is_empty() { "none".to_owned() } else { offered.join(", ") }
    )]
    SaslMechanism {
        /// `host:port`.
        address: String,
        /// The mechanism asked for.
        mechanism: &'static str,
        /// The mechanisms the broker offers.
        offered: Vec<String>,
    },
    /// The broker refused the credentials, or the exchange went wrong.
    #[error("SASL authentication failed for user {user} with {mechanism}: {message} (Kafka broker {address})")]
    SaslAuthentication {
        /// `host:port`.
        address: String,
        /// The user name.
        user: String,
        /// The mechanism.
        mechanism: &'static str,
        /// The broker's message, or what was wrong with its answer.
        message: String,
    },
    /// A request or response did not encode or decode, or a response was
    /// larger than allowed.
    #[error("malformed {api} exchange with the Kafka broker {address}: {message}")]
    Protocol {
        /// `host:port`.
        address: String,
        /// The request.
        api: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The broker supports no version of a request that we can send.
    #[error("the Kafka broker {address} supports no version of {api} that schemaops speaks")]
    UnsupportedApi {
        /// `host:port`.
        address: String,
        /// The request.
        api: &'static str,
    },
    /// The broker answered with an error code.
    #[error("the Kafka broker {address} answered {api} with error code {code}")]
    Broker {
        /// `host:port`.
        address: String,
        /// The request.
        api: &'static str,
        /// Kafka's error code.
        code: i16,
    },
    /// The topic is missing or not as the store needs it.
    #[error("topic {topic}: {problem}")]
    Topic {
        /// The topic.
        topic: String,
        /// What is wrong.
        problem: String,
    },
}

/// A request type, its response and the versions of it we can build.
/// (`kafka-protocol` pairs requests with responses only when built for
/// brokers too, which would compile every message's other half.)
pub(super) trait Versioned: Encodable {
    /// The API.
    const KEY: ApiKey;
    /// Its name, for errors.
    const NAME: &'static str;
    /// The oldest and newest version whose fields we fill in.
    const OURS: (i16, i16);
    /// The response.
    type Response: Decodable;
}

impl Versioned for ApiVersionsRequest {
    const KEY: ApiKey = ApiKey::ApiVersions;
    const NAME: &'static str = "ApiVersions";
    const OURS: (i16, i16) = (0, 3);
    type Response = ApiVersionsResponse;
}

impl Versioned for MetadataRequest {
    const KEY: ApiKey = ApiKey::Metadata;
    const NAME: &'static str = "Metadata";
    // v10 and later may name topics by ID; names are enough here.
    const OURS: (i16, i16) = (1, 9);
    type Response = MetadataResponse;
}

impl Versioned for ListOffsetsRequest {
    const KEY: ApiKey = ApiKey::ListOffsets;
    const NAME: &'static str = "ListOffsets";
    const OURS: (i16, i16) = (2, 7);
    type Response = ListOffsetsResponse;
}

impl Versioned for FetchRequest {
    const KEY: ApiKey = ApiKey::Fetch;
    const NAME: &'static str = "Fetch";
    // v4 brings isolation levels; v13 names topics by ID.
    const OURS: (i16, i16) = (4, 12);
    type Response = FetchResponse;
}

impl Versioned for CreateTopicsRequest {
    const KEY: ApiKey = ApiKey::CreateTopics;
    const NAME: &'static str = "CreateTopics";
    const OURS: (i16, i16) = (2, 5);
    type Response = CreateTopicsResponse;
}

impl Versioned for DescribeConfigsRequest {
    const KEY: ApiKey = ApiKey::DescribeConfigs;
    const NAME: &'static str = "DescribeConfigs";
    const OURS: (i16, i16) = (1, 4);
    type Response = DescribeConfigsResponse;
}

impl Versioned for FindCoordinatorRequest {
    const KEY: ApiKey = ApiKey::FindCoordinator;
    const NAME: &'static str = "FindCoordinator";
    // v1 brings coordinator types; v4 batches keys.
    const OURS: (i16, i16) = (1, 3);
    type Response = FindCoordinatorResponse;
}

impl Versioned for InitProducerIdRequest {
    const KEY: ApiKey = ApiKey::InitProducerId;
    const NAME: &'static str = "InitProducerId";
    // v5 brings two-phase commit, which the store does not use.
    const OURS: (i16, i16) = (0, 4);
    type Response = InitProducerIdResponse;
}

impl Versioned for AddPartitionsToTxnRequest {
    const KEY: ApiKey = ApiKey::AddPartitionsToTxn;
    const NAME: &'static str = "AddPartitionsToTxn";
    // v4 and later are for brokers.
    const OURS: (i16, i16) = (0, 3);
    type Response = AddPartitionsToTxnResponse;
}

impl Versioned for ProduceRequest {
    const KEY: ApiKey = ApiKey::Produce;
    const NAME: &'static str = "Produce";
    // v3 brings transactions; v13 names topics by ID.
    const OURS: (i16, i16) = (3, 9);
    type Response = ProduceResponse;
}

impl Versioned for EndTxnRequest {
    const KEY: ApiKey = ApiKey::EndTxn;
    const NAME: &'static str = "EndTxn";
    // v5 bumps the epoch on every commit (KIP-890), which the producer does not track.
    const OURS: (i16, i16) = (0, 3);
    type Response = EndTxnResponse;
}

impl Versioned for JoinGroupRequest {
    const KEY: ApiKey = ApiKey::JoinGroup;
    const NAME: &'static str = "JoinGroup";
    // v1 brings the rebalance timeout; v6 and later are flexible versions
    // with nothing the elector needs.
    const OURS: (i16, i16) = (1, 5);
    type Response = JoinGroupResponse;
}

impl Versioned for SyncGroupRequest {
    const KEY: ApiKey = ApiKey::SyncGroup;
    const NAME: &'static str = "SyncGroup";
    const OURS: (i16, i16) = (0, 3);
    type Response = SyncGroupResponse;
}

impl Versioned for SaslHandshakeRequest {
    const KEY: ApiKey = ApiKey::SaslHandshake;
    const NAME: &'static str = "SaslHandshake";
    // v0 sends the mechanism's messages unframed; v1 in SaslAuthenticate.
    const OURS: (i16, i16) = (1, 1);
    type Response = SaslHandshakeResponse;
}

impl Versioned for SaslAuthenticateRequest {
    const KEY: ApiKey = ApiKey::SaslAuthenticate;
    const NAME: &'static str = "SaslAuthenticate";
    const OURS: (i16, i16) = (0, 2);
    type Response = SaslAuthenticateResponse;
}

impl Versioned for LeaveGroupRequest {
    const KEY: ApiKey = ApiKey::LeaveGroup;
    const NAME: &'static str = "LeaveGroup";
    // v3 names the leaving members in a list, v5 with a reason.
    const OURS: (i16, i16) = (0, 5);
    type Response = LeaveGroupResponse;
}

impl Versioned for HeartbeatRequest {
    const KEY: ApiKey = ApiKey::Heartbeat;
    const NAME: &'static str = "Heartbeat";
    const OURS: (i16, i16) = (0, 3);
    type Response = HeartbeatResponse;
}

/// How to reach brokers: how long a request may take, the TLS settings
/// when their listeners speak TLS, and the SASL credentials when they
/// authenticate clients. A bare [`Duration`] is plain TCP without SASL.
#[derive(Clone)]
pub struct Transport {
    /// How long a connection or a request may take.
    pub timeout: Duration,
    /// TLS for every connection (the broker's certificate must be valid
    /// for the host of the address connected to); `None`: plain TCP.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// SASL on every connection, after TLS; `None`: no authentication.
    pub sasl: Option<Arc<SaslCredentials>>,
}

impl From<Duration> for Transport {
    fn from(timeout: Duration) -> Self {
        Self {
            timeout,
            tls: None,
            sasl: None,
        }
    }
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Transport")
            .field("timeout", &self.timeout)
            .field("tls", &self.tls.is_some())
            .field("sasl", &self.sasl)
            .finish()
    }
}

/// A connection's byte stream, plain or TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buffer: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(stream) => Pin::new(stream).poll_read(cx, buffer),
            Self::Tls(stream) => Pin::new(stream.as_mut()).poll_read(cx, buffer),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(stream) => Pin::new(stream).poll_write(cx, bytes),
            Self::Tls(stream) => Pin::new(stream.as_mut()).poll_write(cx, bytes),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(stream) => Pin::new(stream).poll_flush(cx),
            Self::Tls(stream) => Pin::new(stream.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(stream) => Pin::new(stream).poll_shutdown(cx),
            Self::Tls(stream) => Pin::new(stream.as_mut()).poll_shutdown(cx),
        }
    }
}

/// One connection to one broker, with the versions it speaks.
pub struct Connection {
    stream: Stream,
    address: String,
    transport: Transport,
    timeout: Duration,
    next_correlation_id: i32,
    /// `(api key, oldest, newest)` for each request the broker speaks.
    versions: Vec<(i16, i16, i16)>,
}

impl Connection {
    /// Connects to `address` (`host:port`) and asks which versions it speaks.
    ///
    /// # Errors
    /// [`ClientError`] when the broker cannot be reached or answers badly.
    pub async fn connect(address: &str, transport: impl Into<Transport>) -> Result<Self, ClientError> {
        let transport = transport.into();
        let timeout = transport.timeout;
        let stream = tokio::time::timeout(timeout, TcpStream::connect(address))
            .await
            .map_err(|_| ClientError::Timeout {
                address: address.to_owned(),
                api: "connect",
                timeout,
            })?
            .map_err(|source| ClientError::Connect {
                address: address.to_owned(),
                source,
            })?;
        // Requests are small and answered one at a time: send each at once.
        stream.set_nodelay(true).map_err(|source| ClientError::Connect {
            address: address.to_owned(),
            source,
        })?;
        let stream = match &transport.tls {
            None => Stream::Plain(stream),
            Some(tls) => {
                let failed = |source| ClientError::Connect {
                    address: address.to_owned(),
                    source,
                };
                let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let name = rustls_pki_types::ServerName::try_from(host.to_owned())
                    .map_err(|error| failed(std::io::Error::new(std::io::ErrorKind::InvalidInput, error)))?;
                let handshake = tokio_rustls::TlsConnector::from(Arc::clone(tls)).connect(name, stream);
                let stream = tokio::time::timeout(timeout, handshake)
                    .await
                    .map_err(|_| ClientError::Timeout {
                        address: address.to_owned(),
                        api: "TLS handshake",
                        timeout,
                    })?
                    .map_err(failed)?;
                Stream::Tls(Box::new(stream))
            }
        };
        let mut connection = Self {
            stream,
            address: address.to_owned(),
            transport,
            timeout,
            next_correlation_id: 0,
            versions: Vec::new(),
        };
        // ApiVersions v3 is understood by every broker since Kafka 2.4; an
        // older one answers in v0 form, which we do not read.
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str(CLIENT_ID))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let response = connection.send(&request, 3).await?;
        connection.check(ApiVersionsRequest::NAME, response.error_code)?;
        connection.versions = response
            .api_keys
            .iter()
            .map(|api| (api.api_key, api.min_version, api.max_version))
            .collect();
        if let Some(credentials) = connection.transport.sasl.clone() {
            connection.authenticate(&credentials).await?;
        }
        Ok(connection)
    }

    /// SaslHandshake, then SaslAuthenticate for each message of the
    /// mechanism's exchange, the broker's last answer checked.
    async fn authenticate(&mut self, credentials: &SaslCredentials) -> Result<(), ClientError> {
        // UNSUPPORTED_SASL_MECHANISM
        const UNSUPPORTED_MECHANISM: i16 = 33;
        let mechanism = credentials.mechanism.name();
        let handshake = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
        let response = self.call(&handshake).await?;
        if response.error_code == UNSUPPORTED_MECHANISM {
            return Err(ClientError::SaslMechanism {
                address: self.address.clone(),
                mechanism,
                offered: response
                    .mechanisms
                    .iter()
                    .map(|name| name.as_str().to_owned())
                    .collect(),
            });
        }
        self.check(SaslHandshakeRequest::NAME, response.error_code)?;
        let address = self.address.clone();
        let failed = |message: String| ClientError::SaslAuthentication {
            address: address.clone(),
            user: credentials.username.clone(),
            mechanism,
            message,
        };
        let mut exchange = SaslExchange::start(credentials);
        let mut message = exchange.first();
        loop {
            let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(message));
            let response = self.call(&request).await?;
            if response.error_code != 0 {
                let text = response.error_message.as_ref().map_or_else(
                    || format!("error code {}", response.error_code),
                    |text| text.to_string(),
                );
                return Err(failed(text));
            }
            match exchange.next(&response.auth_bytes).map_err(|error| failed(error.0))? {
                Some(next) => message = next,
                None => return Ok(()),
            }
        }
    }

    /// Connects to the first broker of `bootstrap` (`host:port`, or several
    /// separated by commas) that answers.
    ///
    /// # Errors
    /// The last broker's [`ClientError`] when none answers.
    pub async fn connect_any(bootstrap: &str, transport: impl Into<Transport>) -> Result<Self, ClientError> {
        let transport = transport.into();
        let mut last_error = None;
        for address in bootstrap
            .split(',')
            .map(str::trim)
            .filter(|address| !address.is_empty())
        {
            match Self::connect(address, transport.clone()).await {
                Ok(connection) => return Ok(connection),
                Err(error) => {
                    tracing::debug!(
                        address,
                        error = &error as &dyn std::error::Error,
                        "A bootstrap broker did not answer"
                    );
                    last_error = Some(error);
                }
            }
        }
        Err(last_error.unwrap_or_else(|| ClientError::Connect {
            address: bootstrap.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no broker address given"),
        }))
    }

    /// The broker's `host:port`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// How this connection was made, for connecting to other brokers alike.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The newest version of `R` that both sides speak.
    pub(super) fn version<R: Versioned>(&self) -> Result<i16, ClientError> {
        let (ours_oldest, ours_newest) = R::OURS;
        self.versions
            .iter()
            .find(|(key, _, _)| *key == R::KEY as i16)
            .map(|(_, oldest, newest)| ((*newest).min(ours_newest), (*oldest).max(ours_oldest)))
            .filter(|(version, lowest)| version >= lowest)
            .map(|(version, _)| version)
            .ok_or_else(|| ClientError::UnsupportedApi {
                address: self.address.clone(),
                api: R::NAME,
            })
    }

    /// Sends a request in the newest common version and reads its response.
    pub(super) async fn call<R: Versioned>(&mut self, request: &R) -> Result<R::Response, ClientError> {
        let version = self.version::<R>()?;
        self.send(request, version).await
    }

    async fn send<R: Versioned>(&mut self, request: &R, version: i16) -> Result<R::Response, ClientError> {
        let api = R::NAME;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let correlation_id = self.next_correlation_id;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str(CLIENT_ID)));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, R::KEY.request_header_version(version))
            .and_then(|()| request.encode(&mut body, version))
            .map_err(|error| self.protocol(api, format!("cannot encode version {version}: {error}")))?;
        let length = i32::try_from(body.len()).map_err(|_| self.protocol(api, "request too large".to_owned()))?;
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(length);
        frame.extend_from_slice(&body);
        let timeout = self.timeout;
        let exchange = async {
            self.stream.write_all(&frame).await?;
            let length = self.stream.read_i32().await?;
            let length = usize::try_from(length)
                .ok()
                .filter(|length| *length <= MAX_RESPONSE_BYTES)
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "bad response length"))?;
            let mut response = vec![0; length];
            self.stream.read_exact(&mut response).await?;
            Ok::<_, std::io::Error>(response)
        };
        let response = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| ClientError::Timeout {
                address: self.address.clone(),
                api,
                timeout,
            })?
            .map_err(|source| ClientError::Io {
                address: self.address.clone(),
                api,
                hint: if source.kind() == std::io::ErrorKind::UnexpectedEof && self.transport.sasl.is_none() {
                    " (the broker closed it: brokers close connections that do not authenticate on \
                     listeners that require SASL; see --store-sasl-mechanism)"
                } else {
                    ""
                },
                source,
            })?;
        let mut response = Bytes::from(response);
        let header = ResponseHeader::decode(&mut response, R::KEY.response_header_version(version))
            .map_err(|error| self.protocol(api, format!("bad response header: {error}")))?;
        if header.correlation_id != correlation_id {
            return Err(self.protocol(
                api,
                format!("response {} to request {correlation_id}", header.correlation_id),
            ));
        }
        R::Response::decode(&mut response, version)
            .map_err(|error| self.protocol(api, format!("bad response body: {error}")))
    }

    pub(super) fn protocol(&self, api: &'static str, message: String) -> ClientError {
        ClientError::Protocol {
            address: self.address.clone(),
            api,
            message,
        }
    }

    pub(super) fn check(&self, api: &'static str, code: i16) -> Result<(), ClientError> {
        if code == 0 {
            return Ok(());
        }
        Err(ClientError::Broker {
            address: self.address.clone(),
            api,
            code,
        })
    }

    /// The `host:port` of the leader of partition 0 of `topic`, and how many
    /// partitions the topic has; `None` when the topic does not exist.
    ///
    /// # Errors
    /// [`ClientError`] when the request fails.
    pub async fn partition_leader(&mut self, topic: &str) -> Result<Option<(String, usize)>, ClientError> {
        Ok(self
            .topic_layout(topic)
            .await?
            .map(|layout| (layout.leader, layout.partitions)))
    }

    /// How `topic` is laid out over the brokers; `None` when it does not exist.
    ///
    /// # Errors
    /// [`ClientError`] when the request fails or partition 0 has no leader.
    pub async fn topic_layout(&mut self, topic: &str) -> Result<Option<TopicLayout>, ClientError> {
        let request = MetadataRequest::default()
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(topic_name(topic))),
            ]))
            .with_allow_auto_topic_creation(false);
        let response = self.call(&request).await?;
        let Some(found) = response
            .topics
            .iter()
            .find(|found| found.name.as_ref().is_some_and(|name| name.0.as_str() == topic))
        else {
            return Ok(None);
        };
        // UNKNOWN_TOPIC_OR_PARTITION
        if found.error_code == 3 {
            return Ok(None);
        }
        self.check(MetadataRequest::NAME, found.error_code)?;
        let first = found
            .partitions
            .iter()
            .find(|partition| partition.partition_index == 0)
            .ok_or_else(|| ClientError::Topic {
                topic: topic.to_owned(),
                problem: "has no partition 0".to_owned(),
            })?;
        let broker = response
            .brokers
            .iter()
            .find(|broker| broker.node_id == first.leader_id)
            .ok_or_else(|| ClientError::Topic {
                topic: topic.to_owned(),
                problem: format!("partition 0 has no live leader (broker {})", first.leader_id.0),
            })?;
        Ok(Some(TopicLayout {
            leader: format!("{}:{}", broker.host.as_str(), broker.port),
            partitions: found.partitions.len(),
            replicas: first.replica_nodes.len(),
            live_brokers: response.brokers.len(),
        }))
    }

    /// How many brokers the cluster has alive.
    ///
    /// # Errors
    /// [`ClientError`] when the request fails.
    pub async fn live_brokers(&mut self) -> Result<usize, ClientError> {
        let request = MetadataRequest::default()
            .with_topics(Some(Vec::new()))
            .with_allow_auto_topic_creation(false);
        Ok(self.call(&request).await?.brokers.len())
    }

    /// The values of the topic configs `names` of `topic` (`None` for a
    /// config the broker does not report or has no value for).
    ///
    /// # Errors
    /// [`ClientError`] when the request fails or the broker refuses.
    pub async fn topic_configs(&mut self, topic: &str, names: &[&str]) -> Result<Vec<Option<String>>, ClientError> {
        const TOPIC_RESOURCE: i8 = 2;
        let request = DescribeConfigsRequest::default().with_resources(vec![
            DescribeConfigsResource::default()
                .with_resource_type(TOPIC_RESOURCE)
                .with_resource_name(StrBytes::from_string(topic.to_owned()))
                // Every config, filtered below: Tansu 0.6.0 cannot decode a
                // list of names and drops the connection.
                .with_configuration_keys(None),
        ]);
        let response = self.call(&request).await?;
        let result = response
            .results
            .iter()
            .find(|result| result.resource_name.as_str() == topic)
            .ok_or_else(|| self.protocol(DescribeConfigsRequest::NAME, format!("no answer for topic {topic}")))?;
        self.check(DescribeConfigsRequest::NAME, result.error_code)?;
        Ok(names
            .iter()
            .map(|name| {
                result
                    .configs
                    .iter()
                    .find(|config| config.name.as_str() == *name)
                    .and_then(|config| config.value.as_ref().map(|value| value.as_str().to_owned()))
            })
            .collect())
    }

    /// Creates `topic` with one partition, `replication_factor` replicas
    /// and the given topic configs; `false` when it exists already.
    ///
    /// # Errors
    /// [`ClientError`] when the request fails or the broker refuses.
    pub async fn create_topic(
        &mut self,
        topic: &str,
        replication_factor: i16,
        configs: &[(&str, &str)],
    ) -> Result<bool, ClientError> {
        self.create_topic_with_partitions(topic, 1, replication_factor, configs)
            .await
    }

    /// As [`Self::create_topic`] with `partitions` partitions (for tests of
    /// topics the store refuses).
    ///
    /// # Errors
    /// As [`Self::create_topic`].
    pub async fn create_topic_with_partitions(
        &mut self,
        topic: &str,
        partitions: i32,
        replication_factor: i16,
        configs: &[(&str, &str)],
    ) -> Result<bool, ClientError> {
        const TOPIC_ALREADY_EXISTS: i16 = 36;
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(i32::try_from(self.timeout.as_millis()).unwrap_or(i32::MAX))
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(topic_name(topic))
                    .with_num_partitions(partitions)
                    .with_replication_factor(replication_factor)
                    .with_configs(
                        configs
                            .iter()
                            .map(|(name, value)| {
                                CreatableTopicConfig::default()
                                    .with_name(StrBytes::from_string((*name).to_owned()))
                                    .with_value(Some(StrBytes::from_string((*value).to_owned())))
                            })
                            .collect(),
                    ),
            ]);
        let response = self.call(&request).await?;
        let code = response
            .topics
            .iter()
            .find(|created| created.name.0.as_str() == topic)
            .map_or(0, |created| created.error_code);
        if code == TOPIC_ALREADY_EXISTS {
            return Ok(false);
        }
        self.check(CreateTopicsRequest::NAME, code)?;
        Ok(true)
    }

    /// The offset after the last committed record of partition 0 of `topic`
    /// (its last stable offset).
    ///
    /// # Errors
    /// [`ClientError`] when the request fails.
    pub async fn end_offset(&mut self, topic: &str) -> Result<i64, ClientError> {
        let request = ListOffsetsRequest::default()
            .with_replica_id((-1).into())
            .with_isolation_level(READ_COMMITTED)
            .with_topics(vec![
                ListOffsetsTopic::default()
                    .with_name(topic_name(topic))
                    .with_partitions(vec![
                        ListOffsetsPartition::default()
                            .with_partition_index(0)
                            .with_timestamp(LATEST_OFFSET),
                    ]),
            ]);
        let response = self.call(&request).await?;
        let partition = response
            .topics
            .iter()
            .flat_map(|found| &found.partitions)
            .find(|partition| partition.partition_index == 0)
            .ok_or_else(|| self.protocol(ListOffsetsRequest::NAME, "no partition 0 in the answer".to_owned()))?;
        self.check(ListOffsetsRequest::NAME, partition.error_code)?;
        Ok(partition.offset)
    }

    /// The records of partition 0 of `topic` from `offset` on, control
    /// records included, at most 8 MiB; waits up to `max_wait`
    /// when there are none yet.
    ///
    /// # Errors
    /// [`ClientError`] when the request fails or a batch does not decode.
    pub async fn fetch(
        &mut self,
        topic: &str,
        offset: i64,
        max_wait: Duration,
    ) -> Result<Vec<BatchRecord>, ClientError> {
        let request = FetchRequest::default()
            .with_replica_id((-1).into())
            .with_max_wait_ms(i32::try_from(max_wait.as_millis()).unwrap_or(i32::MAX))
            .with_min_bytes(1)
            .with_max_bytes(FETCH_MAX_BYTES)
            .with_isolation_level(READ_COMMITTED)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(topic_name(topic))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(0)
                            .with_fetch_offset(offset)
                            .with_partition_max_bytes(FETCH_MAX_BYTES),
                    ]),
            ]);
        let response = self.call(&request).await?;
        self.check(FetchRequest::NAME, response.error_code)?;
        let mut records = Vec::new();
        for partition in response.responses.iter().flat_map(|found| &found.partitions) {
            self.check(FetchRequest::NAME, partition.error_code)?;
            let mut bytes = partition.records.clone().unwrap_or_default();
            while let Some(batch) = next_complete_batch(&mut bytes) {
                let batch_records =
                    decode_batch(topic, batch).map_err(|message| self.protocol(FetchRequest::NAME, message))?;
                // A batch may start before the offset asked for.
                records.extend(batch_records.into_iter().filter(|record| record.offset >= offset));
            }
        }
        Ok(records)
    }
}

/// Where a topic lives: what [`Connection::topic_layout`] finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicLayout {
    /// `host:port` of the leader of partition 0.
    pub leader: String,
    /// How many partitions the topic has.
    pub partitions: usize,
    /// How many replicas partition 0 has.
    pub replicas: usize,
    /// How many brokers the cluster has alive.
    pub live_brokers: usize,
}

/// Splits the next whole record batch off a fetch response; a broker may
/// end the response with part of a batch, which is left for the next fetch.
fn next_complete_batch(bytes: &mut Bytes) -> Option<Bytes> {
    // baseOffset (8 bytes), then batchLength (4): the bytes after it.
    const HEADER: usize = 12;
    if bytes.len() < HEADER {
        return None;
    }
    let length = usize::try_from((&bytes[8..HEADER]).get_i32()).ok()?;
    let total = HEADER.checked_add(length)?;
    if bytes.len() < total {
        return None;
    }
    Some(bytes.split_to(total))
}

/// The records of one whole record batch of `topic`, decompressed (gzip,
/// snappy, lz4 or zstd, as a producer's or the topic's `compression.type`
/// may have written it).
///
/// # Errors
/// A message naming the topic, the batch's offset and, for a compressed
/// batch that cannot be read, its codec: a batch is never skipped.
pub(super) fn decode_batch(topic: &str, mut batch: Bytes) -> Result<Vec<BatchRecord>, String> {
    // baseOffset (8), batchLength (4), partitionLeaderEpoch (4), magic (1),
    // crc (4), then attributes (2), whose low three bits name the codec.
    const ATTRIBUTES: usize = 21;
    let base_offset = batch.get(..8).map_or(-1, |mut bytes| bytes.get_i64());
    let codec = batch
        .get(ATTRIBUTES..ATTRIBUTES + 2)
        .map(|mut bytes| bytes.get_i16() & 0x7);
    let codec_name = match codec {
        None | Some(0) => "none",
        Some(1) => "gzip",
        Some(2) => "snappy",
        Some(3) => "lz4",
        Some(4) => "zstd",
        Some(other) => {
            return Err(format!(
                "topic {topic}: the record batch at offset {base_offset} is compressed with codec {other}, \
                 which Kafka does not define (1 gzip, 2 snappy, 3 lz4, 4 zstd); it cannot be read"
            ));
        }
    };
    RecordBatchDecoder::decode_with_custom_compression(&mut batch, Some(decompress))
        .map(|set| set.records)
        .map_err(|error| {
            format!("topic {topic}: the record batch at offset {base_offset} (compression {codec_name}) cannot be read: {error:#}")
        })
}

/// The records of a batch's body compressed with `compression`. gzip and
/// snappy through `kafka-protocol`; lz4 (Kafka's LZ4 frame format) and zstd
/// through the pure-Rust `lz4_flex` and `ruzstd` instead of the crate's C
/// bindings.
fn decompress(compressed: &mut Bytes, compression: Compression) -> anyhow::Result<Bytes> {
    let whole = |buffer: &mut Bytes| Ok(buffer.split_to(buffer.len()));
    match compression {
        Compression::None => whole(compressed),
        Compression::Gzip => compression::Gzip::decompress(compressed, |buffer: &mut Bytes| whole(buffer)),
        Compression::Snappy => compression::Snappy::decompress(compressed, |buffer: &mut Bytes| whole(buffer)),
        Compression::Lz4 => {
            let mut records = Vec::new();
            lz4_flex::frame::FrameDecoder::new(compressed.as_ref()).read_to_end(&mut records)?;
            Ok(Bytes::from(records))
        }
        Compression::Zstd => {
            let mut input: &[u8] = compressed.as_ref();
            let mut records = Vec::new();
            // One frame per batch as producers write it; concatenated frames read in turn.
            while !input.is_empty() {
                let mut frame = ruzstd::decoding::StreamingDecoder::new(&mut input)
                    .map_err(|error| anyhow::anyhow!("zstd: {error}"))?;
                frame.read_to_end(&mut records)?;
            }
            Ok(Bytes::from(records))
        }
    }
}

pub(super) fn topic_name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_owned()))
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::records::{RecordBatchEncoder, RecordEncodeOptions, TimestampType};

    use super::*;

    fn batch() -> BytesMut {
        let record = BatchRecord {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: 42,
            sequence: -1,
            timestamp: 0,
            key: Some(Bytes::from_static(b"k")),
            value: Some(Bytes::from_static(b"v")),
            headers: Default::default(),
        };
        let mut bytes = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        RecordBatchEncoder::encode(&mut bytes, [&record], &options).unwrap();
        bytes
    }

    #[test]
    fn a_batch_with_a_codec_kafka_does_not_define_fails_naming_topic_offset_and_codec() {
        let records = decode_batch("_schemas", batch().freeze()).unwrap();
        assert_eq!(records.len(), 1);
        let mut unknown = batch();
        // The low bits of the attributes' second byte: codec 5.
        unknown[22] |= 5;
        let error = decode_batch("_schemas", unknown.freeze()).unwrap_err();
        assert!(error.contains("topic _schemas"), "{error}");
        assert!(error.contains("offset 42"), "{error}");
        assert!(error.contains("codec 5"), "{error}");
    }
}
