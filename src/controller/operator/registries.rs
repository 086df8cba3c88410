//! The connection controllers, one per kind (SchemaRegistry and
//! ClusterSchemaRegistry): each connection is checked (its credentials
//! resolved, its registry asked, its capabilities probed) and its status
//! written through [`render_status`]; the check runs again every
//! [`RECHECK`] (or resync period, when shorter), so a rotated Secret or a registry that comes back is seen
//! without a restart. A connection with objects bound to it keeps its
//! finalizer: its deletion waits until they are gone.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::*;
use crate::connections::Connection;
use crate::connections::status::{Check, capabilities_of, changed, render_status};
use crate::crd::{ClusterSchemaRegistry, ConnectionStatus, RegistryCapabilities, SchemaRegistry};

/// How often each connection is checked again at most (Secrets are read by
/// name, never watched); sooner when the resync period is shorter.
pub(super) const RECHECK: Duration = Duration::from_secs(60);

/// A connection kind, as its controller handles it.
pub(super) trait ConnectionObject:
    super::InRegistry
    + Resource<DynamicType = ()>
    + Clone
    + DeserializeOwned
    + Serialize
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// The connection, as the rules read it.
    fn connection(&self) -> Connection;
    /// Its status.
    fn connection_status(&self) -> Option<&ConnectionStatus>;
    /// The API for objects of this kind where `self` lives.
    fn api_for(&self, client: &Client) -> Api<Self>;
}

impl ConnectionObject for SchemaRegistry {
    fn connection(&self) -> Connection {
        Connection::from_namespaced(self)
    }

    fn connection_status(&self) -> Option<&ConnectionStatus> {
        self.status.as_ref()
    }

    fn api_for(&self, client: &Client) -> Api<Self> {
        Api::namespaced(client.clone(), self.metadata.namespace.as_deref().unwrap_or_default())
    }
}

impl ConnectionObject for ClusterSchemaRegistry {
    fn connection(&self) -> Connection {
        Connection::from_cluster(self)
    }

    fn connection_status(&self) -> Option<&ConnectionStatus> {
        self.status.as_ref()
    }

    fn api_for(&self, client: &Client) -> Api<Self> {
        Api::all(client.clone())
    }
}

/// The registry scope of the objects bound to `connection`.
pub(super) fn scope_of_connection(connection: &Connection) -> RegistryScope {
    RegistryScope::of(
        connection.namespace.as_deref().unwrap_or_default(),
        Some(&connection.reference),
    )
}

/// The cached Schemas and SubjectConfigs bound to `connection`, by kind and key.
fn bound_objects(context: &Context, connection: &Connection) -> Vec<String> {
    let scope = scope_of_connection(connection);
    let mut bound: Vec<String> = context
        .schemas
        .state_filter(|schema| in_scope(schema, &scope))
        .iter()
        .map(|schema| format!("Schema {}", ObjectKey::of(&schema.metadata)))
        .collect();
    bound.extend(
        context
            .configs
            .state_filter(|config| in_scope(config, &scope))
            .iter()
            .map(|config| format!("SubjectConfig {}", ObjectKey::of(&config.metadata))),
    );
    bound.sort();
    bound
}

pub(super) async fn reconcile_connection<K: ConnectionObject>(
    object: Arc<K>,
    context: Arc<Context>,
) -> Result<Action, Error> {
    let api = object.api_for(&context.client);
    finalizer(&api, FINALIZER, object, |event| async {
        match event {
            finalizer::Event::Apply(object) => check_connection(object.as_ref(), &context).await,
            finalizer::Event::Cleanup(object) => release_connection(object.as_ref(), &context),
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

async fn check_connection<K: ConnectionObject>(object: &K, context: &Context) -> Result<Action, Error> {
    let connection = object.connection();
    let check = match context.connections.client(&connection).await {
        Err(error) if error.is_transient() => return Err(Error::Resolve(error)),
        Err(error) => Check::Unresolved(error),
        Ok(client) => probe(&connection, &client).await,
    };
    let bound = bound_objects(context, &connection).len();
    let previous = object.connection_status();
    let status = render_status(
        &check,
        object.meta().generation,
        bound,
        previous,
        &Time(Timestamp::now()),
    );
    if changed(previous, &status) {
        let ready = |status: Option<&ConnectionStatus>| {
            status
                .and_then(|status| find_condition(&status.conditions, ConditionType::Ready))
                .map(|ready| (ready.status.clone(), ready.reason.clone()))
        };
        let flipped = ready(previous) != ready(Some(&status));
        let patch = serde_json::json!({
            "apiVersion": K::api_version(&()),
            "kind": K::kind(&()),
            "status": status,
        });
        object
            .api_for(&context.client)
            .patch_status(
                &object.name_any(),
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&patch),
            )
            .await
            .map_err(|source| Error::Kube {
                action: "write a registry connection's status",
                source,
            })?;
        if flipped {
            let is_ready = matches!(check, Check::Ready { .. });
            let note = match &check {
                Check::Ready { endpoint, .. } => format!("ready at {endpoint}"),
                Check::Unresolved(error) => error.to_string(),
                Check::Unreachable { message, .. } | Check::Undetected { message, .. } => message.clone(),
            };
            let reason = if is_ready { "RegistryReady" } else { "RegistryNotReady" };
            publish(context, object, reason, !is_ready, note).await;
        }
    }
    Ok(Action::requeue(RECHECK.min(context.resync)))
}

/// What asking the registry of `connection` through `client` finds.
async fn probe(connection: &Connection, client: &crate::connections::Client) -> Check {
    let answered = client.registry.compatibility(None, true).await;
    // After the call: an external client reports the URL in use, which a failed connection moves on.
    let endpoint = match &client.external {
        Some(external) => external.endpoint().to_owned(),
        None => "embedded".to_owned(),
    };
    if let Err(error) = answered {
        let message = error.to_string();
        return if error.is_unanswered() {
            Check::Unreachable { endpoint, message }
        } else {
            Check::Undetected { endpoint, message }
        };
    }
    let capabilities = match &client.external {
        Some(external) => match external.capabilities().await {
            // The data-contract probe may write to a scratch subject: never on a read-only one.
            Ok(found) => {
                let contracts = match connection.spec.read_only {
                    true => None,
                    false => external.data_contracts().await.ok(),
                };
                capabilities_of(&found, contracts)
            }
            Err(error) => {
                return Check::Undetected {
                    endpoint,
                    message: error.to_string(),
                };
            }
        },
        // The embedded registry: what it has is known, the rest asked.
        None => RegistryCapabilities {
            subject_mode: client.registry.supports_subject_mode().await.unwrap_or(true),
            contracts: client.registry.supports_data_contracts().await.ok(),
            contexts: true,
            guids: true,
            normalize: true,
            import_mode: Some(true),
        },
    };
    Check::Ready { endpoint, capabilities }
}

/// A connection being deleted waits while objects are bound to it; then its
/// cached client is dropped and the finalizer goes.
fn release_connection<K: ConnectionObject>(object: &K, context: &Context) -> Result<Action, Error> {
    let connection = object.connection();
    let bound = bound_objects(context, &connection);
    if !bound.is_empty() {
        let mut named: Vec<&str> = bound.iter().take(5).map(String::as_str).collect();
        let more = bound.len().saturating_sub(named.len());
        let tail = format!("and {more} more");
        if more > 0 {
            named.push(&tail);
        }
        return Err(Error::ConnectionInUse(format!(
            "{} is still used by {}; delete those first",
            connection.reference,
            named.join(", ")
        )));
    }
    context.connections.forget(
        connection.reference.kind,
        connection.namespace.as_deref(),
        &connection.reference.name,
    );
    Ok(Action::await_change())
}
