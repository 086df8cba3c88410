//! Middleware that costs no allocation on the common path: a [`Hook`] looks
//! at each request before the service behind it and at each answer after,
//! synchronously, and only a request or answer that needs to wait (a body to
//! read) takes a boxed future.
//!
//! `axum::middleware::from_fn` boxes the service behind it and the request's
//! future on every call; under a lookup load that was a quarter of the
//! server's CPU time with four such layers. A [`HookLayer`] wraps the
//! service directly and its future is the inner future plus the hook's
//! carried state.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use futures::future::BoxFuture;
use tower::util::Oneshot;
use tower::{Layer, Service, ServiceExt as _};

/// What a hook decides before the inner service runs.
pub enum Before<C> {
    /// Go on to the inner service with this request, carrying `C` to [`Hook::after`].
    Pass(Request, C),
    /// Answer at once; the inner service is not called.
    Answer(Response),
    /// The request needs asynchronous work first (its body read); the
    /// future gives the request to pass on with its carry, or an answer.
    Prepare(BoxFuture<'static, Result<(Request, C), Response>>),
}

/// What a hook makes of the inner service's answer.
pub enum After {
    /// This is the answer.
    Done(Response),
    /// The answer needs asynchronous work (its body read) to be final.
    Later(BoxFuture<'static, Response>),
}

/// A middleware's two steps, synchronous on the common path.
pub trait Hook: Clone + Send + Sync + 'static {
    /// What [`Hook::before`] hands to [`Hook::after`] for one request.
    type Carry: Send + 'static;

    /// Looks at a request before the inner service sees it.
    fn before(&self, request: Request) -> Before<Self::Carry>;

    /// Looks at the inner service's answer.
    fn after(&self, carry: Self::Carry, response: Response) -> After;
}

/// Wraps a service with a [`Hook`].
#[derive(Clone)]
pub struct HookLayer<H>(pub H);

impl<H: Hook, S> Layer<S> for HookLayer<H> {
    type Service = HookService<H, S>;

    fn layer(&self, inner: S) -> Self::Service {
        HookService {
            hook: self.0.clone(),
            inner: Arc::new(inner),
        }
    }
}

/// A service with a [`Hook`] around it.
///
/// The inner service is shared, so cloning this one (axum clones a route's
/// whole service for every request it routes) costs one reference count,
/// not a copy of every layer below; a call clones only the inner service.
pub struct HookService<H, S> {
    hook: H,
    inner: Arc<S>,
}

impl<H: Clone, S> Clone for HookService<H, S> {
    fn clone(&self) -> Self {
        Self {
            hook: self.hook.clone(),
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<H, S> Service<Request> for HookService<H, S>
where
    H: Hook,
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = HookFuture<H, Oneshot<S, Request>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Each call readies its own clone of the inner service.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.hook.before(request) {
            Before::Pass(request, carry) => HookFuture::at(Stage::Running {
                inner: S::clone(&self.inner).oneshot(request),
                hook: Some((self.hook.clone(), carry)),
            }),
            Before::Answer(response) => HookFuture::at(Stage::Answered {
                response: Some(response),
            }),
            Before::Prepare(prepare) => {
                let inner = S::clone(&self.inner);
                let hook = self.hook.clone();
                HookFuture::at(Stage::Waiting {
                    work: Box::pin(async move {
                        let (request, carry) = match prepare.await {
                            Ok(prepared) => prepared,
                            Err(response) => return response,
                        };
                        let response = match inner.oneshot(request).await {
                            Ok(response) => response,
                            Err(never) => match never {},
                        };
                        match hook.after(carry, response) {
                            After::Done(response) => response,
                            After::Later(finish) => finish.await,
                        }
                    }),
                })
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of a [`HookService`] call.
    pub struct HookFuture<H: Hook, F> {
        #[pin]
        stage: Stage<H, F>,
    }
}

pin_project_lite::pin_project! {
    #[project = StageProjection]
    enum Stage<H: Hook, F> {
        // The inner service runs; the hook looks at its answer.
        Running { #[pin] inner: F, hook: Option<(H, H::Carry)> },
        // Answered before or without the inner service.
        Answered { response: Option<Response> },
        // Asynchronous work of the hook's (before or after the inner service).
        Waiting { work: BoxFuture<'static, Response> },
    }
}

impl<H: Hook, F> HookFuture<H, F> {
    fn at(stage: Stage<H, F>) -> Self {
        Self { stage }
    }
}

impl<H, F> Future for HookFuture<H, F>
where
    H: Hook,
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut stage = self.project().stage;
        let finish = match stage.as_mut().project() {
            StageProjection::Running { inner, hook } => {
                let response = match std::task::ready!(inner.poll(cx)) {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                let Some((hook, carry)) = hook.take() else {
                    unreachable!("a hook future is not polled after it finished")
                };
                match hook.after(carry, response) {
                    After::Done(response) => return Poll::Ready(Ok(response)),
                    After::Later(finish) => finish,
                }
            }
            StageProjection::Answered { response } => {
                let Some(response) = response.take() else {
                    unreachable!("a hook future is not polled after it finished")
                };
                return Poll::Ready(Ok(response));
            }
            StageProjection::Waiting { work } => return work.as_mut().poll(cx).map(Ok),
        };
        stage.set(Stage::Waiting { work: finish });
        match stage.project() {
            StageProjection::Waiting { work } => work.as_mut().poll(cx).map(Ok),
            _ => unreachable!("the stage was just set to waiting"),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::response::IntoResponse as _;
    use axum::routing::get;
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;

    use super::*;

    /// Answers `/early` itself, waits for the body of `/slow`, tags every
    /// answer with the path, and reads `/late` answers' bodies afterwards.
    #[derive(Clone)]
    struct Tagging;

    impl Hook for Tagging {
        type Carry = String;

        fn before(&self, request: Request) -> Before<String> {
            let path = request.uri().path().to_owned();
            match path.as_str() {
                "/early" => Before::Answer((StatusCode::IM_A_TEAPOT, "early").into_response()),
                "/slow" => Before::Prepare(Box::pin(async move { Ok((request, "prepared".to_owned())) })),
                _ => Before::Pass(request, path),
            }
        }

        fn after(&self, carry: String, mut response: Response) -> After {
            response.headers_mut().insert("x-carry", carry.parse().unwrap());
            if carry == "/late" {
                return After::Later(Box::pin(async move {
                    let bytes = response.into_body().collect().await.unwrap().to_bytes();
                    format!("late: {}", String::from_utf8_lossy(&bytes)).into_response()
                }));
            }
            After::Done(response)
        }
    }

    async fn call(path: &str) -> (StatusCode, Option<String>, String) {
        let app = axum::Router::new()
            .route("/{name}", get(|| async { "inner" }))
            .layer(HookLayer(Tagging));
        let response = app
            .oneshot(Request::builder().uri(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let carry = response
            .headers()
            .get("x-carry")
            .map(|value| value.to_str().unwrap().to_owned());
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, carry, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn each_path_through_a_hook_answers_as_the_hook_decides() {
        assert_eq!(
            call("/plain").await,
            (StatusCode::OK, Some("/plain".to_owned()), "inner".to_owned())
        );
        assert_eq!(
            call("/early").await,
            (StatusCode::IM_A_TEAPOT, None, "early".to_owned())
        );
        assert_eq!(
            call("/slow").await,
            (StatusCode::OK, Some("prepared".to_owned()), "inner".to_owned())
        );
        assert_eq!(call("/late").await, (StatusCode::OK, None, "late: inner".to_owned()));
    }
}
