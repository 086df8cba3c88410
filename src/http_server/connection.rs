//! One connection: TLS handshake (when asked), hyper's HTTP/1.1 state
//! machine, and a watchdog that closes the connection when a request head
//! takes longer than the header timeout or the connection sits idle longer
//! than the idle timeout.
//!
//! hyper 1.12 has a header timeout of its own, but its clock starts as soon
//! as hyper waits for a request head, which on a keep-alive connection is
//! right after the previous response: it bounds idle time and head time
//! together. The watchdog tells them apart: a connection is idle from the
//! end of a response until its next byte arrives, then reading a head until
//! the request starts, then busy (no deadline here; the `body` module bounds
//! the body) until its response has been written.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

use super::ServerLimits;
use super::{body, head};

/// Serves one accepted connection until it ends, times out, or (after
/// `stop` turns true) finishes its in-flight request.
pub(super) async fn run(
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    router: Router,
    limits: ServerLimits,
    stop: watch::Receiver<bool>,
) {
    match tls {
        None => serve_http(stream, router, limits, stop).await,
        Some(acceptor) => match tokio::time::timeout(limits.header_read_timeout, acceptor.accept(stream)).await {
            Ok(Ok(stream)) => serve_http(stream, router, limits, stop).await,
            Ok(Err(error)) => tracing::debug!(error = &error as &dyn std::error::Error, "TLS handshake failed"),
            Err(_) => tracing::debug!("TLS handshake timed out"),
        },
    }
}

async fn serve_http<S>(stream: S, router: Router, limits: ServerLimits, mut stop: watch::Receiver<bool>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Activity::new(limits);
    let mut expiry = activity.subscribe();
    let io = TokioIo::new(Watched {
        stream,
        activity: activity.clone(),
    });
    let service = hyper::service::service_fn(move |request| {
        body::handle(request, router.clone(), activity.start_request(), limits)
    });
    // No timer is given to hyper: its header timeout would also count idle
    // time. Its head limits are above ours, so that ours answer with JSON.
    let connection = http1::Builder::new()
        .max_buf_size(head::hyper_buffer(&limits))
        .max_headers(head::hyper_headers(&limits))
        .serve_connection(io, service);
    let mut connection = std::pin::pin!(connection);
    let mut stopping = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(error = &error as &dyn std::error::Error, "Connection ended with an error");
                }
                return;
            }
            // Dropping the connection closes the socket.
            () = expired(&mut expiry) => {
                tracing::debug!("Closing a connection that sent no request in time");
                return;
            }
            _ = stop.wait_for(|stop| *stop), if !stopping => {
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Where a connection is between requests, and until when it may stay there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the next request's first byte.
    Idle { until: Instant },
    /// Reading a request head.
    Head { until: Instant },
    /// Serving this many requests (at most one on HTTP/1.1).
    Busy { requests: usize },
}

/// A connection's phase, shared by its socket, its service and its watchdog.
#[derive(Clone)]
struct Activity {
    phase: Arc<watch::Sender<Phase>>,
    limits: ServerLimits,
}

impl Activity {
    /// A new connection, reading its first head from now.
    fn new(limits: ServerLimits) -> Self {
        let until = Instant::now() + limits.header_read_timeout;
        Self {
            phase: Arc::new(watch::Sender::new(Phase::Head { until })),
            limits,
        }
    }

    fn subscribe(&self) -> watch::Receiver<Phase> {
        self.phase.subscribe()
    }

    /// Bytes arrived: an idle connection starts reading a head.
    fn bytes_arrived(&self) {
        let until = Instant::now() + self.limits.header_read_timeout;
        self.phase.send_if_modified(|phase| match phase {
            Phase::Idle { .. } => {
                *phase = Phase::Head { until };
                true
            }
            Phase::Head { .. } | Phase::Busy { .. } => false,
        });
    }

    /// A request head was read; the connection is busy until the returned
    /// guard is dropped (with the response's body).
    fn start_request(&self) -> InFlight {
        self.phase.send_modify(|phase| {
            *phase = match *phase {
                Phase::Busy { requests } => Phase::Busy { requests: requests + 1 },
                Phase::Idle { .. } | Phase::Head { .. } => Phase::Busy { requests: 1 },
            };
        });
        InFlight(self.clone())
    }
}

/// A request being served; dropping it (once its response is written)
/// makes the connection idle again.
pub(super) struct InFlight(Activity);

impl Drop for InFlight {
    fn drop(&mut self) {
        let until = Instant::now() + self.0.limits.idle_timeout;
        self.0.phase.send_modify(|phase| {
            *phase = match *phase {
                Phase::Busy { requests } if requests > 1 => Phase::Busy { requests: requests - 1 },
                _ => Phase::Idle { until },
            };
        });
    }
}

/// Resolves once the phase's deadline passes without the phase changing.
async fn expired(phase: &mut watch::Receiver<Phase>) {
    loop {
        let until = match *phase.borrow_and_update() {
            Phase::Idle { until } | Phase::Head { until } => Some(until),
            Phase::Busy { .. } => None,
        };
        let changed = async {
            if phase.changed().await.is_err() {
                // Every sender is gone with the connection itself.
                std::future::pending::<()>().await;
            }
        };
        match until {
            Some(until) => tokio::select! {
                () = tokio::time::sleep_until(until) => return,
                () = changed => {}
            },
            None => changed.await,
        }
    }
}

/// A socket that tells its [`Activity`] when bytes arrive.
struct Watched<S> {
    stream: S,
    activity: Activity,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buffer.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buffer);
        if matches!(polled, Poll::Ready(Ok(()))) && buffer.filled().len() > before {
            self.activity.bytes_arrived();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, bytes)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buffers: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, buffers)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Short limits, so that the tests run in real time.
    fn limits() -> ServerLimits {
        ServerLimits {
            header_read_timeout: Duration::from_millis(100),
            idle_timeout: Duration::from_millis(300),
            body_timeout: Duration::from_millis(200),
            max_connections: 1,
            ..ServerLimits::DEFAULT
        }
    }

    fn roughly(elapsed: Duration, expected: Duration) -> bool {
        elapsed >= expected && elapsed < expected + Duration::from_millis(80)
    }

    #[tokio::test]
    async fn a_new_connection_must_send_its_head_within_the_header_timeout() {
        let activity = Activity::new(limits());
        let mut phase = activity.subscribe();
        let started = Instant::now();
        expired(&mut phase).await;
        assert!(
            roughly(started.elapsed(), Duration::from_millis(100)),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn after_a_response_the_idle_timeout_applies_until_a_byte_arrives_then_the_header_timeout() {
        let activity = Activity::new(limits());
        let mut phase = activity.subscribe();
        drop(activity.start_request());
        let answered = Instant::now();
        tokio::time::sleep(Duration::from_millis(250)).await;
        activity.bytes_arrived();
        tokio::time::sleep(Duration::from_millis(50)).await;
        activity.bytes_arrived();
        expired(&mut phase).await;
        assert!(
            roughly(answered.elapsed(), Duration::from_millis(350)),
            "{:?}",
            answered.elapsed()
        );
    }

    #[tokio::test]
    async fn a_busy_connection_has_no_deadline_until_its_response_is_written() {
        let activity = Activity::new(limits());
        let mut phase = activity.subscribe();
        let request = activity.start_request();
        let watchdog = tokio::spawn(async move { expired(&mut phase).await });
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!watchdog.is_finished(), "no deadline while a request is served");
        drop(request);
        let answered = Instant::now();
        watchdog.await.unwrap();
        assert!(
            roughly(answered.elapsed(), Duration::from_millis(300)),
            "{:?}",
            answered.elapsed()
        );
    }
}
