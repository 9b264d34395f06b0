//! Capability `llm-complete`: chat completions from an OpenAI-compatible
//! endpoint the *user* configures on the host (base URL, model, the name of
//! the environment variable holding the key). Detectors send messages only;
//! the key never crosses into the guest.
//!
//! Requests of one call run in parallel, at most `concurrency` at a time, each
//! with a timeout and retries with exponential backoff on connection errors,
//! 429 and 5xx; none of it goes past the calling detector's deadline, since
//! a detector cannot be stopped while it waits in the host. With a cache directory, every answer is recorded under a key
//! derived from the request (endpoint, model, messages, options, sample
//! number) and replayed on the next identical request, so an experiment can
//! be re-run exactly, offline.

use critic_sdk::{LlmRequest, LlmResult};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use crate::sys::http_client::{error_text, wait};
use std::time::{Duration, Instant};

/// Where and how to reach the model.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmConfig {
    /// Base URL, up to and including `/v1` (`.../chat/completions` is appended).
    pub base_url: String,
    /// Model name sent with every request.
    pub model: String,
    /// Environment variable holding the API key (none sent when unset).
    pub api_key_env: String,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Attempts per request (1 = no retry).
    pub attempts: u32,
    /// First backoff delay; doubles per retry.
    pub backoff: Duration,
    /// Record/replay directory.
    pub cache_dir: Option<PathBuf>,
}

impl LlmConfig {
    /// A configuration with the defaults for everything but the endpoint.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> LlmConfig {
        LlmConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: "OPENAI_API_KEY".into(),
            timeout: Duration::from_secs(120),
            concurrency: 8,
            attempts: 3,
            backoff: Duration::from_millis(500),
            cache_dir: None,
        }
    }
}

/// The client one check uses.
#[derive(Debug)]
pub struct LlmClient {
    config: Option<LlmConfig>,
}

impl LlmClient {
    /// A client for `config`; `None` when the user configured no model (every
    /// call then fails with a message saying how to configure one).
    pub fn new(config: Option<LlmConfig>) -> LlmClient {
        LlmClient { config }
    }

    /// Capability `llm-complete`: a JSON array of `LlmRequest`s in, a JSON
    /// array of `LlmResult`s out, by `deadline`.
    pub fn complete_json(&self, requests: &str, deadline: Instant) -> Result<String, String> {
        let requests: Vec<LlmRequest> = serde_json::from_str(requests)
            .map_err(|e| format!("invalid llm-complete request: {e}"))?;
        let results = self.complete(&requests, deadline)?;
        serde_json::to_string(&results).map_err(|e| e.to_string())
    }

    /// Complete every request, in parallel; results in request order. No
    /// request, retry or pause between them goes past `deadline`: what is
    /// not done by then is an error result.
    pub fn complete(
        &self,
        requests: &[LlmRequest],
        deadline: Instant,
    ) -> Result<Vec<LlmResult>, String> {
        let Some(config) = &self.config else {
            return Err(
                "no model is configured for llm-complete; pass --llm-base-url and --llm-model \
                        (or set CRITIC_LLM_BASE_URL and CRITIC_LLM_MODEL)"
                    .into(),
            );
        };
        let key = std::env::var(&config.api_key_env).ok();
        Ok(crate::sys::parallel::map(
            requests.len(),
            config.concurrency,
            |i| one(config, key.as_deref(), &requests[i], deadline),
        ))
    }
}

/// The request body sent to the endpoint (`sample` is ours, not the API's).
fn body(config: &LlmConfig, request: &LlmRequest) -> Value {
    let mut body = json!({
        "model": config.model,
        "messages": request.messages,
    });
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(m) = request.max_tokens {
        body["max_tokens"] = json!(m);
    }
    body
}

fn cache_key(config: &LlmConfig, request: &LlmRequest) -> String {
    let mut h = Sha256::new();
    let identity = json!({
        "base_url": config.base_url,
        "body": body(config, request),
        "sample": request.sample,
    });
    h.update(identity.to_string().as_bytes());
    hex::encode(&h.finalize()[..16])
}

fn one(
    config: &LlmConfig,
    key: Option<&str>,
    request: &LlmRequest,
    deadline: Instant,
) -> LlmResult {
    let cached = config
        .cache_dir
        .as_ref()
        .map(|d| d.join(format!("{}.json", cache_key(config, request))));
    if let Some(text) = cached
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
    {
        if let Some(content) = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["content"].as_str().map(str::to_string))
        {
            return LlmResult {
                content: Some(content),
                error: None,
                cached: true,
            };
        }
    }
    let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
    let payload = body(config, request).to_string();
    let mut delay = config.backoff;
    let mut last_error = String::new();
    for attempt in 1..=config.attempts.max(1) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            last_error = format!("{url}: no time left for the request (the detector's deadline)");
            break;
        }
        match post(&url, key, &payload, left.min(config.timeout)) {
            Ok(content) => {
                if let Some(path) = &cached {
                    record(path, request, &content);
                }
                return LlmResult {
                    content: Some(content),
                    error: None,
                    cached: false,
                };
            }
            Err((message, retryable)) => {
                last_error = message;
                if !retryable || attempt == config.attempts {
                    break;
                }
                std::thread::sleep(delay.min(deadline.saturating_duration_since(Instant::now())));
                delay *= 2;
            }
        }
    }
    LlmResult {
        content: None,
        error: Some(last_error),
        cached: false,
    }
}

/// The largest answer read: a chat completion is kilobytes.
const MAX_ANSWER_BYTES: usize = 10 << 20;

/// Why a POST got no whole answer.
enum Failed {
    Send(reqwest::Error),
    Read(reqwest::Error),
    TooLarge,
}

/// One POST, given up after `timeout`; the error says whether a retry may
/// help.
fn post(
    url: &str,
    key: Option<&str>,
    payload: &str,
    timeout: Duration,
) -> Result<String, (String, bool)> {
    let mut req = crate::sys::http_client::client()
        .post(url)
        .timeout(timeout)
        .header("Content-Type", "application/json")
        .body(payload.to_string());
    if let Some(k) = key {
        req = req.header("Authorization", format!("Bearer {k}"));
    }
    let (status, body) = wait(async move {
        let mut resp = req.send().await.map_err(Failed::Send)?;
        let status = resp.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(Failed::Read)? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(Failed::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, body))
    })
    .map_err(|failed| match failed {
        Failed::Send(e) => (format!("{url}: {}", error_text(e)), true),
        Failed::Read(e) => (format!("{url}: cannot read the answer: {}", error_text(e)), true),
        Failed::TooLarge => (
            format!("{url}: the answer is larger than {} MiB", MAX_ANSWER_BYTES >> 20),
            false,
        ),
    })?;
    let text = String::from_utf8_lossy(&body);
    if status != 200 {
        let retryable = status == 429 || status >= 500;
        let snippet: String = text.chars().take(300).collect();
        return Err((format!("{url}: HTTP {status}: {snippet}"), retryable));
    }
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| (format!("{url}: the answer is not JSON: {e}"), false))?;
    v.pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| {
            (
                format!("{url}: the answer has no choices[0].message.content"),
                false,
            )
        })
}

fn record(path: &std::path::Path, request: &LlmRequest, content: &str) {
    let entry = json!({ "request": request, "content": content });
    let write = || -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::fs::write(tmp.path(), serde_json::to_vec_pretty(&entry)?)?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    };
    if let Err(e) = write() {
        tracing::warn!(path = %path.display(), "cannot record the completion: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn an_answer_past_its_bound_is_an_error_not_memory() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let size = MAX_ANSWER_BYTES + 1;
            let _ = write!(conn, "HTTP/1.1 200 OK\r\ncontent-length: {size}\r\n\r\n");
            let _ = conn.write_all(&vec![b' '; size]);
        });
        let (error, retryable) =
            post(&url, None, "{}", Duration::from_secs(20)).expect_err("a 10 MiB answer was read");
        assert!(error.contains("larger than 10 MiB"), "{error}");
        assert!(!retryable);
    }
}
