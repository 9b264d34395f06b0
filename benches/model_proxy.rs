//! What the run's model proxy costs a model call: the time of a small
//! non-streamed call and the time to a streamed answer's first byte, each
//! direct to a stand-in model on the loopback and through the proxy, in
//! alternating order; and a session of calls at 1 s of model latency each,
//! live and replayed from its recording.
//!
//! Run with `cargo bench --bench model_proxy`; figures go in
//! docs/PERFORMANCE.md (targets: at most 2 ms added per call and to the
//! first streamed byte; a replay at least 5x faster than the recording).

use pluggable_critic::experiment::model_proxy::{
    exchange, replay, ModelProxy, Settings, Spending, Upstream,
};
use pluggable_critic::sys::http_client;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A stand-in model: each request answered after `latency`, as a stream
/// whose first event comes at once and whose last comes 20 ms later.
fn standin(latency: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut len = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; len];
                    reader.read_exact(&mut body).unwrap();
                    std::thread::sleep(latency);
                    let first = "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n";
                    let last = "data: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":5}}\n\n";
                    let _ = write!(out, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n", first.len());
                    let _ = out.flush();
                    std::thread::sleep(Duration::from_millis(20));
                    let _ = write!(out, "{:x}\r\n{last}\r\n0\r\n\r\n", last.len());
                    let _ = out.flush();
                }
            });
        }
    });
    addr
}

fn settings(dir: &std::path::Path, upstream: Option<SocketAddr>) -> Settings {
    Settings {
        upstream: upstream.map(|a| Upstream {
            origin: format!("http://{a}"),
            key: Some("sk-bench".into()),
        }),
        replay: None,
        record: dir.join("model.jsonl"),
        price: None,
        max_tokens: None,
        max_cost: None,
        spending: Arc::new(Spending {
            cap: None,
            spent: Default::default(),
        }),
        normalizer: Default::default(),
        verdict_log: None,
    }
}

/// One call: the time to the answer's first byte and to its end, ms.
fn call(addr: SocketAddr, key: &str, n: usize) -> (f64, f64) {
    let body = format!("{{\"model\":\"m\",\"stream\":true,\"messages\":[{{\"role\":\"user\",\"content\":\"call {n}\"}}]}}");
    let key = key.to_string();
    http_client::wait(async move {
        let started = Instant::now();
        let mut response = http_client::client()
            .post(format!("http://{addr}/v1/messages"))
            .header("x-api-key", key)
            .body(body)
            .send()
            .await
            .unwrap();
        response.chunk().await.unwrap().expect("a first chunk");
        let first = started.elapsed().as_secs_f64() * 1e3;
        while response.chunk().await.unwrap().is_some() {}
        (first, started.elapsed().as_secs_f64() * 1e3)
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let model = standin(Duration::ZERO);
    let proxy = ModelProxy::new(settings(dir.path(), Some(model))).unwrap();
    let serving = proxy.serve_on_loopback().unwrap();
    let (mut direct, mut proxied) = (Vec::new(), Vec::new());
    for n in 0..400 {
        let d = call(model, "sk-bench", n);
        let p = call(serving.addr, proxy.token(), n);
        if n >= 50 {
            direct.push(d);
            proxied.push(p);
        }
    }
    let first = |v: &[(f64, f64)]| median(v.iter().map(|x| x.0).collect());
    // The whole call less the stand-in's own 20 ms between its events.
    let whole = |v: &[(f64, f64)]| median(v.iter().map(|x| x.1).collect());
    println!(
        "streamed call, median of {}: first byte direct {:.3} ms, through the proxy {:.3} ms \
         (+{:.3} ms; target <= 2 ms); whole call direct {:.3} ms, proxied {:.3} ms (+{:.3} ms; \
         target <= 2 ms)",
        direct.len(),
        first(&direct),
        first(&proxied),
        first(&proxied) - first(&direct),
        whole(&direct),
        whole(&proxied),
        whole(&proxied) - whole(&direct),
    );
    drop(serving);

    // A session of 10 calls at 1 s each, then the same replayed.
    let slow = standin(Duration::from_secs(1));
    let live_dir = tempfile::tempdir().unwrap();
    let live = ModelProxy::new(settings(live_dir.path(), Some(slow))).unwrap();
    let serving = live.serve_on_loopback().unwrap();
    let started = Instant::now();
    for n in 0..10 {
        call(serving.addr, live.token(), n);
    }
    let recorded = started.elapsed().as_secs_f64();
    drop(serving);
    let again = tempfile::tempdir().unwrap();
    let replayed = ModelProxy::new(Settings {
        replay: Some(replay::Recording::new(
            exchange::read_all(&live_dir.path().join("model.jsonl")).unwrap(),
            Default::default(),
        )),
        ..settings(again.path(), None)
    })
    .unwrap();
    let serving = replayed.serve_on_loopback().unwrap();
    let started = Instant::now();
    for n in 0..10 {
        call(serving.addr, replayed.token(), n);
    }
    let replay_s = started.elapsed().as_secs_f64();
    assert!(replayed.seen().stop.is_none(), "the replay diverged");
    println!(
        "10 calls at 1 s of model latency: recorded {recorded:.2} s, replayed {:.1} ms: {:.0}x \
         faster (target >= 5x)",
        replay_s * 1e3,
        recorded / replay_s
    );
}
