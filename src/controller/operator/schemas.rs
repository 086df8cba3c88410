//! The Schema controller's reconcile: finalizer, read, decide, act, status
//! write, events; and the cleanup its finalizer runs on deletion.

use super::*;
use k8s_openapi::api::core::v1::ConfigMap;

#[tracing::instrument(skip_all, fields(namespace = schema.namespace(), name = schema.name_any(), generation = schema.metadata.generation))]
pub(super) async fn reconcile_schema(schema: Arc<Schema>, context: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let outcome = finalize_schema(schema, &context).await;
    let result = reconcile_result(&outcome, context.resync);
    context
        .metrics
        .reconciled(ResourceKind::Schema, result, started.elapsed());
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
    let policy = context.policy.context();
    let view = context.view_with_fresh_configs(&schema.spec.subject, &policy).await?;
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
        context.registry.as_ref(),
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
                context.metrics.rejected(reason);
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

async fn cleanup_schema(schema: &Schema, context: &Context) -> Result<Action, Error> {
    let key = ObjectKey::of(&schema.metadata);
    let view = context.view(&schema.spec.subject, &context.policy.context());
    let owner = view.schema_owner.as_ref() == Some(&key);
    let subject = SubjectName::new(schema.spec.subject.clone()).ok();
    let needs_referrers = owner && schema.spec.deletion_policy != crate::crd::DeletionPolicy::Retain;
    let registry_referrers = match (&subject, needs_referrers) {
        (Some(subject), true) => cleanup::registry_referrers(context.registry.as_ref(), subject)
            .await
            .map_err(Error::Registry)?,
        _ => Vec::new(),
    };
    let resource_referrers: Vec<ObjectKey> = view.referrers.into_iter().filter(|referrer| *referrer != key).collect();
    let plan = cleanup::decide_cleanup(
        schema.spec.deletion_policy,
        owner,
        subject,
        &resource_referrers,
        &registry_referrers,
    );
    match cleanup::act_cleanup(&plan, context.registry.as_ref())
        .await
        .map_err(Error::Registry)?
    {
        CleanupOutcome::Done { deleted } => {
            if deleted {
                let note = format!(
                    "deleted subject `{}` ({:?})",
                    schema.spec.subject, schema.spec.deletion_policy
                );
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
