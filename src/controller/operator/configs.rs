//! The SubjectConfig controller's reconcile: finalizer, the settings
//! written, the status; and the cleanup its finalizer runs on deletion.

use super::*;
use crate::crd::SubjectConfigStatus;
use crate::crd::conditions::truncate_message;

#[tracing::instrument(skip_all, fields(namespace = config.namespace(), name = config.name_any(), generation = config.metadata.generation))]
pub(super) async fn reconcile_config(config: Arc<SubjectConfig>, context: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let registry = config.registry_scope().label();
    let outcome = finalize_config(config, &context).await;
    let result = reconcile_result(&outcome, context.resync);
    context
        .metrics
        .reconciled(ResourceKind::SubjectConfig, &registry, result, started.elapsed());
    outcome
}

async fn finalize_config(config: Arc<SubjectConfig>, context: &Context) -> Result<Action, Error> {
    let namespace = config.namespace().unwrap_or_default();
    let api = Api::<SubjectConfig>::namespaced(context.client.clone(), &namespace);
    finalizer(&api, FINALIZER, config, |event| async {
        match event {
            finalizer::Event::Apply(config) => apply_config(&config, context).await,
            finalizer::Event::Cleanup(config) => cleanup_config(&config, context).await,
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

async fn apply_config(config: &SubjectConfig, context: &Context) -> Result<Action, Error> {
    let key = ObjectKey::of(&config.metadata);
    let resolved = match context
        .connections
        .resolve(&key.namespace, config.spec.registry_ref.as_ref())
        .await
    {
        Ok(resolved) => resolved,
        Err(error) if error.is_transient() => return Err(Error::Resolve(error)),
        Err(error) => return wait_for_registry(config, context, &key, &error).await,
    };
    // A read-only connection: every object bound to it is observed, never written.
    let observed;
    let config = if resolved.read_only && config.spec.management_policy.is_manage() {
        let mut copy = config.clone();
        copy.spec.management_policy = crate::crd::ManagementPolicy::Observe;
        observed = copy;
        &observed
    } else {
        config
    };
    let policy = context.policy.context();
    let view = context.view(&config.registry_scope(), &config.spec.subject, &policy);
    let now = Time(Timestamp::now());
    let reconciled = subject_config::reconcile(config, &view, resolved.registry.as_ref(), &policy, &now)
        .await
        .map_err(Error::Registry)?;
    let observed_before = config.status.as_ref().and_then(|status| status.observed_generation);
    record_policy(context, config, observed_before, &reconciled.verdict).await;
    if subject_config_changed(config.status.as_ref(), &reconciled.status) {
        patch_status::<SubjectConfig>(context, &key, &reconciled.status).await?;
        publish_config_transitions(context, config, &reconciled.status).await;
    }
    context.succeeded(&key);
    Ok(Action::requeue(context.resync))
}

/// Writes that `config` waits for its registry (and an event when that is
/// news), and looks again later.
async fn wait_for_registry(
    config: &SubjectConfig,
    context: &Context,
    key: &ObjectKey,
    error: &ResolveError,
) -> Result<Action, Error> {
    let mut status = config.status.clone().unwrap_or_default();
    status.observed_generation = config.metadata.generation;
    set_waiting(
        &mut status.conditions,
        error,
        config.metadata.generation,
        &Time(Timestamp::now()),
    );
    if subject_config_changed(config.status.as_ref(), &status) {
        patch_status::<SubjectConfig>(context, key, &status).await?;
        publish(context, config, error.reason(), true, error.to_string()).await;
    }
    context.succeeded(key);
    Ok(Action::requeue(REGISTRY_WAIT_RETRY))
}

/// A Warning event when the SubjectConfig newly stalls (a policy refusal
/// among them) or a policy newly warns about it.
async fn publish_config_transitions(context: &Context, config: &SubjectConfig, next: &SubjectConfigStatus) {
    let previous = config.status.as_ref();
    for type_ in [ConditionType::Stalled, ConditionType::PolicyWarning] {
        let holding = |status: &SubjectConfigStatus| {
            find_condition(&status.conditions, type_)
                .filter(|condition| condition.status == "True")
                .map(|condition| (condition.reason.clone(), condition.message.clone()))
        };
        if let Some((reason, message)) = holding(next)
            && previous.and_then(holding) != Some((reason.clone(), message.clone()))
        {
            let event = if type_ == ConditionType::Stalled {
                "Rejected"
            } else {
                "PolicyWarning"
            };
            let note = truncate_message(&format!("{reason}: {message}"), 1024);
            publish(context, config, event, true, note).await;
        }
    }
}

/// Removes the subject's settings when `config` manages them (it owns the
/// subject and is not `managementPolicy: Observe`, which never writes), unless
/// a policy forbids the level the subject would fall back to: then the level
/// stays, `DeletionBlocked=True` (reason `PolicyViolation`) says why, and the
/// deletion waits for the policy or the global level to change.
async fn cleanup_config(config: &SubjectConfig, context: &Context) -> Result<Action, Error> {
    let key = ObjectKey::of(&config.metadata);
    let policy = context.policy.context();
    let view = context.view(&config.registry_scope(), &config.spec.subject, &policy);
    if view.config_owner.as_ref() == Some(&key)
        && config.spec.management_policy.is_manage()
        && let Ok(subject) = SubjectName::new(config.spec.subject.clone())
    {
        let resolved = match context
            .connections
            .resolve_for_cleanup(&key.namespace, config.spec.registry_ref.as_ref())
            .await
        {
            Ok(resolved) => resolved,
            Err(error @ ResolveError::NotFound { .. }) => {
                // Its connection is gone (its finalizer was removed by hand): nothing to clear through.
                publish(
                    context,
                    config,
                    error.reason(),
                    true,
                    format!("{error}; the subject's settings are left as they are"),
                )
                .await;
                return Ok(Action::await_change());
            }
            Err(error) => return Err(Error::Resolve(error)),
        };
        if resolved.read_only {
            return Ok(Action::await_change());
        }
        let registry = resolved.registry;
        if config.spec.compatibility.is_some() && !policy.policies.is_empty() {
            let global = registry.compatibility(None, true).await.map_err(Error::Registry)?;
            let verdict = policy.judge_subject_config_deletion(config, global);
            if let Some(message) = verdict.denial_message() {
                return Err(refuse_deletion(config, context, &key, message).await?);
            }
        }
        subject_config::clear(registry.as_ref(), &subject)
            .await
            .map_err(Error::Registry)?;
    }
    Ok(Action::await_change())
}

/// Reports in the status (and an event, once) that the deletion of `config`
/// waits on a policy; the error to return from the cleanup.
async fn refuse_deletion(
    config: &SubjectConfig,
    context: &Context,
    key: &ObjectKey,
    message: String,
) -> Result<Error, Error> {
    let message = format!("the subject's level stays: {message}");
    let mut status = config.status.clone().unwrap_or_default();
    set_condition(
        &mut status.conditions,
        ConditionType::DeletionBlocked,
        true,
        Reason::PolicyViolation.as_str(),
        &truncate_message(&message, crate::crd::conditions::MAX_MESSAGE_BYTES),
        config.metadata.generation,
        &Time(Timestamp::now()),
    );
    if subject_config_changed(config.status.as_ref(), &status) {
        patch_status::<SubjectConfig>(context, key, &status).await?;
        publish(
            context,
            config,
            "DeletionBlocked",
            true,
            truncate_message(&message, 1024),
        )
        .await;
    }
    Ok(Error::DeletionRefusedByPolicy(message))
}

fn subject_config_changed(a: Option<&crate::crd::SubjectConfigStatus>, b: &crate::crd::SubjectConfigStatus) -> bool {
    let Some(a) = a else { return true };
    let strip = |status: &crate::crd::SubjectConfigStatus| {
        let mut status = status.clone();
        for condition in &mut status.conditions {
            condition.last_transition_time = Time(Timestamp::UNIX_EPOCH);
        }
        status
    };
    strip(a) != strip(b)
}
