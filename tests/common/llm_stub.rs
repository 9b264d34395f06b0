//! A local OpenAI-compatible chat-completions stub server, written for the
//! tests: no paid API can be reached here. It records every request and the
//! peak number of requests in flight.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the stub saw of one request.
#[derive(Debug, Clone)]
pub struct Seen {
    pub authorization: Option<String>,
    pub body: Value,
}

/// A chat-completions stub: `answer(n, body)` gives the status and body of
/// the n-th request (0-based).
pub struct Stub {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    pub peak: Arc<AtomicUsize>,
}

impl Stub {
    pub fn start<F>(delay: Duration, answer: F) -> Stub
    where
        F: Fn(usize, &Value) -> (u16, String) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let peak = Arc::new(AtomicUsize::new(0));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let answer = Arc::new(answer);
        let (s, p) = (seen.clone(), peak.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let (seen, peak, in_flight, answer) =
                    (s.clone(), p.clone(), in_flight.clone(), answer.clone());
                std::thread::spawn(move || {
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let (mut length, mut auth) = (0usize, None);
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                            break;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        if lower.starts_with("authorization:") {
                            auth = Some(line["authorization:".len()..].trim().to_string());
                        }
                    }
                    let mut body = vec![0u8; length];
                    reader.read_exact(&mut body).unwrap();
                    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let n = {
                        let mut seen = seen.lock().unwrap();
                        seen.push(Seen {
                            authorization: auth,
                            body: body.clone(),
                        });
                        seen.len() - 1
                    };
                    std::thread::sleep(delay);
                    let (status, text) = answer(n, &body);
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    let _ = write!(
                        conn,
                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                        text.len()
                    );
                });
            }
        });
        Stub { url, seen, peak }
    }
}

pub fn completion(text: &str) -> String {
    json!({"choices": [{"message": {"role": "assistant", "content": text}}]}).to_string()
}
