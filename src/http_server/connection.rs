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
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

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
    let watchdog = activity.clone();
    let io = TokioIo::new(Watched {
        stream,
        activity: activity.clone(),
        replacement: Replacement::default(),
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
            () = expired(&watchdog) => {
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
///
/// Changing the phase only stores it: the watchdog is never woken for it
/// (that would cost a task wake-up and a timer reset for every request).
/// Instead it re-reads the phase whenever its timer fires, and never sleeps
/// past the earliest deadline a phase set meanwhile could have (see
/// [`expired`]).
#[derive(Clone)]
struct Activity {
    phase: Arc<Mutex<Phase>>,
    limits: ServerLimits,
}

impl Activity {
    /// A new connection, reading its first head from now.
    fn new(limits: ServerLimits) -> Self {
        let until = Instant::now() + limits.header_read_timeout;
        Self {
            phase: Arc::new(Mutex::new(Phase::Head { until })),
            limits,
        }
    }

    fn modify(&self, change: impl FnOnce(&mut Phase)) {
        // A phase is plain data, always whole: a poisoned lock still holds one.
        change(&mut self.phase.lock().unwrap_or_else(PoisonError::into_inner));
    }

    fn phase(&self) -> Phase {
        *self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes arrived: an idle connection starts reading a head.
    fn bytes_arrived(&self) {
        let header_read_timeout = self.limits.header_read_timeout;
        self.modify(|phase| {
            if let Phase::Idle { .. } = phase {
                *phase = Phase::Head {
                    until: Instant::now() + header_read_timeout,
                };
            }
        });
    }

    /// A request head was read; the connection is busy until the returned
    /// guard is dropped (with the response's body).
    fn start_request(&self) -> InFlight {
        self.modify(|phase| {
            *phase = match *phase {
                Phase::Busy { requests } => Phase::Busy { requests: requests + 1 },
                Phase::Idle { .. } | Phase::Head { .. } => Phase::Busy { requests: 1 },
            };
        });
        InFlight(self.clone())
    }

    /// The shortest deadline any phase gets, counted from when it is set.
    fn shortest_timeout(&self) -> Duration {
        self.limits.header_read_timeout.min(self.limits.idle_timeout)
    }
}

/// A request being served; dropping it (once its response is written)
/// makes the connection idle again.
pub(super) struct InFlight(Activity);

impl Drop for InFlight {
    fn drop(&mut self) {
        let until = Instant::now() + self.0.limits.idle_timeout;
        self.0.modify(|phase| {
            *phase = match *phase {
                Phase::Busy { requests } if requests > 1 => Phase::Busy { requests: requests - 1 },
                _ => Phase::Idle { until },
            };
        });
    }
}

/// Resolves once the phase's deadline passes without the phase changing.
///
/// Each sleep ends at the current phase's deadline or one shortest timeout
/// from now, whichever comes first: a phase set during the sleep has a
/// deadline at least one shortest timeout after it was set, so no deadline
/// is overslept, and a busy connection is looked at again that often.
async fn expired(activity: &Activity) {
    loop {
        let now = Instant::now();
        let until = match activity.phase() {
            Phase::Idle { until } | Phase::Head { until } if until <= now => return,
            Phase::Idle { until } | Phase::Head { until } => until,
            Phase::Busy { .. } => now + activity.shortest_timeout(),
        };
        tokio::time::sleep_until(until.min(now + activity.shortest_timeout())).await;
    }
}

/// A socket that tells its [`Activity`] when bytes arrive, and puts
/// Confluent's error JSON in place of the empty answers hyper gives itself
/// to heads it cannot read (see [`head::hyper_refusal`]).
struct Watched<S> {
    stream: S,
    activity: Activity,
    replacement: Replacement,
}

/// The answer written in place of hyper's own, and how much of it is out.
#[derive(Default)]
struct Replacement {
    bytes: Vec<u8>,
    written: usize,
}

impl<S: AsyncWrite + Unpin> Watched<S> {
    /// Whether `bytes` are hyper's own answer to a head it could not read:
    /// written while a head is being read (no request was handed to the
    /// router, which writes every other answer), in hyper's form.
    fn is_hyper_refusal(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        if !matches!(self.activity.phase(), Phase::Head { .. }) {
            return None;
        }
        head::hyper_refusal(bytes, &self.activity.limits)
    }

    /// Writes what is left of the replacement; ready once all of it is out.
    fn poll_replacement(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while self.replacement.written < self.replacement.bytes.len() {
            let rest = &self.replacement.bytes[self.replacement.written..];
            match Pin::new(&mut self.stream).poll_write(cx, rest) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(count)) => self.replacement.written += count,
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Takes `bytes` from hyper: passed on, or (hyper's own refusal)
    /// replaced, in which case all of them count as written.
    fn poll_write_bytes(&mut self, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<std::io::Result<usize>> {
        std::task::ready!(self.poll_replacement(cx))?;
        if let Some(replacement) = self.is_hyper_refusal(bytes) {
            self.replacement = Replacement {
                bytes: replacement,
                written: 0,
            };
            // The rest goes out on the next write, flush or shutdown.
            if let Poll::Ready(Err(error)) = self.poll_replacement(cx) {
                return Poll::Ready(Err(error));
            }
            return Poll::Ready(Ok(bytes.len()));
        }
        Pin::new(&mut self.stream).poll_write(cx, bytes)
    }
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
        self.poll_write_bytes(cx, bytes)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        std::task::ready!(self.poll_replacement(cx))?;
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        std::task::ready!(self.poll_replacement(cx))?;
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buffers: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        // hyper writes its own refusal as one buffer; anything else goes on as it came.
        if let Some(first) = buffers.iter().find(|buffer| !buffer.is_empty())
            && first.len() == buffers.iter().map(|buffer| buffer.len()).sum::<usize>()
        {
            return self.poll_write_bytes(cx, first);
        }
        std::task::ready!(self.poll_replacement(cx))?;
        Pin::new(&mut self.stream).poll_write_vectored(cx, buffers)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
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
        let started = Instant::now();
        expired(&activity).await;
        assert!(
            roughly(started.elapsed(), Duration::from_millis(100)),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn after_a_response_the_idle_timeout_applies_until_a_byte_arrives_then_the_header_timeout() {
        let activity = Activity::new(limits());
        drop(activity.start_request());
        let answered = Instant::now();
        tokio::time::sleep(Duration::from_millis(250)).await;
        activity.bytes_arrived();
        tokio::time::sleep(Duration::from_millis(50)).await;
        activity.bytes_arrived();
        expired(&activity).await;
        assert!(
            roughly(answered.elapsed(), Duration::from_millis(350)),
            "{:?}",
            answered.elapsed()
        );
    }

    #[tokio::test]
    async fn a_busy_connection_has_no_deadline_until_its_response_is_written() {
        let activity = Activity::new(limits());
        let request = activity.start_request();
        let watched = activity.clone();
        let watchdog = tokio::spawn(async move { expired(&watched).await });
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
