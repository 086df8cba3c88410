//! Watches: a chunked stream of newline-delimited JSON events, replayed from the change history
//! after the requested resourceVersion, woken by every change.

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header::CONTENT_TYPE;
use axum::response::Response;
use serde_json::{Value, json};

use super::App;
use super::handlers::{Shape, present};
use super::resources::{self, Resource};
use super::selectors::Selectors;
use super::status::ApiError;
use super::store::{Change, ChangeKind};

/// How often bookmarks are sent when a client allows them.
const BOOKMARK_EVERY: Duration = Duration::from_secs(1);

/// What one watch looks at.
struct Scope {
    resource: Resource,
    shape: Shape,
    namespace: Option<String>,
    selectors: Selectors,
}

impl Scope {
    fn covers(&self, change: &Change) -> bool {
        change.key.group == self.resource.storage_group()
            && change.key.plural == self.resource.plural
            && self
                .namespace
                .as_ref()
                .is_none_or(|namespace| *namespace == change.key.namespace)
    }

    /// The event a change becomes for this watch: an object that starts matching the selectors is
    /// ADDED, one that stops matching is DELETED.
    fn event(&self, change: &Change) -> Option<Value> {
        if !self.covers(change) {
            return None;
        }
        let now = self.selectors.matches(&change.object);
        let kind = match change.kind {
            ChangeKind::Modified => {
                let before = change
                    .previous
                    .as_ref()
                    .is_some_and(|previous| self.selectors.matches(previous));
                match (before, now) {
                    (true, true) => "MODIFIED",
                    (false, true) => "ADDED",
                    (true, false) => "DELETED",
                    (false, false) => return None,
                }
            }
            other if now => other.as_str(),
            _ => return None,
        };
        let object = self
            .shape
            .one(present(change.object.clone(), &self.resource), &self.resource);
        Some(json!({"type": kind, "object": object}))
    }

    fn bookmark(&self, revision: u64, initial_end: bool) -> Value {
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        json!({
            "type": "BOOKMARK",
            "object": {"kind": self.resource.kind, "apiVersion": self.resource.api_version(), "metadata": metadata},
        })
    }
}

fn line(event: &Value) -> Bytes {
    let mut text = event.to_string();
    text.push('\n');
    Bytes::from(text)
}

fn expired(requested: u64, current: u64) -> Value {
    let status = ApiError::new(
        410,
        "Expired",
        format!("too old resource version: {requested} ({current})"),
    )
    .to_status();
    json!({"type": "ERROR", "object": status})
}

/// Starts a watch. The stream ends after `timeoutSeconds`, when the client goes away, or after an
/// ERROR event for an expired resourceVersion.
pub fn serve(
    app: App,
    resource: Resource,
    namespace: Option<String>,
    selectors: Selectors,
    shape: Shape,
    query: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|seconds| seconds.parse::<u64>().ok())
        .map_or(Duration::from_secs(1800), Duration::from_secs);
    let bookmarks = query.get("allowWatchBookmarks").is_some_and(|value| value == "true");
    let send_initial = query.get("sendInitialEvents").map(|value| value == "true");
    let requested = query.get("resourceVersion").filter(|value| !value.is_empty());
    let scope = Scope {
        resource,
        shape,
        namespace,
        selectors,
    };
    let mut changes = app.changes.subscribe();
    changes.borrow_and_update();

    let mut first: Vec<Bytes> = Vec::new();
    let mut finished = false;
    let start = {
        let store = app.lock();
        let revision = match requested.map(String::as_str) {
            None | Some("0") => None,
            Some(text) => Some(
                text.parse::<u64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid resource version {text:?}")))?,
            ),
        };
        let list_first = revision.is_none() || send_initial == Some(true);
        if list_first {
            let objects = store.list(
                scope.resource.storage_group(),
                &scope.resource.plural,
                scope.namespace.as_deref(),
            );
            for object in objects.into_iter().filter(|object| scope.selectors.matches(object)) {
                let object = scope
                    .shape
                    .one(present(object.clone(), &scope.resource), &scope.resource);
                first.push(line(&json!({"type": "ADDED", "object": object})));
            }
            if send_initial == Some(true) {
                first.push(line(&scope.bookmark(store.revision(), true)));
            }
            store.revision()
        } else {
            let revision = revision.unwrap_or_default();
            if store.changes_since(revision, |_| false).is_none() {
                first.push(line(&expired(revision, store.revision())));
                finished = true;
            }
            revision
        }
    };

    let (sender, receiver) = tokio::sync::mpsc::channel::<Bytes>(1024);
    tokio::spawn(async move {
        for event in first {
            if sender.send(event).await.is_err() {
                return;
            }
        }
        if finished {
            return;
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last = start;
        let mut ticker = tokio::time::interval(BOOKMARK_EVERY);
        ticker.tick().await;
        loop {
            changes.borrow_and_update();
            let (batch, served) = {
                let store = app.lock();
                let resource = &scope.resource;
                let batch = store
                    .changes_since(last, |change| scope.covers(change))
                    .map(|batch| (batch, store.last_change_after(last)))
                    .ok_or_else(|| expired(last, store.revision()));
                (
                    batch,
                    resources::find(&store, &resource.group, &resource.version, &resource.plural).is_some(),
                )
            };
            match batch {
                Err(error) => {
                    let _ = sender.send(line(&error)).await;
                    return;
                }
                Ok((batch, newest)) => {
                    // Changes to other kinds are skipped under the lock; the watch has seen them.
                    last = newest;
                    for change in batch {
                        if let Some(event) = scope.event(&change)
                            && sender.send(line(&event)).await.is_err()
                        {
                            return;
                        }
                    }
                }
            }
            // The watch of a kind whose CRD is gone ends, as on the real server.
            if !served {
                return;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = tokio::time::sleep_until(deadline) => return,
                _ = ticker.tick(), if bookmarks => {
                    if sender.send(line(&scope.bookmark(last, false))).await.is_err() {
                        return;
                    }
                }
                () = sender.closed() => return,
            }
        }
    });

    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|event| (Ok::<Bytes, Infallible>(event), receiver))
    });
    Response::builder()
        .header(CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .map_err(|error| ApiError::new(500, "InternalError", error.to_string()))
}
