//! `critic serve`: a [`Service`] behind HTTP/1.1 + JSON, on a Unix socket
//! and/or a loopback TCP port.
//!
//! * `GET /v1/health` → `{"status": "ok", "version": ...}`;
//! * `POST /v1/check` with a [`CheckRequest`] body
//!   (`schemas/check-request.schema.json`) → the verdict
//!   (`schemas/verdict.schema.json`); a bad request → 4xx, a host failure →
//!   5xx, both as `{"error": "..."}`.
//!
//! Who may ask: on the Unix socket (mode 0600), only processes of the
//! server's own user, checked again per connection by their credentials; on
//! TCP, which every local user can reach, only requests carrying the token
//! of `CRITIC_SERVER_TOKEN` (`Authorization: Bearer ...`), since a check runs
//! with the server's rights over the paths a request names.
//!
//! What a pinned server takes (`--pin-*`, see [`crate::frontend::pinned`]):
//! only requests of its one session; others get 403.
//!
//! Who else is refused: a peer of the socket that is not in the server's own
//! user and network namespaces (a confined run that found the socket, say),
//! whatever its uid.
//!
//! Limits: a short deadline for a request's headers, a body cap and a
//! deadline for reading it, a cap on connections and, over TCP, a small cap
//! per peer (the user owning the other end) on connections whose headers
//! have not all arrived, at most `concurrency` checks at once with at most
//! `queue` more waiting (more get 503 at once), and a per-check timeout
//! (504; the check itself runs to its end, holding its slot, since a thread
//! cannot be stopped safely). The 504 is a last resort: every check gets a
//! time limit (the request's, at most the check timeout less a margin, the
//! wait for a slot included), which stops its signals in time for the
//! answer to come first. Over TCP, an answer to a request without the
//! token closes its connection, so no one without it holds one open.
//! SIGTERM or SIGINT stops accepting, lets checks in flight finish (their
//! scratch copies are removed as they end) and removes the socket; a second
//! signal abandons them, killing their processes and removing their copies.

use crate::evaluate::error::Error;
use crate::evaluate::request::CheckRequest;
use crate::evaluate::state::StateError;
use crate::frontend::service::Service;
use crate::skill::BuildError;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::Listener;
use axum::{Json, Router};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;

/// The environment variable holding the token TCP clients must present.
pub const TOKEN_ENV: &str = "CRITIC_SERVER_TOKEN";

/// The shortest token accepted: a guessable one would let any local user in.
const MIN_TOKEN_LEN: usize = 16;

/// Connections open at once; more wait in the kernel's accept queue. Below
/// the usual limit of 1,024 open files, so the checks' own files and pipes
/// still have room.
const MAX_CONNECTIONS: usize = 512;

/// TCP connections one peer (one user) may hold whose request headers have
/// not all arrived: enough for a client's parallel checks, too few for one
/// user to keep the server from everyone else's.
const PENDING_PER_PEER: usize = 16;

/// Where and how `critic serve` listens.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// A Unix socket to create.
    pub socket: Option<PathBuf>,
    /// A loopback address to listen on.
    pub listen: Option<SocketAddr>,
    /// Largest request body, in bytes.
    pub max_body: usize,
    /// Time a client has to send a request's headers (and that an idle
    /// connection stays open).
    pub header_timeout: Duration,
    /// Time a client has to send its body.
    pub read_timeout: Duration,
    /// Longest a check may take before the client gets 504.
    pub check_timeout: Duration,
    /// Checks running at once.
    pub concurrency: usize,
    /// Checks waiting for a slot; more are refused with 503.
    pub queue: usize,
    /// The token TCP clients must present (required with `listen`).
    pub token: Option<String>,
    /// The one session this server judges, if it is pinned to one.
    pub pin: Option<crate::frontend::pinned::Pin>,
}

impl ServerConfig {
    /// Defaults for everything but where to listen.
    pub fn new(socket: Option<PathBuf>, listen: Option<SocketAddr>) -> ServerConfig {
        ServerConfig {
            socket,
            listen,
            max_body: 64 << 20,
            header_timeout: Duration::from_secs(2),
            read_timeout: Duration::from_secs(30),
            check_timeout: Duration::from_secs(600),
            concurrency: 2 * crate::sys::parallel::cores(),
            queue: 64,
            token: std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()),
            pin: None,
        }
    }
}

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Nothing to listen on.
    #[error("critic serve: give --socket PATH and/or --listen 127.0.0.1:PORT")]
    NoListener,
    /// A TCP address other clients could reach.
    #[error("--listen {0}: only loopback addresses (127.0.0.1, ::1) are allowed; a check runs with your rights over the paths a request names")]
    NotLoopback(SocketAddr),
    /// TCP without a token.
    #[error("--listen needs a token of at least {MIN_TOKEN_LEN} characters in {TOKEN_ENV}: every local user can reach a TCP port (or use --socket, which only you can reach)")]
    NoToken,
    /// The socket path is taken.
    #[error("{0}: a server is already answering there; stop it or pick another --socket")]
    SocketInUse(PathBuf),
    /// Binding or serving failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServeError {
    let what = what.into();
    move |source| ServeError::Io { what, source }
}

/// What every handler shares.
struct Shared {
    service: Arc<Service>,
    slots: Arc<Semaphore>,
    /// Checks admitted (running or waiting for a slot).
    admitted: Arc<Semaphore>,
    config: ServerConfig,
}

/// Serve `service` until SIGTERM or SIGINT; blocks the calling thread.
/// `ready` is called once every listener is bound.
pub fn serve(
    service: Service,
    config: ServerConfig,
    ready: impl FnOnce(),
) -> Result<(), ServeError> {
    if config.socket.is_none() && config.listen.is_none() {
        return Err(ServeError::NoListener);
    }
    if let Some(addr) = config.listen {
        if !addr.ip().is_loopback() {
            return Err(ServeError::NotLoopback(addr));
        }
        if config
            .token
            .as_ref()
            .is_none_or(|t| t.len() < MIN_TOKEN_LEN)
        {
            return Err(ServeError::NoToken);
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("critic-serve")
        .build()
        .map_err(io("cannot start the server's runtime"))?;
    runtime.block_on(run(service, config, ready))
}

async fn run(
    service: Service,
    config: ServerConfig,
    ready: impl FnOnce(),
) -> Result<(), ServeError> {
    let shared = Arc::new(Shared {
        service: Arc::new(service),
        slots: Arc::new(Semaphore::new(config.concurrency.max(1))),
        admitted: Arc::new(Semaphore::new(config.concurrency.max(1) + config.queue)),
        config: config.clone(),
    });
    let mut unix = match &config.socket {
        Some(path) => Some((bind_socket(path).await?, path.clone())),
        None => None,
    };
    let mut tcp = match config.listen {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(io(format!("--listen {addr}")))?,
        ),
        None => None,
    };
    // The socket's peers are this user (checked per connection); TCP's
    // could be anyone on the machine, so only TCP asks for the token.
    let local = router(shared.clone(), None);
    let remote = router(shared.clone(), shared.config.token.clone());
    let graceful = GracefulShutdown::new();
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let pending = Arc::new(Pending::default());
    let mut stop = Box::pin(shutdown_signal());
    ready();
    loop {
        let permit = tokio::select! {
            _ = &mut stop => break,
            permit = connections.clone().acquire_owned() => permit.expect("never closed"),
        };
        tokio::select! {
            _ = &mut stop => break,
            stream = accept(unix.as_mut().map(|(l, _)| l)) => {
                // Only this user's processes, and only those in this user
                // and network namespace: the socket's mode says the first,
                // the connection's credentials confirm it and the second.
                match local_peer(&stream) {
                    Ok(()) => spawn_connection(stream, &local, &graceful, &shared.config, permit, None, None),
                    Err(why) => tracing::warn!("refused a connection on the socket: {why}"),
                }
            }
            stream = accept(tcp.as_mut()) => {
                let peer = match (stream.local_addr(), stream.peer_addr()) {
                    (Ok(local), Ok(peer)) => crate::sys::peer::tcp_peer_uid(local, peer),
                    _ => None,
                };
                match pending.admit(peer) {
                    Some(slot) => spawn_connection(stream, &remote, &graceful, &shared.config, permit, Some(slot), shared.config.token.clone()),
                    None => tracing::warn!(
                        "refused a TCP connection: its user ({}) already has {PENDING_PER_PEER} connections waiting for their headers",
                        peer.map_or("unknown".into(), |u| u.to_string())
                    ),
                }
            }
        }
    }
    tracing::info!("shutting down: waiting for checks in flight");
    // New clients find nothing (and check in process) instead of waiting.
    if let Some((_, path)) = &unix {
        let _ = std::fs::remove_file(path);
    }
    drop((unix, tcp));
    // Connections end once their answers are out; checks whose clients
    // left (or got 504) still hold their slots until they end.
    let all_slots = u32::try_from(shared.config.concurrency.max(1)).unwrap_or(u32::MAX);
    let drained = async {
        graceful.shutdown().await;
        let _ = shared.slots.acquire_many(all_slots).await;
    };
    tokio::select! {
        _ = drained => {}
        _ = shutdown_signal() => {
            tracing::warn!("second signal: abandoning the checks in flight");
            crate::sys::interrupt::abandon();
        }
    }
    Ok(())
}

/// The next connection on `listener`, if there is one; never, if not.
/// axum's listeners retry failed accepts (out of file descriptors, a client
/// gone before it was accepted) after a pause, so accepting never stops.
async fn accept<L: Listener>(listener: Option<&mut L>) -> L::Io {
    match listener {
        Some(l) => l.accept().await.0,
        None => std::future::pending().await,
    }
}

/// Whether a connection on the socket may be served: its peer runs as this
/// user, in this user and network namespace.
fn local_peer(stream: &tokio::net::UnixStream) -> Result<(), String> {
    use std::os::fd::AsFd;
    let cred = stream
        .peer_cred()
        .map_err(|e| format!("cannot read its credentials: {e}"))?;
    if cred.uid() != rustix::process::geteuid().as_raw() {
        return Err("it runs as another user".into());
    }
    crate::sys::peer::same_namespaces(stream.as_fd(), cred.pid())
}

/// Serve one connection. `pending` is its place among its peer's
/// connections still sending headers, given up once they have arrived;
/// `token`, what its requests must carry for the connection to stay open.
fn spawn_connection<S>(
    stream: S,
    router: &Router,
    graceful: &GracefulShutdown,
    config: &ServerConfig,
    permit: tokio::sync::OwnedSemaphorePermit,
    pending: Option<PendingSlot>,
    token: Option<String>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout);
    let inner = TowerToHyperService::new(router.clone());
    let pending = std::sync::Mutex::new(pending);
    let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
        // The headers are in: the connection no longer counts as pending.
        pending.lock().map(|mut p| p.take()).ok();
        let close = token
            .as_deref()
            .is_some_and(|t| !carries_token(request.headers(), t));
        let answer = hyper::service::Service::call(&inner, request);
        async move {
            let mut response = answer.await?;
            if close {
                response.headers_mut().insert(
                    header::CONNECTION,
                    header::HeaderValue::from_static("close"),
                );
            }
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let connection = http.serve_connection(TokioIo::new(stream), service);
    let connection = graceful.watch(connection);
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!("connection ended: {e}");
        }
        drop(permit);
    });
}

/// TCP connections whose request headers have not all arrived, per peer
/// (the user owning the other end; `None` when it could not be told).
#[derive(Default)]
struct Pending {
    counts: std::sync::Mutex<std::collections::HashMap<Option<u32>, usize>>,
}

/// One connection's place in [`Pending`], given back when dropped.
struct PendingSlot {
    pending: Arc<Pending>,
    peer: Option<u32>,
}

impl Pending {
    /// A place for a new connection of `peer`, unless it holds
    /// [`PENDING_PER_PEER`] already.
    fn admit(self: &Arc<Self>, peer: Option<u32>) -> Option<PendingSlot> {
        let mut counts = self.counts.lock().ok()?;
        let count = counts.entry(peer).or_default();
        if *count >= PENDING_PER_PEER {
            return None;
        }
        *count += 1;
        Some(PendingSlot {
            pending: self.clone(),
            peer,
        })
    }
}

impl Drop for PendingSlot {
    fn drop(&mut self) {
        if let Ok(mut counts) = self.pending.counts.lock() {
            if let Some(count) = counts.get_mut(&self.peer) {
                *count -= 1;
                if *count == 0 {
                    counts.remove(&self.peer);
                }
            }
        }
    }
}

/// Bind the Unix socket at `path`, mode 0600; a socket file left by a dead
/// server is replaced, a live one is not.
async fn bind_socket(path: &Path) -> Result<tokio::net::UnixListener, ServeError> {
    use std::os::unix::fs::FileTypeExt;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(ServeError::Io {
                what: format!("--socket {}", path.display()),
                source: std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "exists and is not a socket; refusing to replace it",
                ),
            });
        }
        if tokio::net::UnixStream::connect(path).await.is_ok() {
            return Err(ServeError::SocketInUse(path.to_path_buf()));
        }
        std::fs::remove_file(path).map_err(io(format!("--socket {}", path.display())))?;
    }
    // Created with no permissions for others from the start: a chmod after
    // bind would leave a moment in which anyone could connect.
    let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o177));
    let bound = tokio::net::UnixListener::bind(path);
    rustix::process::umask(old);
    bound.map_err(io(format!("--socket {}", path.display())))
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// The routes, for one kind of listener: `token` is what its requests must
/// carry, if anything.
fn router(shared: Arc<Shared>, token: Option<String>) -> Router {
    let endpoint = Arc::new(Endpoint { shared, token });
    Router::new()
        .route("/v1/health", get(health))
        .route("/v1/check", post(check))
        .fallback(|| async {
            failure(
                StatusCode::NOT_FOUND,
                "no such endpoint; try GET /v1/health or POST /v1/check".into(),
            )
        })
        .with_state(endpoint)
}

/// What a handler sees: the server, and the token its listener requires.
struct Endpoint {
    shared: Arc<Shared>,
    token: Option<String>,
}

async fn health() -> Response {
    Json(serde_json::json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")})).into_response()
}

fn failure(status: StatusCode, error: String) -> Response {
    (status, Json(serde_json::json!({ "error": error }))).into_response()
}

async fn check(State(endpoint): State<Arc<Endpoint>>, request: Request) -> Response {
    let shared = &endpoint.shared;
    if let Some(token) = &endpoint.token {
        if !carries_token(request.headers(), token) {
            return failure(
                StatusCode::UNAUTHORIZED,
                format!("missing or wrong token: send `Authorization: Bearer ${TOKEN_ENV}`"),
            );
        }
    }
    // Admitted before the body is read: a full server holds no bodies.
    let Ok(admitted) = shared.admitted.clone().try_acquire_owned() else {
        return failure(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is busy: every check slot and queue place is taken; retry later".into(),
        );
    };
    let body = match read_body(request.into_body(), &shared.config).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let mut request: CheckRequest = {
        let de = &mut serde_json::Deserializer::from_slice(&body);
        match serde_path_to_error::deserialize(de) {
            Ok(r) => r,
            Err(e) => {
                let path = e.path().to_string();
                let at = if path == "." {
                    String::new()
                } else {
                    format!("{path}: ")
                };
                return failure(
                    StatusCode::BAD_REQUEST,
                    format!("request body: {at}{}", e.into_inner()),
                );
            }
        }
    };
    if let Err(e) = request
        .events_source()
        .and_then(|_| absolute_paths(&request))
    {
        return failure(StatusCode::BAD_REQUEST, e);
    }
    let pin = shared.config.pin.clone();
    // The events a pinned server copied, kept until its check has run.
    let copied = match &pin {
        Some(pin) => match pin.apply(&mut request) {
            Ok(copied) => Some(copied),
            Err(e) => return failure(StatusCode::FORBIDDEN, e),
        },
        None => None,
    };
    // The check answers before the client gives up, and before the server's
    // own timeout would answer 504 for it (its wait for the session's lock
    // included).
    let limit = server_time_limit(shared.config.check_timeout);
    let limit = request.time_limit.map_or(limit, |asked| asked.min(limit));
    let service = shared.service.clone();
    let slots = shared.slots.clone();
    let arrived = std::time::Instant::now();
    // The deadline covers the wait for a slot too.
    let running = async move {
        let slot = slots.acquire_owned().await.expect("never closed");
        tokio::task::spawn_blocking(move || {
            // ... and so does the check's time.
            request.time_limit = Some(limit.saturating_sub(arrived.elapsed()));
            let verdict = service.check(&request);
            if let (Some(pin), Ok(verdict)) = (&pin, &verdict) {
                pin.record(&request, verdict);
            }
            drop((slot, admitted, copied));
            verdict
        })
        .await
    };
    match tokio::time::timeout(shared.config.check_timeout, running).await {
        Err(_) => failure(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "the check took longer than {} s (its wait for a slot included); if it had started, it goes on in the server and its session stays locked until it ends",
                shared.config.check_timeout.as_secs()
            ),
        ),
        Ok(Err(e)) => failure(StatusCode::INTERNAL_SERVER_ERROR, format!("the check failed: {e}")),
        Ok(Ok(Ok(verdict))) => Json(verdict).into_response(),
        Ok(Ok(Err(e))) => failure(status_of(&e), e.to_string()),
    }
}

/// The time a check may take on a server whose checks answer 504 after
/// `check_timeout`: that less a margin for what follows the signals (a
/// tenth, from 1 s to 60 s, at most half).
pub fn server_time_limit(check_timeout: Duration) -> Duration {
    let margin = (check_timeout / 10)
        .clamp(Duration::from_secs(1), Duration::from_secs(60))
        .min(check_timeout / 2);
    check_timeout - margin
}

/// Every path of a request must be absolute: the server's working directory
/// is not its client's.
fn absolute_paths(request: &CheckRequest) -> Result<(), String> {
    let named = [
        ("skill", Some(&request.skill)),
        ("workspace", Some(&request.workspace)),
        ("events", request.events.as_ref()),
        ("patch", request.patch.as_ref()),
        ("state_dir", request.state_dir.as_ref()),
    ];
    for (field, path) in named {
        if let Some(path) = path.filter(|p| !p.is_absolute()) {
            return Err(format!(
                "{field}: {:?} is relative; give absolute paths (the server does not share your working directory)",
                path.display().to_string()
            ));
        }
    }
    Ok(())
}

/// The body, read within the deadline and the size cap.
async fn read_body(body: Body, config: &ServerConfig) -> Result<Bytes, Response> {
    let limited = http_body_util::Limited::new(body, config.max_body);
    match tokio::time::timeout(
        config.read_timeout,
        http_body_util::BodyExt::collect(limited),
    )
    .await
    {
        Err(_) => Err(failure(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the body did not arrive within {} s",
                config.read_timeout.as_secs()
            ),
        )),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(failure(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "request body larger than {} MiB; pass large event streams by path (`events`)",
                config.max_body >> 20
            ),
        )),
        Ok(Err(e)) => Err(failure(
            StatusCode::BAD_REQUEST,
            format!("request body: {e}"),
        )),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

/// Whether a request's headers carry `token` (`Authorization: Bearer ...`).
fn carries_token(headers: &header::HeaderMap, token: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| same_token(given, token))
}

/// Whether a token matches, in time independent of where they differ
/// (the length is not secret: the token is at least 16 characters).
fn same_token(given: &str, expected: &str) -> bool {
    use subtle::ConstantTimeEq;
    given.as_bytes().ct_eq(expected.as_bytes()).into()
}

/// The status an error of a check maps to: what the request named was bad
/// (4xx), the session is busy (409), or the host failed (5xx).
fn status_of(e: &Error) -> StatusCode {
    match e {
        Error::Request(_) => StatusCode::BAD_REQUEST,
        Error::Manifest(_)
        | Error::Events(_)
        | Error::Patch(_)
        | Error::Detector { .. }
        | Error::Build(BuildError::Usage(_))
        | Error::Usage(_) => StatusCode::UNPROCESSABLE_ENTITY,
        Error::State(StateError::Locked { .. }) => StatusCode::CONFLICT,
        Error::State(_)
        | Error::Artifacts(_)
        | Error::Build(BuildError::Internal(_))
        | Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_gets_its_time_less_a_margin_for_the_answer() {
        let s = Duration::from_secs;
        assert_eq!(server_time_limit(s(600)), s(540));
        assert_eq!(server_time_limit(s(3600)), s(3540));
        assert_eq!(server_time_limit(s(3)), s(2));
        assert_eq!(server_time_limit(s(1)), Duration::from_millis(500));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token("abcdefghijklmnop", "abcdefghijklmnop"));
        assert!(!same_token("abcdefghijklmnoq", "abcdefghijklmnop"));
        assert!(!same_token("abc", "abcdefghijklmnop"));
        assert!(!same_token("", "abcdefghijklmnop"));
    }

    #[test]
    fn tcp_needs_loopback_and_a_token() {
        let service = || Service::new(Default::default()).unwrap();
        let mut config = ServerConfig::new(None, Some("0.0.0.0:1".parse().unwrap()));
        config.token = Some("x".repeat(32));
        assert!(matches!(
            serve(service(), config.clone(), || ()),
            Err(ServeError::NotLoopback(_))
        ));
        config.listen = Some("127.0.0.1:1".parse().unwrap());
        config.token = Some("short".into());
        assert!(matches!(
            serve(service(), config, || ()),
            Err(ServeError::NoToken)
        ));
        let none = ServerConfig::new(None, None);
        assert!(matches!(
            serve(service(), none, || ()),
            Err(ServeError::NoListener)
        ));
    }
}
