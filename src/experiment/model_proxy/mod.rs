//! The model proxy: how a run's agent reaches its model, through the runner.
//!
//! The agent is given a plain-HTTP base URL (a listener in its turn's own
//! network, or on the host's loopback when it runs unconfined) and a key
//! that is a token of its run, good for nothing else. Each request with the
//! token goes upstream with the real key (`model.api_key_env`, which never
//! enters the agent's environment) over TLS; a streamed answer comes back
//! chunk by chunk as the model sends it. The proxy
//!
//! - records every exchange in the run's `model.jsonl` (see [`exchange`]);
//! - counts the tokens the answers report, priced by the experiment's
//!   price, and refuses a call once the run's `budget.tokens` or
//!   `budget.cost` or the experiment's `budget.total_cost` is spent;
//! - knows what happened for the runner's classes: whether the model
//!   answered at all, whether it could be reached, whether a budget stopped
//!   the run;
//! - replays a recording instead of the model (see [`replay`]): answers
//!   from the old run, no upstream connection, and a request that departs
//!   from the recording ends the run (or, with `then_live`, goes upstream).

pub mod exchange;
pub mod replay;

use crate::experiment::file::resolved::Price;
use axum::body::Body;
use axum::http::{HeaderMap, Request, Response, StatusCode};
use exchange::{Exchange, Tokens};
use http_body_util::BodyExt;
use crate::sys::http_client::{client, error_text};
use hyper::body::Bytes;
use serde_json::{json, Value};
use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A run's recording of its model calls, in its directory.
pub const RECORD_FILE: &str = "model.jsonl";

/// The largest request body taken (a long agent session's context is a
/// few megabytes).
const MAX_REQUEST_BYTES: usize = 64 << 20;

/// The most of an answer kept in the recording; the agent gets all of it.
const MAX_RECORDED_BYTES: usize = 64 << 20;

/// The most of a hooked session's verdict log read to number a call's round.
const MAX_VERDICT_LOG_READ: u64 = 16 << 20;


/// Headers that belong to one connection, not to the exchange.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "host",
    "content-length",
];

/// Headers that carry the key, in any of the APIs' styles.
const KEY_HEADERS: [&str; 3] = ["authorization", "x-api-key", "api-key"];

/// Where live calls go.
#[derive(Clone)]
pub struct Upstream {
    /// `scheme://host[:port]` of the model's `base_url`.
    pub origin: String,
    /// The real key, when the experiment names one.
    pub key: Option<String>,
}

/// The key never shows in a log line or a panic message.
impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("origin", &self.origin)
            .field("key", &self.key.as_ref().map(|_| exchange::REDACTED))
            .finish()
    }
}

/// What the experiment may still spend, shared by its runs.
#[derive(Debug)]
pub struct Spending {
    /// `budget.total_cost`.
    pub cap: Option<f64>,
    /// USD spent so far (stored runs and this process's calls).
    pub spent: Mutex<f64>,
}

/// A run's proxy, as the runner sets it up.
#[derive(Debug)]
pub struct Settings {
    /// Where live calls go; `None`: only the recording answers.
    pub upstream: Option<Upstream>,
    /// The recording that answers first, when replaying.
    pub replay: Option<replay::Recording>,
    /// The run's `model.jsonl`.
    pub record: PathBuf,
    /// The model's price.
    pub price: Option<Price>,
    /// `budget.tokens`.
    pub max_tokens: Option<u64>,
    /// `budget.cost`.
    pub max_cost: Option<f64>,
    /// The experiment's spending.
    pub spending: Arc<Spending>,
    /// How requests are compared with a recording.
    pub normalizer: replay::Normalizer,
    /// A hooked session's verdict log (its lines: the finishes judged so far).
    pub verdict_log: Option<PathBuf>,
}

/// Why the proxy ended a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// A budget was spent; the call was refused (`agent_fail (budget)`).
    Budget(String),
    /// A replayed request matched nothing recorded (`replay_diverged`).
    Diverged(String),
}

/// What the proxy saw of a run, for its result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seen {
    /// Calls taken.
    pub calls: u32,
    /// Tokens the answers reported.
    pub tokens: Tokens,
    /// Their cost by the experiment's price, when it has one.
    pub cost: Option<f64>,
    /// Whether the model (or its recording) answered any call with success.
    pub answered: bool,
    /// The last failure to reach the model, when a call got none.
    pub unreachable: Option<String>,
    /// Why the proxy ended the run, when it did.
    pub stop: Option<Stop>,
}

#[derive(Debug)]
struct State {
    seen: Seen,
    round: u32,
    replay: Option<replay::Recording>,
}

/// One run's proxy: shared by its turns' listeners.
pub struct ModelProxy {
    token: String,
    settings: Settings,
    state: Mutex<State>,
    /// Set when the proxy ends the run; the turn's runner watches it.
    stop: Arc<AtomicBool>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// A new run token: 32 random bytes from the kernel, in hex.
fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(format!("critic-run-{}", hex::encode(bytes)))
}

/// The origin (`scheme://host[:port]`) and path of `base_url`.
pub fn split_base_url(base_url: &str) -> Result<(String, String), String> {
    let uri: axum::http::Uri = base_url.parse().map_err(|e| format!("{base_url:?}: {e}"))?;
    let scheme = uri.scheme_str().unwrap_or("");
    if scheme != "http" && scheme != "https" {
        return Err(format!("{base_url:?}: give an http:// or https:// URL"));
    }
    let authority = uri
        .authority()
        .ok_or_else(|| format!("{base_url:?}: no host"))?;
    let path = uri.path().trim_end_matches('/').to_string();
    Ok((format!("{scheme}://{authority}"), path))
}

/// The answer the proxy gives itself: an error both APIs' clients read
/// (`error.message`, and Anthropic's `type: error`).
fn own_answer(status: StatusCode, kind: &str, message: &str) -> (StatusCode, Value) {
    (
        status,
        json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}

fn respond(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("a valid response")
}

/// The key a request carries, in whichever header its API uses.
fn presented_key(headers: &HeaderMap) -> Option<(&'static str, String)> {
    KEY_HEADERS.iter().find_map(|name| {
        let value = headers.get(*name)?.to_str().ok()?;
        let key = match *name {
            "authorization" => value
                .strip_prefix("Bearer ")
                .or(value.strip_prefix("bearer "))?,
            _ => value,
        };
        Some((*name, key.trim().to_string()))
    })
}

/// Equal, in a time that does not depend on where they first differ.
fn same_secret(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// A request as the proxy handles it.
struct Call {
    method: axum::http::Method,
    path: String,
    headers: HeaderMap,
    body: Bytes,
    request: Value,
    started: Instant,
    at_ms: u64,
}

/// The token never shows in a log line or a panic message.
impl std::fmt::Debug for ModelProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelProxy")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl ModelProxy {
    /// A proxy for one run, with a token of its own.
    pub fn new(mut settings: Settings) -> std::io::Result<Arc<ModelProxy>> {
        // The recording moves into the state, where calls use it up.
        let replay = settings.replay.take();
        Ok(Arc::new(ModelProxy {
            token: new_token()?,
            state: Mutex::new(State {
                seen: Seen::default(),
                round: 1,
                replay,
            }),
            settings,
            stop: Arc::new(AtomicBool::new(false)),
        }))
    }

    /// The key the agent is given: good only at this proxy, for this run.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Set when the proxy has ended the run (see [`Seen::stop`]).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// The round the next calls belong to (a command agent's turn).
    pub fn set_round(&self, round: u32) {
        self.lock().round = round;
    }

    /// What the proxy has seen so far.
    pub fn seen(&self) -> Seen {
        self.lock().seen.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The round of a call now: set by the runner, or one past the
    /// finishes a hooked session's verdict log holds.
    fn round(&self, state: &State) -> u32 {
        match &self.settings.verdict_log {
            // Unconfined, the agent can reach the log: read with no link
            // followed, no FIFO waited on, and no more than a cap.
            Some(log) => {
                crate::sys::bounded_read::read_regular_file_nofollow(log, MAX_VERDICT_LOG_READ)
                    .map_or(1, |b| 1 + b.iter().filter(|c| **c == b'\n').count() as u32)
            }
            None => state.round,
        }
    }

    /// Serve `listener` (a turn's, or one on the host's loopback) until the
    /// returned handle is dropped.
    pub fn serve(self: &Arc<Self>, listener: std::net::TcpListener) -> std::io::Result<Serving> {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let rt = crate::sys::http_client::runtime();
        let _entered = rt.enter();
        // Each event of a stream goes out as it comes, not held for the
        // last one's acknowledgement (Nagle).
        let listener =
            axum::serve::ListenerExt::tap_io(tokio::net::TcpListener::from_std(listener)?, |tcp| {
                let _ = tcp.set_nodelay(true);
            });
        let proxy = self.clone();
        let app = axum::Router::new().fallback(move |req: Request<Body>| {
            let proxy = proxy.clone();
            async move { proxy.handle(req).await }
        });
        let task = rt.spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::debug!("model proxy at {addr}: {e}");
            }
        });
        Ok(Serving { task, addr })
    }

    /// Listen on the host's loopback (an unconfined agent's way in).
    pub fn serve_on_loopback(self: &Arc<Self>) -> std::io::Result<Serving> {
        self.serve(std::net::TcpListener::bind("127.0.0.1:0")?)
    }

    async fn handle(self: Arc<Self>, req: Request<Body>) -> Response<Body> {
        let (started, at_ms) = (Instant::now(), now_ms());
        let (parts, body) = req.into_parts();
        let body = match http_body_util::Limited::new(body, MAX_REQUEST_BYTES)
            .collect()
            .await
        {
            Ok(b) => b.to_bytes(),
            Err(e) => {
                let (status, body) = own_answer(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "request_too_large",
                    &format!("critic's model proxy: the request could not be read ({e}); at most {MAX_REQUEST_BYTES} bytes"),
                );
                return respond(status, &body);
            }
        };
        let call = Call {
            method: parts.method.clone(),
            path: parts
                .uri
                .path_and_query()
                .map_or("/".to_string(), |p| p.to_string()),
            request: exchange::body_value(&body),
            headers: parts.headers,
            body,
            started,
            at_ms,
        };
        match self.decide(&call) {
            Decision::Answer(exchange) => {
                let response = replayed_response(&exchange);
                self.finish(*exchange);
                response
            }
            Decision::Live(n, round, digest) => self.clone().forward(call, n, round, digest).await,
        }
    }

    /// What to do with `call`: answer it here (refused, or from the
    /// recording) or take it upstream as call `n` of `round`.
    fn decide(&self, call: &Call) -> Decision {
        let mut state = self.lock();
        let round = self.round(&state);
        let digest = self
            .settings
            .normalizer
            .digest(call.method.as_str(), &call.path, &call.request);
        let refuse = |state: &mut State, status, kind: &str, message: String| {
            state.seen.calls += 1;
            let (status, body) = own_answer(status, kind, &message);
            Decision::Answer(Box::new(self.exchange(
                call,
                state.seen.calls,
                round,
                &digest,
                status,
                body,
                Some(message),
            )))
        };
        match presented_key(&call.headers) {
            Some((_, key)) if same_secret(&key, &self.token) => {}
            _ => {
                return refuse(
                    &mut state,
                    StatusCode::UNAUTHORIZED,
                    "authentication_error",
                    "critic's model proxy: the request does not carry this run's key".into(),
                )
            }
        }
        if let Some(why) = self.over_budget(&state.seen) {
            state.seen.stop.get_or_insert(Stop::Budget(why.clone()));
            self.stop.store(true, Ordering::SeqCst);
            return refuse(
                &mut state,
                StatusCode::BAD_REQUEST,
                "budget_exceeded",
                format!("critic: {why}; no more model calls in this run"),
            );
        }
        let then_live = self.settings.upstream.is_some();
        if let Some(recording) = state.replay.as_mut() {
            match recording.answer(
                &self.settings.normalizer,
                call.method.as_str(),
                &call.path,
                &call.request,
            ) {
                replay::Answer::Recorded(recorded) => {
                    state.seen.calls += 1;
                    let mut e = *recorded;
                    e.call = state.seen.calls;
                    e.round = round;
                    e.at_ms = call.at_ms;
                    e.source = "replayed".into();
                    e.first_byte_ms = ms(call.started.elapsed());
                    e.total_ms = e.first_byte_ms;
                    return Decision::Answer(Box::new(e));
                }
                replay::Answer::Diverged(why) if then_live => {
                    tracing::info!(
                        "call {} departs from the recording ({why}): live from here",
                        state.seen.calls + 1
                    );
                    // Past the first departure, the recording answers nothing.
                    state.replay = None;
                }
                replay::Answer::Diverged(why) => {
                    let message = format!("round {round}, call {}: {why}", state.seen.calls + 1);
                    state
                        .seen
                        .stop
                        .get_or_insert(Stop::Diverged(message.clone()));
                    self.stop.store(true, Ordering::SeqCst);
                    return refuse(
                        &mut state,
                        StatusCode::BAD_REQUEST,
                        "replay_diverged",
                        format!("critic: the replay diverged: {message}"),
                    );
                }
            }
        }
        if self.settings.upstream.is_none() {
            return refuse(
                &mut state,
                StatusCode::BAD_GATEWAY,
                "no_model",
                "critic: this run has no model to reach (a replay with nothing live)".into(),
            );
        }
        state.seen.calls += 1;
        Decision::Live(state.seen.calls, round, digest)
    }

    /// Which budget is spent, if any.
    fn over_budget(&self, seen: &Seen) -> Option<String> {
        let s = &self.settings;
        if let Some(max) = s.max_tokens.filter(|m| seen.tokens.total() >= *m) {
            return Some(format!(
                "{} tokens used, budget.tokens is {max}",
                seen.tokens.total()
            ));
        }
        if let (Some(max), Some(cost)) = (s.max_cost, seen.cost) {
            if cost >= max {
                return Some(format!("${cost:.4} spent, budget.cost is ${max}"));
            }
        }
        let total = *s.spending.spent.lock().unwrap_or_else(|p| p.into_inner());
        s.spending
            .cap
            .filter(|cap| total >= *cap)
            .map(|cap| format!("the experiment has spent ${total:.4}, budget.total_cost is ${cap}"))
    }

    #[allow(clippy::too_many_arguments)]
    fn exchange(
        &self,
        call: &Call,
        n: u32,
        round: u32,
        digest: &str,
        status: StatusCode,
        response: Value,
        refused: Option<String>,
    ) -> Exchange {
        let mut request = call.request.clone();
        exchange::redact(&mut request, &self.secrets());
        Exchange {
            call: n,
            round,
            at_ms: call.at_ms,
            method: call.method.to_string(),
            path: call.path.clone(),
            request_headers: exchange::headers_value(
                call.headers.iter().map(|(k, v)| (k.as_str(), v.as_bytes())),
            ),
            request,
            digest: digest.to_string(),
            status: Some(status.as_u16()),
            content_type: Some("application/json".into()),
            response,
            raw: None,
            stream: false,
            usage: Tokens::default(),
            first_byte_ms: ms(call.started.elapsed()),
            total_ms: ms(call.started.elapsed()),
            refused,
            error: None,
            source: "proxy".into(),
        }
    }

    fn secrets(&self) -> Vec<&str> {
        let mut s = vec![self.token.as_str()];
        if let Some(key) = self
            .settings
            .upstream
            .as_ref()
            .and_then(|u| u.key.as_deref())
        {
            s.push(key);
        }
        s
    }

    /// Count and record a finished exchange.
    fn finish(&self, mut e: Exchange) {
        exchange::redact(&mut e.response, &self.secrets());
        if let Some(raw) = e.raw.as_mut() {
            for secret in self.secrets() {
                if raw.contains(secret) {
                    *raw = raw.replace(secret, exchange::REDACTED);
                }
            }
        }
        {
            let mut state = self.lock();
            let seen = &mut state.seen;
            if e.refused.is_none() {
                seen.tokens.add(e.usage);
                if let Some(p) = self.settings.price {
                    let cost = (e.usage.input as f64 * p.input_per_mtok
                        + e.usage.output as f64 * p.output_per_mtok)
                        / 1e6;
                    *seen.cost.get_or_insert(0.0) += cost;
                    if e.source == "live" {
                        *self
                            .settings
                            .spending
                            .spent
                            .lock()
                            .unwrap_or_else(|p| p.into_inner()) += cost;
                    }
                }
                match (e.status, &e.error) {
                    (Some(s), _) if (200..300).contains(&s) => seen.answered = true,
                    (None, Some(err)) => seen.unreachable = Some(err.clone()),
                    _ => {}
                }
            }
        }
        if let Err(err) = exchange::append_to(&self.settings.record, &e) {
            tracing::warn!(
                "{}: cannot record a model call: {err}",
                self.settings.record.display()
            );
        }
    }

    /// Take `call` upstream and stream the answer back.
    async fn forward(
        self: Arc<Self>,
        call: Call,
        n: u32,
        round: u32,
        digest: String,
    ) -> Response<Body> {
        let upstream = self
            .settings
            .upstream
            .clone()
            .expect("decide sends only a live call here");
        let (head_tx, head_rx) = tokio::sync::oneshot::channel();
        let (mut body_tx, body) =
            http_body_util::channel::Channel::<Bytes, std::convert::Infallible>::new(8);
        let proxy = self.clone();
        // The exchange is a task of its own, not part of this answer's
        // future: an agent that hangs up before the model answers still
        // leaves its call recorded and counted.
        tokio::spawn(async move {
            let response = match upstream_request(&call, &upstream).send().await {
                Ok(r) => r,
                Err(err) => {
                    let message = format!(
                        "critic's model proxy: {} did not answer: {}",
                        upstream.origin,
                        error_text(err)
                    );
                    let error = message.clone();
                    let _ = tokio::task::spawn_blocking(move || {
                        let mut e = proxy.live_exchange(&call, n, round, &digest);
                        e.error = Some(error);
                        e.first_byte_ms = ms(call.started.elapsed());
                        e.total_ms = e.first_byte_ms;
                        proxy.finish(e);
                    })
                    .await;
                    let _ = head_tx.send(Err(message));
                    return;
                }
            };
            let status = response.status();
            let headers: Vec<_> = response
                .headers()
                .iter()
                .filter(|(k, _)| !HOP_BY_HOP.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let content_type = response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let stream = content_type
                .as_deref()
                .is_some_and(|c| c.starts_with("text/event-stream"));
            let _ = head_tx.send(Ok((status, headers)));
            let mut response = response;
            let mut kept: Vec<u8> = Vec::new();
            let mut first_byte_ms = None;
            let mut error = None;
            loop {
                match response.chunk().await {
                    Ok(None) => break,
                    Ok(Some(chunk)) => {
                        first_byte_ms.get_or_insert_with(|| ms(call.started.elapsed()));
                        if kept.len() < MAX_RECORDED_BYTES {
                            kept.extend_from_slice(&chunk);
                        }
                        if body_tx.send_data(chunk).await.is_err() {
                            error = Some(
                                "the agent closed the connection before the answer ended".into(),
                            );
                            break;
                        }
                    }
                    Err(err) => {
                        error = Some(format!("the answer broke off: {}", error_text(err)));
                        break;
                    }
                }
            }
            let total_ms = ms(call.started.elapsed());
            // Redacting and appending a recording of up to 64 MiB is work
            // for a blocking thread, not the runtime's.
            let _ = tokio::task::spawn_blocking(move || {
                let mut e = proxy.live_exchange(&call, n, round, &digest);
                e.status = Some(status.as_u16());
                e.content_type = content_type;
                e.stream = stream;
                e.error = error;
                e.total_ms = total_ms;
                e.first_byte_ms = first_byte_ms.unwrap_or(total_ms);
                if stream {
                    let raw = String::from_utf8_lossy(&kept).into_owned();
                    e.response = exchange::assemble(&raw);
                    e.raw = Some(raw);
                } else {
                    e.response = exchange::body_value(&kept);
                }
                e.usage = exchange::usage_of(&e.response);
                proxy.finish(e);
            })
            .await;
            // The answer ends (chunked: its length is never passed on) only
            // once it is recorded and counted, so an agent that exits on
            // its last byte leaves no call unrecorded.
            drop(body_tx);
        });
        let bad_gateway =
            |message: &str| respond(StatusCode::BAD_GATEWAY, &own_answer(StatusCode::BAD_GATEWAY, "api_error", message).1);
        match head_rx.await {
            Ok(Ok((status, headers))) => {
                let mut answer = Response::builder().status(status.as_u16());
                for (k, v) in headers {
                    answer = answer.header(k, v);
                }
                answer
                    .body(Body::new(body))
                    .unwrap_or_else(|e| bad_gateway(&e.to_string()))
            }
            Ok(Err(message)) => bad_gateway(&message),
            Err(_) => bad_gateway("critic's model proxy failed"),
        }
    }

    /// The record of a live call, before its answer is known.
    fn live_exchange(&self, call: &Call, n: u32, round: u32, digest: &str) -> Exchange {
        let mut e = self.exchange(call, n, round, digest, StatusCode::OK, Value::Null, None);
        e.source = "live".into();
        e.status = None;
        e.content_type = None;
        e
    }
}

/// What [`ModelProxy::decide`] says.
enum Decision {
    /// Answered by the proxy (refused, or replayed).
    Answer(Box<Exchange>),
    /// Live, as call `.0` of round `.1`, with digest `.2`.
    Live(u32, u32, String),
}

/// A recorded (or refused) exchange as the answer the agent gets.
fn replayed_response(e: &Exchange) -> Response<Body> {
    let body = match (&e.raw, &e.response) {
        (Some(raw), _) => raw.clone(),
        (None, Value::String(s)) => s.clone(),
        (None, v) => v.to_string(),
    };
    Response::builder()
        .status(e.status.unwrap_or(502))
        .header(
            "content-type",
            e.content_type.as_deref().unwrap_or("application/json"),
        )
        .body(Body::from(body))
        .expect("a valid response")
}

/// `call` as the request upstream: the same method, path, headers and
/// body, with the real key where the agent put its token.
fn upstream_request(call: &Call, upstream: &Upstream) -> reqwest::RequestBuilder {
    let mut request = client().request(call.method.clone(), format!("{}{}", upstream.origin, call.path));
    let style = presented_key(&call.headers).map(|(name, _)| name);
    for (name, value) in &call.headers {
        let name = name.as_str();
        if HOP_BY_HOP.contains(&name) || KEY_HEADERS.contains(&name) || name == "accept-encoding" {
            continue;
        }
        request = request.header(name, value.clone());
    }
    // Answers as they are, so that the recording reads them.
    request = request.header("accept-encoding", "identity");
    if let Some(key) = &upstream.key {
        request = match style {
            Some("x-api-key") => request.header("x-api-key", key),
            Some("api-key") => request.header("api-key", key),
            _ => request.header("authorization", format!("Bearer {key}")),
        };
    }
    request.body(call.body.clone())
}

/// A proxy's listener being served; dropping it stops accepting.
pub struct Serving {
    task: tokio::task::JoinHandle<()>,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests;
