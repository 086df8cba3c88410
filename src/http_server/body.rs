//! One request through the router, with a deadline on its body: a body
//! still arriving when the body timeout passes fails the handler's read, and
//! the reply becomes HTTP 408 with a Confluent error document
//! (`{"error_code": 408, "message": …}`), after which the connection closes.
//!
//! The deadline runs from the end of the request's headers to the end of
//! its body, however the bytes trickle in; time the handler spends after
//! the body has arrived is not limited here.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Request, Response, StatusCode};
use http_body::{Frame, SizeHint};
use tower::ServiceExt as _;

use super::{ServerLimits, error_response, head};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Runs `request` through `router`, bounding its body by the body timeout,
/// unless its head is over a limit (see `head`). `in_flight` is dropped with
/// the response's body, once it has been written.
pub(super) async fn handle<B, G>(
    request: Request<B>,
    router: Router,
    in_flight: G,
    limits: ServerLimits,
) -> Result<Response<Body>, Infallible>
where
    B: http_body::Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
    G: Send + Unpin + 'static,
{
    if let Some(refused) = head::refusal(&request, &limits) {
        tracing::debug!(status = %refused.status(), "Request head over a limit");
        return Ok(tracked(refused, in_flight));
    }
    let timeout = limits.body_timeout;
    let timed_out = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| {
        Body::new(Deadline {
            body,
            sleep: Box::pin(tokio::time::sleep(timeout)),
            timed_out: Arc::clone(&timed_out),
        })
    });
    let response = router.oneshot(request).await?;
    let response = if timed_out.load(Ordering::Acquire) {
        tracing::debug!(?timeout, "Request body timed out");
        body_timed_out(timeout)
    } else {
        response
    };
    Ok(tracked(response, in_flight))
}

/// `response`, holding `in_flight` until hyper drops its body.
fn tracked<G: Send + Unpin + 'static>(response: Response<Body>, in_flight: G) -> Response<Body> {
    response.map(|body| {
        Body::new(Tracked {
            body,
            _in_flight: in_flight,
        })
    })
}

/// The 408 reply; `Connection: close`, as the rest of the body is unread.
fn body_timed_out(timeout: Duration) -> Response<Body> {
    let message = format!("the request body did not arrive within {} s", timeout.as_secs());
    error_response(StatusCode::REQUEST_TIMEOUT, message)
}

/// The error a request body gives once its deadline has passed.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
struct BodyTimedOut;

/// A request body that fails once `sleep` ends before the body does.
struct Deadline<B> {
    body: B,
    sleep: Pin<Box<tokio::time::Sleep>>,
    timed_out: Arc<AtomicBool>,
}

impl<B> http_body::Body for Deadline<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            self.timed_out.store(true, Ordering::Release);
            return Poll::Ready(Some(Err(Box::new(BodyTimedOut))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A response body that holds its request's guard until hyper drops it.
struct Tracked<G> {
    body: Body,
    _in_flight: G,
}

impl<G: Unpin> http_body::Body for Tracked<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use axum::routing::post;
    use futures::StreamExt as _;
    use http_body_util::{BodyExt as _, StreamBody};

    use axum::http::header;

    use super::*;

    fn limits() -> ServerLimits {
        ServerLimits {
            body_timeout: Duration::from_millis(100),
            ..ServerLimits::DEFAULT
        }
    }

    #[tokio::test]
    async fn a_head_over_a_limit_is_answered_without_reaching_the_router() {
        let request = Request::post(format!("/{}", "a".repeat(9000)))
            .body(body("{}", true))
            .unwrap();
        let response = handle(request, echo(), (), limits()).await.unwrap();
        assert_eq!(response.status(), StatusCode::URI_TOO_LONG);
    }

    fn echo() -> Router {
        Router::new().route("/", post(|body: Bytes| async move { body }))
    }

    /// A body that sends `first` and then, unless `ends`, never finishes.
    fn body(
        first: &'static str,
        ends: bool,
    ) -> StreamBody<impl futures::Stream<Item = Result<Frame<Bytes>, Infallible>>> {
        let first = futures::stream::once(std::future::ready(Ok(Frame::data(Bytes::from_static(
            first.as_bytes(),
        )))));
        let rest = if ends {
            futures::stream::empty().left_stream()
        } else {
            futures::stream::pending().right_stream()
        };
        StreamBody::new(first.chain(rest))
    }

    #[tokio::test]
    async fn a_body_unfinished_at_the_deadline_is_answered_408_with_a_confluent_error() {
        let request = Request::post("/").body(body("{", false)).unwrap();
        let response = handle(request, echo(), (), limits()).await.unwrap();
        assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(response.headers()[header::CONNECTION], "close");
        let document = response.into_body().collect().await.unwrap().to_bytes();
        let document: serde_json::Value = serde_json::from_slice(&document).unwrap();
        assert_eq!(document["error_code"], 408, "{document}");
    }

    #[tokio::test]
    async fn a_body_finished_in_time_reaches_the_handler() {
        let request = Request::post("/").body(body("{}", true)).unwrap();
        let response = handle(request, echo(), (), limits()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let echoed = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(echoed, "{}");
    }
}
