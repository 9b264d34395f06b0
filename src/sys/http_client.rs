//! The one HTTP client the host calls out with: a detector's `llm-complete`
//! and the model proxy's upstream. It is reqwest, on the same hyper stack as
//! `critic serve` and its Unix-socket client, with rustls on ring and the
//! Mozilla roots (no system TLS library, the same trust on every machine).
//! It follows no redirect, so a call goes where the user configured it to
//! go, and it takes proxies from the environment (`HTTPS_PROXY`, `NO_PROXY`).

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How long a connection may take to open, TLS included.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// The runtime the client's connections, and the model proxy's listeners,
/// run on.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("http")
            .enable_all()
            .build()
            .expect("a runtime for HTTP calls")
    })
}

/// The shared client: its connections are pooled across calls.
pub fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| build().expect("the HTTP client's fixed configuration builds"))
}

fn build() -> Result<reqwest::Client, String> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())
}

/// Run `future` on the client's runtime and wait for its output. Callable
/// from any thread, one inside another runtime included (where
/// `block_on` would panic): the calling thread only waits on a channel.
pub fn wait<F>(future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime().spawn(async move {
        let _ = tx.send(future.await);
    });
    rx.recv()
        .expect("a task on the HTTP runtime panicked; its panic message says why")
}

/// `error` with its causes, which say what went wrong (reqwest's own text
/// is "error sending request"); without the URL, which callers name.
pub fn error_text(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(&error);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn the_client_builds_with_its_tls_configuration() {
        // A rustls of another version than reqwest's would make the
        // preconfigured backend unknown, which `build` reports.
        build().unwrap();
    }

    /// A one-shot HTTP server on loopback answering `answer` to one
    /// request; returns its address and what it was sent.
    fn server(answer: &'static str) -> (String, std::thread::JoinHandle<String>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                let k = conn.read(&mut buf).unwrap();
                if k == 0 {
                    break;
                }
                seen.extend_from_slice(&buf[..k]);
            }
            conn.write_all(answer.as_bytes()).unwrap();
            String::from_utf8_lossy(&seen).into_owned()
        });
        (format!("http://{addr}"), handle)
    }

    #[test]
    fn a_redirect_is_not_followed() {
        let (url, seen) =
            server("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:9/x\r\nContent-Length: 0\r\n\r\n");
        let status = wait(async move { client().get(url).send().await.map(|r| r.status()) });
        assert_eq!(status.unwrap(), 302);
        assert!(seen.join().unwrap().starts_with("GET / HTTP/1.1"));
    }

    #[test]
    fn a_certificate_no_public_root_signed_is_refused() {
        // A TLS server on loopback with a self-signed certificate for
        // `localhost`: the handshake runs, and the client refuses it.
        let dir = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"])
            .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"])
            .args(["-keyout", "key.pem", "-out", "cert.pem"])
            .current_dir(dir.path())
            .output()
            .expect("openssl, to make a certificate");
        assert!(made.status.success(), "{made:?}");
        let script = "import socket,ssl,sys\n\
            c=ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
            c.load_cert_chain('cert.pem','key.pem')\n\
            s=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(1)\n\
            print(s.getsockname()[1],flush=True)\n\
            conn,_=s.accept()\n\
            try:\n    c.wrap_socket(conn,server_side=True)\nexcept ssl.SSLError as e:\n    print(e,flush=True)\n";
        let mut server = std::process::Command::new("python3")
            .args(["-c", script])
            .current_dir(dir.path())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(server.stdout.take().unwrap());
        let mut port = String::new();
        std::io::BufRead::read_line(&mut out, &mut port).unwrap();
        let url = format!("https://localhost:{}/", port.trim());
        let answer = wait(async move { client().get(url).send().await.map(|r| r.status()) });
        let _ = server.kill();
        let _ = server.wait();
        let error = error_text(answer.expect_err("a self-signed certificate was trusted"));
        assert!(error.contains("certificate"), "{error}");
    }

    #[test]
    fn wait_works_inside_another_runtime() {
        let (url, _seen) = server("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        let other = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let body = other.block_on(async move {
            wait(async move { client().get(url).send().await?.text().await })
        });
        assert_eq!(body.unwrap(), "ok");
    }
}
