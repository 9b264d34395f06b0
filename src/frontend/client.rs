//! A client of `critic serve` (`critic check --server`, hooks): sends a
//! [`CheckRequest`] and reads back the verdict.
//!
//! The address is a Unix socket path (`/run/user/1000/critic.sock`,
//! `unix:critic.sock`) or `http://127.0.0.1:PORT`; over TCP the token of
//! `CRITIC_SERVER_TOKEN` goes with the request.

use crate::evaluate::request::CheckRequest;
use crate::evaluate::verdict::Verdict;
use crate::frontend::server::TOKEN_ENV;
use http_body_util::BodyExt;
use hyper::body::Bytes;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable naming a server for `critic check` to use.
pub const SERVER_ENV: &str = "CRITIC_SERVER";

/// How long to wait for a server to accept before checking in process.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long to wait for the server's first answer to a request's headers
/// (`100 Continue`, or a refusal) before checking in process. The body
/// goes only after it, so a server that has not answered by then has not
/// started the check and cannot count it: a server stalled by other
/// clients costs a hook this much, not minutes.
const FIRST_ANSWER_TIMEOUT: Duration = Duration::from_secs(3);

/// How long to wait for the answer once the request is sent: a little over
/// the server's default check timeout, after which it answers 504 itself.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(660);

/// The most [`answer_slack`] gives.
const MAX_SLACK: Duration = Duration::from_secs(5);

/// How long past a request's `time_limit` to wait for its answer: the
/// server stops the check's signals when the time is up, and what follows
/// them (state, the answer) takes a moment. A tenth of the limit, from 1 s
/// to 5 s: a hook's own margin must leave room for a check in process after.
fn answer_slack(limit: Duration) -> Duration {
    (limit / 10).clamp(Duration::from_secs(1), MAX_SLACK)
}

/// The longest [`check`] waits beyond a request's `time_limit`: for the
/// connection, the first answer and the slack. A caller with a deadline of
/// its own gives the server that much less.
pub const WAIT_BEYOND_LIMIT: Duration = Duration::from_secs(
    CONNECT_TIMEOUT.as_secs() + FIRST_ANSWER_TIMEOUT.as_secs() + MAX_SLACK.as_secs(),
);

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerAddress {
    /// A Unix socket.
    Socket(PathBuf),
    /// A loopback TCP address.
    Tcp(SocketAddr),
}

impl std::str::FromStr for ServerAddress {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(rest) = s.strip_prefix("http://") {
            let host = rest.trim_end_matches('/');
            return host.parse().map(ServerAddress::Tcp).map_err(|_| {
                format!("{s:?}: expected http://IP:PORT (e.g. http://127.0.0.1:7878)")
            });
        }
        if s.contains("://") {
            return Err(format!(
                "{s:?}: a server is a Unix socket path or http://IP:PORT"
            ));
        }
        let path = s.strip_prefix("unix:").unwrap_or(s);
        if path.is_empty() {
            return Err("empty server address".into());
        }
        Ok(ServerAddress::Socket(PathBuf::from(path)))
    }
}

impl std::fmt::Display for ServerAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerAddress::Socket(p) => write!(f, "{}", p.display()),
            ServerAddress::Tcp(a) => write!(f, "http://{a}"),
        }
    }
}

/// Why a server did not give a verdict.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No server took the request (none running, connection refused, no
    /// answer to connect): nothing was counted, and the caller may check in
    /// process instead.
    #[error("{0}")]
    NoServer(String),
    /// The server took the request and then failed or refused it, or the
    /// exchange broke midway. It may have counted the finish, so checking in
    /// process as well could count it twice: the caller reports this instead.
    #[error("{0}")]
    Failed(String),
    /// The server took the request but did not judge it: it gave up on the
    /// check (504), found the session held by another check (409), or did
    /// not answer within the request's time. A check of the session may
    /// still be running there and may count the finish; a caller that
    /// must have a verdict (a hook) checks in process, which waits for that
    /// check's lock and may count the finish a second time.
    #[error("{0}")]
    Unfinished(String),
}

/// Ask the server at `address` to judge `request`. Relative paths of the
/// request are made absolute first: the server does not share our
/// directory.
pub fn check(address: &ServerAddress, request: &CheckRequest) -> Result<Verdict, ClientError> {
    let mut request = request.clone();
    for path in [&mut request.skill, &mut request.workspace]
        .into_iter()
        .chain(request.events.as_mut())
        .chain(request.patch.as_mut())
        .chain(request.state_dir.as_mut())
    {
        *path = absolute(path);
    }
    let body = serde_json::to_vec(&request)
        .map_err(|e| ClientError::Failed(format!("cannot encode the request: {e}")))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ClientError::NoServer(format!("cannot start a client runtime: {e}")))?;
    let answer_timeout = request.time_limit.map_or(ANSWER_TIMEOUT, |limit| {
        (limit + answer_slack(limit)).min(ANSWER_TIMEOUT)
    });
    let (status, answer) = runtime.block_on(post(address, "/v1/check", body, answer_timeout))?;
    let text = String::from_utf8_lossy(&answer);
    if status.is_success() {
        return serde_json::from_slice(&answer).map_err(|e| {
            ClientError::Failed(format!("{address}: unreadable verdict ({e}): {text}"))
        });
    }
    let message = serde_json::from_slice::<serde_json::Value>(&answer)
        .ok()
        .and_then(|v| v.get("error")?.as_str().map(str::to_string))
        .unwrap_or_else(|| text.into_owned());
    let message = format!("{address}: {status}: {message}");
    match status {
        // A full queue is refused before the check is admitted: nothing counted.
        hyper::StatusCode::SERVICE_UNAVAILABLE => Err(ClientError::NoServer(message)),
        hyper::StatusCode::GATEWAY_TIMEOUT | hyper::StatusCode::CONFLICT => {
            Err(ClientError::Unfinished(message))
        }
        _ => Err(ClientError::Failed(message)),
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// POST `body` to `path`, waiting `answer_timeout` for the answer once it
/// is sent.
async fn post(
    address: &ServerAddress,
    path: &str,
    body: Vec<u8>,
    answer_timeout: Duration,
) -> Result<(hyper::StatusCode, Bytes), ClientError> {
    let no_server = |e: &dyn std::fmt::Display| ClientError::NoServer(format!("{address}: {e}"));
    let failed = |e: &dyn std::fmt::Display| ClientError::Failed(format!("{address}: {e}"));
    let mut request = hyper::Request::post(path)
        .header(hyper::header::HOST, "localhost")
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::CONTENT_LENGTH, body.len())
        .header(hyper::header::EXPECT, "100-continue");
    if let ServerAddress::Tcp(_) = address {
        if let Ok(token) = std::env::var(TOKEN_ENV) {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
        }
    }
    // The body waits for the server's `100 Continue`.
    let (mut sender, waiting_body) = http_body_util::channel::Channel::<Bytes>::new(1);
    let mut request = request.body(waiting_body).map_err(|e| failed(&e))?;
    let (go, mut continued) = tokio::sync::oneshot::channel::<()>();
    let go = std::sync::Mutex::new(Some(go));
    hyper::ext::on_informational(&mut request, move |response| {
        if response.status() == hyper::StatusCode::CONTINUE {
            if let Some(go) = go.lock().ok().and_then(|mut g| g.take()) {
                let _ = go.send(());
            }
        }
    });
    let connect = async {
        match address {
            ServerAddress::Socket(p) => {
                let stream = tokio::net::UnixStream::connect(p).await?;
                // A socket another user put there could forge verdicts.
                let me = rustix::process::geteuid().as_raw();
                if stream.peer_cred()?.uid() != me {
                    return Err(std::io::Error::other(
                        "the server on this socket runs as another user; not trusting it",
                    ));
                }
                Ok::<_, std::io::Error>(Stream::Unix(stream))
            }
            ServerAddress::Tcp(a) => Ok(Stream::Tcp(tokio::net::TcpStream::connect(a).await?)),
        }
    };
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, connect)
        .await
        .map_err(|_| no_server(&"no answer to connect"))?
        .map_err(|e| no_server(&e))?;
    let response = async {
        match stream {
            Stream::Unix(s) => send(s, request).await,
            Stream::Tcp(s) => send(s, request).await,
        }
    };
    tokio::pin!(response);
    // Until the server answers the headers, nothing is sent that it could
    // count: giving up then and checking in process is safe.
    let first = tokio::time::timeout(FIRST_ANSWER_TIMEOUT, async {
        tokio::select! {
            answered = &mut response => Some(answered),
            // A sender dropped unsent (the connection closed) is no
            // `100 Continue`: the response then says what happened.
            Ok(()) = &mut continued => None,
        }
    })
    .await
    .map_err(|_| {
        no_server(&format!(
            "no answer to the request within {} s (a busy or stalled server)",
            FIRST_ANSWER_TIMEOUT.as_secs()
        ))
    })?;
    let exchange = async {
        let response = match first {
            // Refused before the body (401, 503...): nothing was read.
            Some(Ok(answered)) => answered,
            // Closed before any answer (a server refusing the connection):
            // nothing was sent that it could have counted either.
            Some(Err(e)) => {
                return Err(no_server(&format!(
                    "the connection ended before an answer ({e})"
                )))
            }
            None => {
                sender
                    .send_data(Bytes::from(body))
                    .await
                    .map_err(|_| failed(&"the connection closed while sending the request"))?;
                drop(sender);
                response.await.map_err(|e| failed(&e))?
            }
        };
        let status = response.status();
        let answer = response
            .into_body()
            .collect()
            .await
            .map_err(|e| failed(&e))?
            .to_bytes();
        Ok((status, answer))
    };
    tokio::time::timeout(answer_timeout, exchange)
        .await
        .map_err(|_| {
            ClientError::Unfinished(format!(
                "{address}: no answer within {:.0} s",
                answer_timeout.as_secs_f64()
            ))
        })?
}

enum Stream {
    Unix(tokio::net::UnixStream),
    Tcp(tokio::net::TcpStream),
}

async fn send<S>(
    stream: S,
    request: hyper::Request<http_body_util::channel::Channel<Bytes>>,
) -> Result<hyper::Response<hyper::body::Incoming>, hyper::Error>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    sender.send_request(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        let socket = |p: &str| ServerAddress::Socket(PathBuf::from(p));
        assert_eq!("/tmp/c.sock".parse(), Ok(socket("/tmp/c.sock")));
        assert_eq!("unix:c.sock".parse(), Ok(socket("c.sock")));
        assert_eq!(
            "http://127.0.0.1:7878/".parse(),
            Ok(ServerAddress::Tcp("127.0.0.1:7878".parse().unwrap()))
        );
        assert!("http://localhost:7878".parse::<ServerAddress>().is_err());
        assert!("https://127.0.0.1:1".parse::<ServerAddress>().is_err());
        assert!("".parse::<ServerAddress>().is_err());
    }

    #[test]
    fn nobody_listening_means_no_server() {
        let dir = tempfile::tempdir().unwrap();
        let address = ServerAddress::Socket(dir.path().join("none.sock"));
        let request = CheckRequest::new("skill", "events");
        assert!(matches!(
            check(&address, &request),
            Err(ClientError::NoServer(_))
        ));
    }
}
