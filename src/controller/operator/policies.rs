//! The SchemaPolicy controller: each policy's status says whether it can be
//! used (`Ready`, or `Ready=False` with reason InvalidPolicy and every
//! problem), how many Schemas and SubjectConfigs it matches, and how many of
//! them violate it now. The counts are refreshed on every change to the
//! policy, every change the Schema and SubjectConfig caches apply (a burst
//! coalesced into one recount after [`RECOUNT_DELAY`]), and every
//! [`RECOUNT`].

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::*;
use crate::crd::conditions::{MAX_MESSAGE_BYTES, truncate_message};
use crate::crd::{SchemaPolicy, SchemaPolicyStatus};
use crate::policy::{CompiledPolicy, NamespaceFacts, PolicySet, Proposal, ProposedRegistry, Target};

/// How often a policy's counts are refreshed.
const RECOUNT: Duration = Duration::from_secs(30);

/// How long a recount waits for more changes, so that a burst (the first
/// list of every Schema, a `kubectl apply` of a folder) is counted once.
const RECOUNT_DELAY: Duration = Duration::from_millis(500);

/// A stream that yields once per bump of `changes`, for `reconcile_all_on`.
pub(super) fn each_change(changes: tokio::sync::watch::Receiver<u64>) -> impl futures::Stream<Item = ()> + Send {
    futures::stream::unfold(changes, |mut changes| async move {
        changes.changed().await.ok()?;
        Some(((), changes))
    })
}

/// `changes`, each one bumping `recount` as it passes.
pub(super) fn recounting<S: futures::Stream>(
    changes: S,
    recount: Arc<tokio::sync::watch::Sender<u64>>,
) -> impl futures::Stream<Item = S::Item> {
    changes.inspect(move |_| recount.send_modify(|count| *count += 1))
}

/// The controller of every SchemaPolicy (they are cluster-scoped).
pub(super) fn status_controller(client: &Client) -> Controller<SchemaPolicy> {
    Controller::new(Api::<SchemaPolicy>::all(client.clone()), watcher::Config::default())
        .with_config(super::controller_config().debounce(RECOUNT_DELAY))
}

/// Writes one policy's status.
pub(super) async fn reconcile_policy(policy: Arc<SchemaPolicy>, context: Arc<Context>) -> Result<Action, Error> {
    let name = policy.name_any();
    let now = Time(Timestamp::now());
    let generation = policy.metadata.generation;
    let mut status = SchemaPolicyStatus {
        observed_generation: generation,
        conditions: policy
            .status
            .as_ref()
            .map(|status| status.conditions.clone())
            .unwrap_or_default(),
        ..Default::default()
    };
    match CompiledPolicy::compile(&name, &policy.spec) {
        Ok(compiled) => {
            let (matched, violations) = count(&context, compiled);
            status.matched = matched;
            status.violations = violations;
            let message = format!("the policy is in force; it matches {matched} object(s), {violations} violate it");
            set(
                &mut status.conditions,
                true,
                Reason::Configured,
                &message,
                generation,
                &now,
            );
        }
        Err(invalid) => {
            let message = truncate_message(&invalid.to_string(), MAX_MESSAGE_BYTES);
            set(
                &mut status.conditions,
                false,
                Reason::InvalidPolicy,
                &message,
                generation,
                &now,
            );
        }
    }
    if policy_status_changed(policy.status.as_ref(), &status) {
        let patch = serde_json::json!({
            "apiVersion": SchemaPolicy::api_version(&()),
            "kind": SchemaPolicy::kind(&()),
            "status": status,
        });
        Api::<SchemaPolicy>::all(context.client.clone())
            .patch_status(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&patch))
            .await
            .map_err(|source| Error::Kube {
                action: "write the SchemaPolicy's status",
                source,
            })?;
    }
    Ok(Action::requeue(RECOUNT))
}

fn set(
    conditions: &mut Vec<Condition>,
    ready: bool,
    reason: Reason,
    message: &str,
    generation: Option<i64>,
    now: &Time,
) {
    set_condition(
        conditions,
        ConditionType::Ready,
        ready,
        reason.as_str(),
        message,
        generation,
        now,
    );
}

/// How many Schemas and SubjectConfigs `policy` matches, and how many of
/// them violate it: judged on their specs here, or refused or warned by it
/// in their status (which also covers the rules that need the parsed schema
/// or the registry's level).
fn count(context: &Context, policy: CompiledPolicy) -> (i64, i64) {
    let name = policy.name().to_owned();
    let policy = Arc::new(policy);
    let alone = PolicyContext::new(
        Arc::new(PolicySet::from_compiled(vec![Arc::clone(&policy)], Vec::new())),
        context.policy.context().namespaces,
    );
    let mentioned = |conditions: &[Condition]| {
        let needle = format!("SchemaPolicy {name} rule");
        conditions.iter().any(|condition| condition.message.contains(&needle))
    };
    let no_labels = std::collections::BTreeMap::new();
    let labels = |namespace: &str| {
        alone
            .namespaces
            .get(namespace)
            .cloned()
            .unwrap_or_else(|| no_labels.clone())
    };
    let (mut matched, mut violations) = (0, 0);
    for schema in context.schemas.state() {
        let namespace = schema.metadata.namespace.clone().unwrap_or_default();
        let labels = labels(&namespace);
        let proposal = Proposal {
            namespace: Some(NamespaceFacts {
                name: &namespace,
                labels: &labels,
            }),
            subject: Some(&schema.spec.subject),
            schema_type: Some(schema.spec.schema_type),
            registry: Some(ProposedRegistry::of(schema.spec.registry_ref.as_ref())),
            ..Proposal::new(Target::Schema)
        };
        if !policy.applies_to(&proposal) {
            continue;
        }
        matched += 1;
        let in_status = schema
            .status
            .as_ref()
            .is_some_and(|status| mentioned(&status.conditions));
        if in_status || !alone.judge_schema(&schema, None, None, None).violations.is_empty() {
            violations += 1;
        }
    }
    for config in context.configs.state() {
        let namespace = config.metadata.namespace.clone().unwrap_or_default();
        let labels = labels(&namespace);
        let proposal = Proposal {
            namespace: Some(NamespaceFacts {
                name: &namespace,
                labels: &labels,
            }),
            subject: Some(&config.spec.subject),
            registry: Some(ProposedRegistry::of(config.spec.registry_ref.as_ref())),
            ..Proposal::new(Target::SubjectConfig)
        };
        if !policy.applies_to(&proposal) {
            continue;
        }
        matched += 1;
        let in_status = config
            .status
            .as_ref()
            .is_some_and(|status| mentioned(&status.conditions));
        if in_status || !alone.judge_subject_config(&config, None, None).violations.is_empty() {
            violations += 1;
        }
    }
    (matched, violations)
}

fn policy_status_changed(a: Option<&SchemaPolicyStatus>, b: &SchemaPolicyStatus) -> bool {
    let Some(a) = a else { return true };
    let strip = |status: &SchemaPolicyStatus| {
        let mut status = status.clone();
        for condition in &mut status.conditions {
            condition.last_transition_time = Time(Timestamp::UNIX_EPOCH);
        }
        status
    };
    strip(a) != strip(b)
}
