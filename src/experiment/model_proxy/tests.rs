//! The proxy against a stand-in model (a test double for a paid API: a
//! loopback server that answers each request with a scripted stream).

use super::*;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;

/// What the stand-in saw of one request.
struct Seen {
    head: String,
    body: String,
}

/// A stand-in model: answers each request with an Anthropic stream of
/// `text` (two chunks, `gap` apart) and usage 10 in, 5 out.
fn standin(text: &'static str, gap: Duration) -> (String, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let tx = tx.clone();
            std::thread::spawn(move || serve_one(stream, text, gap, &tx));
        }
    });
    (url, rx)
}

fn serve_one(stream: TcpStream, text: &str, gap: Duration, tx: &mpsc::Sender<Seen>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let len = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse::<usize>().unwrap())
            })
            .unwrap_or(0);
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let _ = tx.send(Seen {
            head,
            body: String::from_utf8(body).unwrap(),
        });
        let mut out = stream.try_clone().unwrap();
        let events = [
            format!(
                "event: message_start\ndata: {}\n\n",
                json!({"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}})
            ),
            format!(
                "data: {}\n\ndata: {}\n\n",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
            ),
            format!(
                "data: {}\n\ndata: {}\n\n",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
                json!({"type": "message_stop"})
            ),
        ];
        let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n");
        for (i, e) in events.iter().enumerate() {
            if i == 2 {
                std::thread::sleep(gap);
            }
            let _ = write!(out, "{:x}\r\n{e}\r\n", e.len());
            let _ = out.flush();
        }
        let _ = out.write_all(b"0\r\n\r\n");
    }
}

fn settings(dir: &std::path::Path, upstream: Option<&str>) -> Settings {
    Settings {
        upstream: upstream.map(|u| Upstream {
            origin: u.to_string(),
            key: Some("sk-real-key".into()),
        }),
        replay: None,
        record: dir.join("model.jsonl"),
        price: Some(Price {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
        }),
        max_tokens: None,
        max_cost: None,
        spending: Arc::new(Spending {
            cap: None,
            spent: Mutex::new(0.0),
        }),
        normalizer: replay::Normalizer::new(vec![(dir.display().to_string(), "$RUN")]),
        verdict_log: None,
    }
}

/// POST `body` to the proxy at `addr` with `key` as `x-api-key`; the
/// status, the body, and when its first bytes came.
fn post(addr: SocketAddr, key: &str, body: &Value) -> (u16, String, Duration) {
    let (key, body) = (key.to_string(), body.to_string());
    crate::sys::http_client::wait(async move {
        let started = Instant::now();
        let mut response = client()
            .post(format!("http://{addr}/v1/messages"))
            .header("x-api-key", key)
            .header("anthropic-version", "2023-06-01")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let mut text = Vec::new();
        let mut first_at = None;
        while let Some(chunk) = response.chunk().await.unwrap() {
            first_at.get_or_insert_with(|| started.elapsed());
            text.extend_from_slice(&chunk);
        }
        (
            status,
            String::from_utf8_lossy(&text).into_owned(),
            first_at.unwrap_or_else(|| started.elapsed()),
        )
    })
}

#[test]
fn the_token_goes_in_the_real_key_goes_up_and_the_stream_comes_back_as_it_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = standin("Hello", Duration::from_millis(400));
    let proxy = ModelProxy::new(settings(dir.path(), Some(&url))).unwrap();
    let serving = proxy.serve_on_loopback().unwrap();
    let token = proxy.token().to_string();
    let (status, body, first) = post(
        serving.addr,
        &token,
        &json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": format!("at {}", dir.path().display())}]}),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"text\":\"Hello\""), "{body}");
    // The first chunk came before the stand-in's pause.
    assert!(first < Duration::from_millis(300), "{first:?}");
    let up = seen.recv().unwrap();
    assert!(
        up.head
            .to_ascii_lowercase()
            .contains("x-api-key: sk-real-key"),
        "{}",
        up.head
    );
    assert!(!up.head.contains(&token) && !up.body.contains(&token));
    let s = proxy.seen();
    assert_eq!(
        (s.calls, s.tokens.input, s.tokens.output, s.answered),
        (1, 10, 5, true)
    );
    assert!((s.cost.unwrap() - (10.0 * 3.0 + 5.0 * 15.0) / 1e6).abs() < 1e-12);
    drop(serving);
    let recorded = exchange::read_all(&dir.path().join("model.jsonl")).unwrap();
    assert_eq!(recorded.len(), 1);
    let e = &recorded[0];
    assert_eq!(
        (e.status, e.stream, e.source.as_str()),
        (Some(200), true, "live")
    );
    assert_eq!(e.response["content"][0]["text"], "Hello");
    assert_eq!(e.request_headers["x-api-key"], exchange::REDACTED);
    assert_eq!(e.usage.total(), 15);
    assert!(e.raw.as_ref().unwrap().contains("message_stop"));
    let text = std::fs::read_to_string(dir.path().join("model.jsonl")).unwrap();
    assert!(!text.contains("sk-real-key") && !text.contains(&token));
}

#[test]
fn neither_key_nor_token_shows_in_debug_output() {
    let dir = tempfile::tempdir().unwrap();
    let proxy = ModelProxy::new(settings(dir.path(), Some("http://127.0.0.1:9"))).unwrap();
    let shown = format!("{proxy:?}");
    assert!(
        !shown.contains("sk-real-key") && !shown.contains(proxy.token()),
        "{shown}"
    );
}

#[test]
fn a_wrong_key_is_refused_and_never_reaches_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = standin("Hello", Duration::ZERO);
    let proxy = ModelProxy::new(settings(dir.path(), Some(&url))).unwrap();
    let serving = proxy.serve_on_loopback().unwrap();
    for key in ["sk-real-key", "", &proxy.token()[1..]] {
        let (status, body, _) = post(serving.addr, key, &json!({"model": "m"}));
        assert_eq!(status, 401, "{body}");
    }
    assert!(seen.try_recv().is_err());
    assert!(!proxy.seen().answered);
}

#[test]
fn a_spent_budget_refuses_the_next_call_and_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _seen) = standin("Hi", Duration::ZERO);
    let proxy = ModelProxy::new(Settings {
        max_tokens: Some(20),
        ..settings(dir.path(), Some(&url))
    })
    .unwrap();
    let serving = proxy.serve_on_loopback().unwrap();
    let token = proxy.token().to_string();
    for _ in 0..2 {
        assert_eq!(post(serving.addr, &token, &json!({"q": 1})).0, 200);
    }
    assert!(!proxy.stop_flag().load(Ordering::SeqCst));
    let (status, body, _) = post(serving.addr, &token, &json!({"q": 1}));
    assert_eq!(status, 400);
    assert!(
        body.contains("30 tokens used, budget.tokens is 20"),
        "{body}"
    );
    assert!(proxy.stop_flag().load(Ordering::SeqCst));
    assert!(matches!(proxy.seen().stop, Some(Stop::Budget(_))));
    assert_eq!(proxy.seen().tokens.total(), 30);
}

#[test]
fn a_recording_answers_without_the_model_and_a_new_request_diverges() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _seen) = standin("Recorded", Duration::ZERO);
    let live = ModelProxy::new(settings(dir.path(), Some(&url))).unwrap();
    let serving = live.serve_on_loopback().unwrap();
    let ask = |n: u32| json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": format!("step {n}")}]});
    let mut answers = Vec::new();
    for n in 1..=2 {
        answers.push(post(serving.addr, live.token(), &ask(n)).1);
    }
    drop(serving);
    let recording = replay::Recording::new(
        exchange::read_all(&dir.path().join("model.jsonl")).unwrap(),
        replay::Normalizer::new(vec![(dir.path().display().to_string(), "$RUN")]),
    );
    let again = tempfile::tempdir().unwrap();
    let replayed = ModelProxy::new(Settings {
        replay: Some(recording),
        ..settings(again.path(), None)
    })
    .unwrap();
    let serving = replayed.serve_on_loopback().unwrap();
    for n in 1..=2 {
        assert_eq!(
            post(serving.addr, replayed.token(), &ask(n)).1,
            answers[n as usize - 1]
        );
    }
    let seen = replayed.seen();
    assert_eq!((seen.tokens.total(), seen.stop.clone()), (30, None));
    let (status, body, _) = post(serving.addr, replayed.token(), &ask(3));
    assert_eq!(status, 400, "{body}");
    match replayed.seen().stop {
        Some(Stop::Diverged(why)) => assert_eq!(
            why,
            "round 1, call 3: the recording has no more calls (2 recorded, all answered)"
        ),
        other => panic!("{other:?}"),
    }
    let rows = exchange::read_all(&again.path().join("model.jsonl")).unwrap();
    assert_eq!(
        rows.iter().map(|e| e.source.as_str()).collect::<Vec<_>>(),
        ["replayed", "replayed", "proxy"]
    );
}

#[test]
fn an_unreachable_model_is_recorded_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let proxy = ModelProxy::new(settings(dir.path(), Some(&url))).unwrap();
    let serving = proxy.serve_on_loopback().unwrap();
    let (status, body, _) = post(serving.addr, proxy.token(), &json!({}));
    assert_eq!(status, 502, "{body}");
    let seen = proxy.seen();
    assert!(!seen.answered);
    assert!(seen.unreachable.unwrap().contains("did not answer"));
}

#[test]
fn a_call_whose_agent_hangs_up_before_the_answer_is_still_recorded_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    // A stand-in model that answers a second after the request.
    let model = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", model.local_addr().unwrap());
    std::thread::spawn(move || {
        let (stream, _) = model.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
            line.clear();
        }
        std::thread::sleep(Duration::from_secs(1));
        let body = json!({"usage": {"input_tokens": 10, "output_tokens": 5}}).to_string();
        let _ = write!(
            &stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
    });
    let proxy = ModelProxy::new(settings(dir.path(), Some(&url))).unwrap();
    let serving = proxy.serve_on_loopback().unwrap();
    {
        let mut agent = TcpStream::connect(serving.addr).unwrap();
        write!(
            agent,
            "POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: {}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{{}}",
            proxy.token()
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        // The agent hangs up while the model is still thinking.
    }
    let record = dir.path().join("model.jsonl");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&record).map_or(true, |t| t.is_empty()) {
        assert!(Instant::now() < deadline, "the call was never recorded");
        std::thread::sleep(Duration::from_millis(50));
    }
    let line: Value = serde_json::from_str(std::fs::read_to_string(&record).unwrap().trim()).unwrap();
    assert_eq!(line["status"], 200, "{line}");
    assert_eq!(proxy.seen().tokens.output, 5);
}
