//! The Schema controller's reconcile: finalizer, read, decide, act, status
//! write, events; and the cleanup its finalizer runs on deletion.

use super::*;
use k8s_openapi::api::core::v1::ConfigMap;

#[tracing::instrument(skip_all, fields(namespace = schema.namespace(), name = schema.name_any(), generation = schema.metadata.generation))]
pub(super) async fn reconcile_schema(schema: Arc<Schema>, context: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let registry = schema.registry_scope().label();
    let outcome = finalize_schema(schema, &context).await;
    let result = reconcile_result(&outcome, context.resync);
    context
        .metrics
        .reconciled(ResourceKind::Schema, &registry, result, started.elapsed());
    outcome
}

async fn finalize_schema(schema: Arc<Schema>, context: &Context) -> Result<Action, Error> {
    let namespace = schema.namespace().unwrap_or_default();
    let api = Api::<Schema>::namespaced(context.client.clone(), &namespace);
    finalizer(&api, FINALIZER, schema, |event| async {
        match event {
            finalizer::Event::Apply(schema) => apply_schema(&schema, context).await,
            finalizer::Event::Cleanup(schema) => cleanup_schema(&schema, context).await,
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

async fn apply_schema(schema: &Schema, context: &Context) -> Result<Action, Error> {
    let key = ObjectKey::of(&schema.metadata);
    let resolved = match context
        .connections
        .resolve(&key.namespace, schema.spec.registry_ref.as_ref())
        .await
    {
        Ok(resolved) => resolved,
        Err(error) if error.is_transient() => return Err(Error::Resolve(error)),
        Err(error) => return wait_for_registry(schema, context, &key, &error).await,
    };
    // A read-only connection: every object bound to it is observed, never written.
    let observed;
    let schema = if resolved.read_only && schema.spec.management_policy != crate::crd::ManagementPolicy::Observe {
        let mut copy = schema.clone();
        copy.spec.management_policy = crate::crd::ManagementPolicy::Observe;
        observed = copy;
        &observed
    } else {
        schema
    };
    let policy = context.policy.context();
    let view = context
        .view_with_fresh_configs(&schema.registry_scope(), &schema.spec.subject, &policy)
        .await?;
    let config_map = match &schema.spec.schema_from {
        Some(from) => Api::<ConfigMap>::namespaced(context.client.clone(), &key.namespace)
            .get_opt(&from.config_map_key_ref.name)
            .await
            .map_err(|source| Error::Kube {
                action: "read the schema's ConfigMap",
                source,
            })?
            .map(|config_map| config_map.data.unwrap_or_default()),
        None => None,
    };
    let now = Time(Timestamp::now());
    let reconciled = schema::reconcile(
        schema,
        &view,
        config_map.as_ref(),
        resolved.registry.as_ref(),
        &context.checker,
        &policy,
        &now,
    )
    .await;
    let previous = schema.status.as_ref();
    let observed_before = previous.and_then(|status| status.observed_generation);
    record_policy(context, schema, observed_before, &reconciled.verdict).await;
    if schema::status::changed(previous, &reconciled.status) {
        patch_status::<Schema>(context, &key, &reconciled.status).await?;
        for transition in schema::status::transitions(previous, &reconciled.status) {
            if transition.reason == "Rejected"
                && let Some(reason) = find_condition(&reconciled.status.conditions, ConditionType::Stalled)
                    .and_then(|stalled| Reason::parse(&stalled.reason))
            {
                context.metrics.rejected(&schema.registry_scope().label(), reason);
            }
            publish(context, schema, transition.reason, transition.warning, transition.note).await;
        }
    }
    if let Some(error) = reconciled.retry {
        let delay = context.backoff(&key);
        tracing::warn!(
            error = &error as &dyn std::error::Error,
            retry_in_seconds = delay.as_secs(),
            "The registry failed; retrying"
        );
        return Ok(Action::requeue(delay));
    }
    context.succeeded(&key);
    if let Some(schema::Plan::Conflict { .. }) = reconciled.plan {
        return Ok(Action::requeue(CONFLICT_RETRY));
    }
    Ok(Action::requeue(context.resync))
}

/// Writes that `schema` waits for its registry (and an event when that is
/// news), and looks again later.
async fn wait_for_registry(
    schema: &Schema,
    context: &Context,
    key: &ObjectKey,
    error: &ResolveError,
) -> Result<Action, Error> {
    let mut status = schema.status.clone().unwrap_or_default();
    status.observed_generation = schema.metadata.generation;
    set_waiting(
        &mut status.conditions,
        error,
        schema.metadata.generation,
        &Time(Timestamp::now()),
    );
    if schema::status::changed(schema.status.as_ref(), &status) {
        patch_status::<Schema>(context, key, &status).await?;
        publish(context, schema, error.reason(), true, error.to_string()).await;
    }
    context.succeeded(key);
    Ok(Action::requeue(REGISTRY_WAIT_RETRY))
}

async fn cleanup_schema(schema: &Schema, context: &Context) -> Result<Action, Error> {
    let key = ObjectKey::of(&schema.metadata);
    let view = context.view(
        &schema.registry_scope(),
        &schema.spec.subject,
        &context.policy.context(),
    );
    let owner = view.schema_owner.as_ref() == Some(&key);
    let subject = SubjectName::new(schema.spec.subject.clone()).ok();
    let mut deletion_policy = schema.spec.deletion_policy;
    // Only a deletion that may delete the subject needs the registry.
    let registry = if owner && deletion_policy != crate::crd::DeletionPolicy::Retain {
        match context
            .connections
            .resolve_for_cleanup(&key.namespace, schema.spec.registry_ref.as_ref())
            .await
        {
            Ok(resolved) if resolved.read_only => {
                deletion_policy = crate::crd::DeletionPolicy::Retain;
                None
            }
            Ok(resolved) => Some(resolved.registry),
            Err(error @ ResolveError::NotFound { .. }) => {
                // Its connection is gone (its finalizer was removed by hand): nothing to delete through.
                publish(
                    context,
                    schema,
                    error.reason(),
                    true,
                    format!("{error}; the subject is left as it is"),
                )
                .await;
                deletion_policy = crate::crd::DeletionPolicy::Retain;
                None
            }
            Err(error) => return Err(Error::Resolve(error)),
        }
    } else {
        None
    };
    let registry_referrers = match (&subject, &registry) {
        (Some(subject), Some(registry)) => cleanup::registry_referrers(registry.as_ref(), subject)
            .await
            .map_err(Error::Registry)?,
        _ => Vec::new(),
    };
    let resource_referrers: Vec<ObjectKey> = view.referrers.into_iter().filter(|referrer| *referrer != key).collect();
    let plan = cleanup::decide_cleanup(
        deletion_policy,
        owner,
        subject,
        &resource_referrers,
        &registry_referrers,
    );
    // Without a registry the plan is to leave the subject or wait, which call none.
    let registry = registry.unwrap_or_else(|| context.connections.default_registry());
    match cleanup::act_cleanup(&plan, registry.as_ref())
        .await
        .map_err(Error::Registry)?
    {
        CleanupOutcome::Done { deleted } => {
            if deleted {
                let note = format!("deleted subject `{}` ({:?})", schema.spec.subject, deletion_policy);
                publish(context, schema, Reason::Deleted.as_str(), false, note).await;
            }
            Ok(Action::await_change())
        }
        CleanupOutcome::Blocked(message) => {
            let mut status = schema.status.clone().unwrap_or_default();
            let now = Time(Timestamp::now());
            set_condition(
                &mut status.conditions,
                ConditionType::DeletionBlocked,
                true,
                Reason::ReferencedBySchemas.as_str(),
                &message,
                schema.metadata.generation,
                &now,
            );
            if schema::status::changed(schema.status.as_ref(), &status) {
                patch_status::<Schema>(context, &key, &status).await?;
                publish(context, schema, "DeletionBlocked", true, message.clone()).await;
            }
            Err(Error::DeletionBlocked(message))
        }
    }
}
