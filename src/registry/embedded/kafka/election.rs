//! One leader among the instances on a topic, elected through Kafka group
//! membership: no other system is needed, and the broker's group
//! coordinator notices a paused or cut-off leader when its heartbeats stop.
//!
//! This is how Confluent Schema Registry elects its leader
//! (`leaderelector/kafka/KafkaGroupLeaderElector` and
//! `SchemaRegistryCoordinator` in `confluentinc/schema-registry`): every
//! instance joins one group with protocol type `sr` and its identity (URL,
//! eligibility, whether it leads now) as member metadata; the member the
//! coordinator picks to assign gives every member the same assignment, the
//! leader's member ID and URL. Like Confluent's sticky election, a member
//! that leads keeps leading while it stays in the group; otherwise the
//! eligible member with the smallest URL leads; duplicate URLs elect nobody.
//! The identity and assignment are JSON of our own, not Confluent's, so a
//! schemaops group must not be shared with Confluent instances (its group
//! ID is the transactional ID, `schemaops-<topic>` by default).
//!
//! # Guarantees
//! Leadership alone does not keep two writers apart (a paused leader does
//! not know it was voted out): the transactional producer does. A member
//! that wins an election starts a producer with the shared transactional ID
//! before it reports itself leader, which fences the previous leader's
//! producer at the broker; the store starts its own producer anew for each
//! generation it leads.
//!
//! # Leaving
//! An instance that shuts down gracefully leaves the group
//! ([`Leadership::leave`]): it stops leading, lets the writes under way
//! finish, then sends LeaveGroup, as Confluent's elector does when it
//! closes; the others elect again at once. An instance that dies (SIGKILL,
//! a lost machine) is dropped by the coordinator only after the session
//! timeout.
//!
//! Checked against Tansu 0.6.0, which answers JoinGroup, SyncGroup,
//! Heartbeat and LeaveGroup for any protocol type (and asks even v1
//! joiners for a member ID first, as KIP-394 brokers do from v4).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    FindCoordinatorRequest, GroupId, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, RwLock, RwLockReadGuard, watch};

use super::client::{ClientError, Connection, Transport, Versioned};
use super::producer::{ProducerError, TransactionalProducer};

/// The group's protocol type (Confluent's, so tools list the group alike).
const PROTOCOL_TYPE: &str = "sr";

/// The one protocol a member offers.
const PROTOCOL_NAME: &str = "schemaops-v0";

/// `key_type` of a FindCoordinator lookup for a group coordinator.
const GROUP_COORDINATOR: i8 = 0;

/// The longest pause between two attempts after the broker failed.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The longest pause between two heartbeats. A member learns that the
/// group rebalances (an instance joined or left) only from a heartbeat's
/// answer, and the new generation waits for it: a second at most, whatever
/// the session timeout (one small request a second costs the broker little).
const MAX_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(1);

/// Kafka's error codes the elector acts on.
mod code {
    pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
    pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    pub const NOT_COORDINATOR: i16 = 16;
    pub const ILLEGAL_GENERATION: i16 = 22;
    pub const UNKNOWN_MEMBER_ID: i16 = 25;
    pub const REBALANCE_IN_PROGRESS: i16 = 27;
    pub const MEMBER_ID_REQUIRED: i16 = 79;
}

/// What this instance is in the election.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// No leader is known: joining, rebalancing, or no eligible member.
    Unknown,
    /// This instance leads, since the group generation `generation`.
    Leader {
        /// The generation it won; a new one means a new producer.
        generation: i32,
    },
    /// Another instance leads.
    Follower {
        /// Where to send writes: the leader's advertised URL.
        leader_url: String,
    },
}

/// How long [`Leadership::leave`] waits for the writes under way, and then
/// for the coordinator to answer LeaveGroup: a broker that does not answer
/// delays a shutdown by twice this at most.
pub const LEAVE_TIMEOUT: Duration = Duration::from_secs(2);

/// Where this instance stands in the group, for leaving it gracefully.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Membership {
    /// No group elector runs ([`run`] has not started, or another elector
    /// drives the role).
    Outside,
    /// [`run`] takes part in the election.
    Member,
    /// [`Leadership::leave`] asks [`run`] to send LeaveGroup and stop.
    Leaving,
    /// Out of the group: LeaveGroup was answered or could not be sent.
    Left,
}

/// This instance's role, shared by the elector, the store and the HTTP
/// layer that forwards writes.
#[derive(Debug)]
pub struct Leadership {
    role: watch::Sender<Role>,
    step_down: Notify,
    /// Set by [`Leadership::leave`]: no role but [`Role::Unknown`] from then on.
    resigned: AtomicBool,
    membership: watch::Sender<Membership>,
    /// Read-held by the store for each write it makes as leader.
    writes: RwLock<()>,
}

impl Leadership {
    /// A role that is [`Role::Unknown`] until the elector runs.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            role: watch::Sender::new(Role::Unknown),
            step_down: Notify::new(),
            resigned: AtomicBool::new(false),
            membership: watch::Sender::new(Membership::Outside),
            writes: RwLock::new(()),
        })
    }

    /// The role now.
    pub fn role(&self) -> Role {
        self.role.borrow().clone()
    }

    /// Tells of every later change of role.
    pub fn subscribe(&self) -> watch::Receiver<Role> {
        self.role.subscribe()
    }

    /// Gives up leading (the store's producer was fenced): the role is
    /// [`Role::Unknown`] until the group has elected again.
    pub fn step_down(&self) {
        self.role.send_replace(Role::Unknown);
        self.step_down.notify_one();
    }

    /// Held by the store while it makes a write, from checking the role
    /// until the write is applied: [`Leadership::leave`] waits for it.
    pub async fn writing(&self) -> RwLockReadGuard<'_, ()> {
        self.writes.read().await
    }

    /// Leaves the election for good, on a graceful shutdown: stops leading
    /// (new writes are refused, those under way finish), then has [`run`]
    /// send LeaveGroup, so that the group elects again at once instead of
    /// after the session timeout, and stop heartbeating. Each of the two
    /// waits lasts `within` at most; without a running [`run`] only the
    /// first one is made.
    pub async fn leave(&self, within: Duration) {
        self.resigned.store(true, Ordering::SeqCst);
        if self.role.send_replace(Role::Unknown) != Role::Unknown {
            tracing::info!("Stopped leading the store: leaving its election");
        }
        if tokio::time::timeout(within, self.writes.write()).await.is_err() {
            tracing::warn!(
                ?within,
                "The store's writes under way did not finish in time; leaving anyway"
            );
        }
        let joined = self.membership.send_if_modified(|membership| {
            let joined = *membership == Membership::Member;
            if joined {
                *membership = Membership::Leaving;
            }
            joined
        });
        if !joined {
            return;
        }
        let mut membership = self.membership.subscribe();
        let left = membership.wait_for(|membership| *membership == Membership::Left);
        if tokio::time::timeout(within, left).await.is_err() {
            tracing::warn!(
                ?within,
                "The store's group coordinator did not answer LeaveGroup in time; \
                 the others elect a leader once this member's session times out"
            );
        }
    }

    /// Sets the role: [`run`] does as the group decides; another elector
    /// (the operator's Lease, say) could drive a store through this alone.
    /// After [`Leadership::leave`] the role stays [`Role::Unknown`].
    pub fn set(&self, role: Role) {
        self.role.send_if_modified(|current| {
            // Read under the role's lock, which `leave` takes after setting it.
            if role != Role::Unknown && self.resigned.load(Ordering::SeqCst) {
                return false;
            }
            let changed = *current != role;
            if changed {
                tracing::info!(?role, "The store's leadership changed");
                *current = role;
            }
            changed
        });
    }
}

/// Who this instance is in the group, and how long it may stay silent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionOptions {
    /// The URL other instances forward writes to.
    pub advertised_url: String,
    /// Whether this instance may lead (Confluent's `leader.eligibility`).
    pub eligible: bool,
    /// How long the coordinator waits for a heartbeat before it elects
    /// without this instance.
    pub session_timeout: Duration,
}

/// A member's metadata in the JoinGroup request.
#[derive(Debug, Serialize, Deserialize)]
struct Identity {
    url: String,
    eligible: bool,
    leader: bool,
}

/// What the assigning member gives every member.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Assignment {
    leader_member: Option<String>,
    leader_url: Option<String>,
}

/// Where the store's topic is and how the producer fences.
pub struct Group {
    /// `host:port` of brokers.
    pub bootstrap: String,
    /// The store's topic.
    pub topic: String,
    /// The group ID and the producer's transactional ID.
    pub transactional_id: String,
    /// How to reach the brokers.
    pub transport: Transport,
}

/// Takes part in the election until [`Leadership::leave`] (then leaves the
/// group and returns) or until the task is dropped: joins the group,
/// follows its generations, and starts again (with backoff) when the broker
/// fails. Returns at once when `leadership` left already or another `run`
/// drives it.
pub async fn run(group: Group, options: ElectionOptions, leadership: Arc<Leadership>) {
    let started = leadership.membership.send_if_modified(|membership| {
        let outside = *membership == Membership::Outside;
        if outside {
            *membership = Membership::Member;
        }
        outside
    });
    if !started {
        return;
    }
    let mut member_id = String::new();
    let mut membership = leadership.membership.subscribe();
    tokio::select! {
        () = take_part_again_and_again(&group, &options, &leadership, &mut member_id) => {}
        _ = membership.wait_for(|membership| *membership == Membership::Leaving) => {}
    }
    // A request cut off above may have left its connection mid-exchange: a new one.
    if !member_id.is_empty() {
        match leave_group(&group, &member_id).await {
            Ok(()) => tracing::info!(member_id, "Left the store's election group"),
            Err(error) => tracing::warn!(
                error = &error as &dyn std::error::Error,
                "Could not leave the store's election group; \
                 the others elect a leader once this member's session times out"
            ),
        }
    }
    leadership.membership.send_replace(Membership::Left);
}

/// Takes part in the election as `member_id` (the member ID of the
/// membership under way, empty while there is none), starting again with
/// backoff whenever the broker fails.
async fn take_part_again_and_again(
    group: &Group,
    options: &ElectionOptions,
    leadership: &Leadership,
    member_id: &mut String,
) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let started = Instant::now();
        if let Err(error) = take_part(group, options, leadership, member_id).await {
            leadership.set(Role::Unknown);
            tracing::warn!(
                error = &error as &dyn std::error::Error,
                "The store's leader election failed; joining again"
            );
        }
        if started.elapsed() > MAX_BACKOFF {
            backoff = Duration::from_millis(100);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One membership, as `member_id`: from finding the coordinator until a
/// request fails.
async fn take_part(
    group: &Group,
    options: &ElectionOptions,
    leadership: &Leadership,
    member_id: &mut String,
) -> Result<(), ProducerError> {
    member_id.clear();
    let mut coordinator = find_coordinator(group).await?;
    // Whether this member led the last generation and is still in the group:
    // it then says so when it joins the next one, and keeps leading.
    let mut sitting = false;
    loop {
        let joined = join(&mut coordinator, group, options, member_id, sitting).await?;
        let generation = joined.generation_id;
        let assignments = if joined.leader.as_str() == *member_id {
            assign(&joined)
        } else {
            Vec::new()
        };
        let request = SyncGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.transactional_id.clone())))
            .with_generation_id(generation)
            .with_member_id(StrBytes::from_string(member_id.clone()))
            .with_protocol_type(Some(StrBytes::from_static_str(PROTOCOL_TYPE)))
            .with_protocol_name(Some(StrBytes::from_static_str(PROTOCOL_NAME)))
            .with_assignments(assignments);
        let synced = coordinator.call(&request).await?;
        match synced.error_code {
            0 => {}
            code::REBALANCE_IN_PROGRESS | code::ILLEGAL_GENERATION => continue,
            code::UNKNOWN_MEMBER_ID => {
                member_id.clear();
                sitting = false;
                continue;
            }
            code => coordinator.check(SyncGroupRequest::NAME, code)?,
        }
        let assignment: Assignment = serde_json::from_slice(&synced.assignment).unwrap_or_default();
        let role = match (assignment.leader_member, assignment.leader_url) {
            (Some(leader), _) if leader == *member_id => {
                // Fence the previous leader's producer before writing as leader.
                drop(
                    TransactionalProducer::start(
                        &group.bootstrap,
                        &group.topic,
                        &group.transactional_id,
                        group.transport.clone(),
                    )
                    .await?,
                );
                Role::Leader { generation }
            }
            (Some(_), Some(leader_url)) => Role::Follower { leader_url },
            _ => Role::Unknown,
        };
        let leading = matches!(role, Role::Leader { .. });
        leadership.set(role);
        let ended =
            heartbeat_until_rebalance(&mut coordinator, group, options, member_id, generation, leadership).await?;
        sitting = leading && ended == GenerationEnd::Rebalance;
        if ended == GenerationEnd::Evicted {
            member_id.clear();
        }
    }
}

/// Why a generation ended for this member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GenerationEnd {
    /// The group rebalances; this member is still in it.
    Rebalance,
    /// The coordinator dropped this member (its heartbeats stopped).
    Evicted,
    /// This member gave up leading.
    SteppedDown,
}

async fn find_coordinator(group: &Group) -> Result<Connection, ClientError> {
    let mut bootstrap = Connection::connect_any(&group.bootstrap, group.transport.clone()).await?;
    let deadline = Instant::now() + group.transport.timeout;
    let address = loop {
        let request = FindCoordinatorRequest::default()
            .with_key(StrBytes::from_string(group.transactional_id.clone()))
            .with_key_type(GROUP_COORDINATOR);
        let response = bootstrap.call(&request).await?;
        match response.error_code {
            0 => break format!("{}:{}", response.host.as_str(), response.port),
            code::COORDINATOR_NOT_AVAILABLE | code::COORDINATOR_LOAD_IN_PROGRESS if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            code => bootstrap.check(FindCoordinatorRequest::NAME, code)?,
        }
    };
    if bootstrap.address() == address {
        Ok(bootstrap)
    } else {
        Connection::connect(&address, group.transport.clone()).await
    }
}

/// Tells the group's coordinator that `member_id` leaves the group (a new
/// connection: the elector's may be mid-request).
async fn leave_group(group: &Group, member_id: &str) -> Result<(), ClientError> {
    let mut coordinator = find_coordinator(group).await?;
    let request =
        LeaveGroupRequest::default().with_group_id(GroupId(StrBytes::from_string(group.transactional_id.clone())));
    // v3 names the leaving members in a list (v5 with a reason); earlier versions, one member.
    let version = coordinator.version::<LeaveGroupRequest>()?;
    let member_id = StrBytes::from_string(member_id.to_owned());
    let request = if version >= 3 {
        let reason = (version >= 5).then(|| StrBytes::from_static_str("the schemaops instance is shutting down"));
        request.with_members(vec![
            MemberIdentity::default().with_member_id(member_id).with_reason(reason),
        ])
    } else {
        request.with_member_id(member_id)
    };
    let response = coordinator.call(&request).await?;
    let member_code = response
        .members
        .iter()
        .map(|member| member.error_code)
        .find(|code| *code != 0);
    match member_code.unwrap_or(response.error_code) {
        // The coordinator had dropped the member already.
        code::UNKNOWN_MEMBER_ID => Ok(()),
        code => coordinator.check(LeaveGroupRequest::NAME, code),
    }
}

/// Joins the next generation, with a member ID the coordinator gave.
async fn join(
    coordinator: &mut Connection,
    group: &Group,
    options: &ElectionOptions,
    member_id: &mut String,
    leading: bool,
) -> Result<JoinGroupResponse, ClientError> {
    let identity = Identity {
        url: options.advertised_url.clone(),
        eligible: options.eligible,
        leader: leading,
    };
    let metadata = serde_json::to_vec(&identity).expect("plain fields serialize");
    let timeout_ms = i32::try_from(options.session_timeout.as_millis()).unwrap_or(i32::MAX);
    loop {
        let request = JoinGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.transactional_id.clone())))
            .with_session_timeout_ms(timeout_ms)
            .with_rebalance_timeout_ms(timeout_ms)
            .with_member_id(StrBytes::from_string(member_id.clone()))
            .with_protocol_type(StrBytes::from_static_str(PROTOCOL_TYPE))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(StrBytes::from_static_str(PROTOCOL_NAME))
                    .with_metadata(metadata.clone().into()),
            ]);
        let response = coordinator.call(&request).await?;
        match response.error_code {
            0 => {
                response.member_id.as_str().clone_into(member_id);
                return Ok(response);
            }
            code::MEMBER_ID_REQUIRED => response.member_id.as_str().clone_into(member_id),
            code::UNKNOWN_MEMBER_ID => member_id.clear(),
            code::REBALANCE_IN_PROGRESS => {}
            code::NOT_COORDINATOR | code::COORDINATOR_NOT_AVAILABLE => {
                return Err(ClientError::Broker {
                    address: coordinator.address().to_owned(),
                    api: JoinGroupRequest::NAME,
                    code: response.error_code,
                });
            }
            code => coordinator.check(JoinGroupRequest::NAME, code)?,
        }
    }
}

/// The assignment every member gets: the member that leads now keeps
/// leading when it is still eligible and alone in saying so; otherwise the
/// eligible member with the smallest URL; nobody when two share a URL.
fn assign(joined: &JoinGroupResponse) -> Vec<SyncGroupRequestAssignment> {
    let members: Vec<(String, Identity)> = joined
        .members
        .iter()
        .filter_map(|member| {
            let identity = serde_json::from_slice(&member.metadata).ok()?;
            Some((member.member_id.as_str().to_owned(), identity))
        })
        .collect();
    let mut urls: Vec<&str> = members.iter().map(|(_, identity)| identity.url.as_str()).collect();
    urls.sort_unstable();
    urls.dedup();
    let leader = if urls.len() == members.len() {
        let eligible = || members.iter().filter(|(_, identity)| identity.eligible);
        let sitting: Vec<_> = eligible().filter(|(_, identity)| identity.leader).collect();
        match sitting.as_slice() {
            [only] => Some(*only),
            _ => eligible().min_by(|a, b| a.1.url.cmp(&b.1.url)),
        }
    } else {
        tracing::error!(
            "Two instances of the store's group advertise the same URL; none leads. \
             Give each its own --store-advertised-url"
        );
        None
    };
    let assignment = Assignment {
        leader_member: leader.map(|(member, _)| member.clone()),
        leader_url: leader.map(|(_, identity)| identity.url.clone()),
    };
    let bytes = serde_json::to_vec(&assignment).expect("plain fields serialize");
    members
        .iter()
        .map(|(member, _)| {
            SyncGroupRequestAssignment::default()
                .with_member_id(StrBytes::from_string(member.clone()))
                .with_assignment(bytes.clone().into())
        })
        .collect()
}

/// Heartbeats until the coordinator starts a new generation or this
/// instance steps down; the role is [`Role::Unknown`] from then on.
async fn heartbeat_until_rebalance(
    coordinator: &mut Connection,
    group: &Group,
    options: &ElectionOptions,
    member_id: &str,
    generation: i32,
    leadership: &Leadership,
) -> Result<GenerationEnd, ClientError> {
    let interval = (options.session_timeout / 3).min(MAX_HEARTBEAT_INTERVAL);
    loop {
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = leadership.step_down.notified() => {
                leadership.set(Role::Unknown);
                return Ok(GenerationEnd::SteppedDown);
            }
        }
        let request = HeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.transactional_id.clone())))
            .with_generation_id(generation)
            .with_member_id(StrBytes::from_string(member_id.to_owned()));
        let response = coordinator.call(&request).await;
        let code = match response {
            Ok(response) => response.error_code,
            Err(error) => {
                leadership.set(Role::Unknown);
                return Err(error);
            }
        };
        // Another generation: nobody is sure who leads until it is synced.
        match code {
            0 => {}
            code::REBALANCE_IN_PROGRESS => {
                leadership.set(Role::Unknown);
                return Ok(GenerationEnd::Rebalance);
            }
            code::ILLEGAL_GENERATION | code::UNKNOWN_MEMBER_ID => {
                leadership.set(Role::Unknown);
                return Ok(GenerationEnd::Evicted);
            }
            code => {
                leadership.set(Role::Unknown);
                coordinator.check(HeartbeatRequest::NAME, code)?;
                return Ok(GenerationEnd::Evicted);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;

    use super::*;

    /// The leader URL every member is assigned, when they joined as `members`
    /// (member ID, URL, eligible, leading now).
    fn elected(members: &[(&str, &str, bool, bool)]) -> Option<String> {
        let joined = JoinGroupResponse::default().with_members(
            members
                .iter()
                .map(|(member, url, eligible, leader)| {
                    let identity = Identity {
                        url: (*url).to_owned(),
                        eligible: *eligible,
                        leader: *leader,
                    };
                    JoinGroupResponseMember::default()
                        .with_member_id(StrBytes::from_string((*member).to_owned()))
                        .with_metadata(serde_json::to_vec(&identity).unwrap().into())
                })
                .collect(),
        );
        let assignments = assign(&joined);
        assert_eq!(assignments.len(), members.len(), "every member gets an assignment");
        let decoded: Vec<Assignment> = assignments
            .iter()
            .map(|assignment| serde_json::from_slice(&assignment.assignment).unwrap())
            .collect();
        let urls: Vec<_> = decoded.iter().map(|assignment| assignment.leader_url.clone()).collect();
        assert!(
            urls.windows(2).all(|pair| pair[0] == pair[1]),
            "the same for all: {urls:?}"
        );
        urls.into_iter().next().flatten()
    }

    #[test]
    fn the_eligible_member_with_the_smallest_url_leads_unless_one_leads_already() {
        let a = ("m-a", "http://a:8081", true, false);
        let b = ("m-b", "http://b:8081", true, false);
        assert_eq!(elected(&[b, a]).as_deref(), Some("http://a:8081"));
        // A sitting leader keeps leading.
        let b_leading = ("m-b", "http://b:8081", true, true);
        assert_eq!(elected(&[a, b_leading]).as_deref(), Some("http://b:8081"));
        // Two claiming to lead: back to the smallest URL.
        let a_leading = ("m-a", "http://a:8081", true, true);
        assert_eq!(elected(&[a_leading, b_leading]).as_deref(), Some("http://a:8081"));
        // Ineligible members never lead, even when they claim to.
        let a_ineligible = ("m-a", "http://a:8081", false, true);
        assert_eq!(elected(&[a_ineligible, b]).as_deref(), Some("http://b:8081"));
        assert_eq!(elected(&[a_ineligible]), None);
    }

    #[tokio::test]
    async fn a_leadership_that_left_waits_for_the_write_under_way_and_never_leads_again() {
        let leadership = Leadership::new();
        leadership.set(Role::Leader { generation: 1 });
        let writing = leadership.writing().await;
        let leaving = tokio::spawn({
            let leadership = Arc::clone(&leadership);
            async move { leadership.leave(Duration::from_secs(5)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(leadership.role(), Role::Unknown, "it stops leading first");
        assert!(!leaving.is_finished(), "it waits for the write under way");
        drop(writing);
        // No group elector runs: nothing else to wait for.
        tokio::time::timeout(Duration::from_secs(1), leaving)
            .await
            .expect("leaves once the write is done")
            .unwrap();
        leadership.set(Role::Leader { generation: 2 });
        assert_eq!(leadership.role(), Role::Unknown, "no role after leaving");
    }

    #[test]
    fn two_members_with_one_url_elect_nobody() {
        let a = ("m-a", "http://same:8081", true, false);
        let b = ("m-b", "http://same:8081", true, false);
        assert_eq!(elected(&[a, b]), None);
    }
}
