//! Forwarding the connections a listener accepts to one endpoint, byte for
//! byte: how an agent's confined turn, whose network namespace has nothing
//! but its loopback, reaches its model's API and its judge (see
//! [`crate::sandbox::confine::AgentReach`]). The endpoint is fixed by the
//! runner; what the agent sends cannot choose another.

use std::io::Read;
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Connections open at once through one forwarder; more are closed at once
/// (a turn cannot make the runner start threads without bound).
const MAX_CONNECTIONS: usize = 64;

/// How long to wait for the endpoint to accept.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where connections go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A TCP endpoint, resolved by the runner at each connection.
    Tcp {
        /// Host name or address.
        host: String,
        /// Port.
        port: u16,
    },
    /// A Unix socket.
    Unix(PathBuf),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Tcp { host, port } => write!(f, "{host}:{port}"),
            Target::Unix(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Forwarders running until dropped; then they stop accepting (connections
/// open go on until either side closes).
pub struct Forwarders {
    stop: Arc<AtomicBool>,
    listeners: Vec<Arc<TcpListener>>,
    threads: Vec<JoinHandle<()>>,
}

impl Forwarders {
    /// Forward every connection each listener accepts to its target.
    pub fn start(pairs: Vec<(TcpListener, Target)>) -> std::io::Result<Forwarders> {
        // Made first, so that a failure midway stops what has started.
        let mut forwarders = Forwarders {
            stop: Arc::new(AtomicBool::new(false)),
            listeners: Vec::new(),
            threads: Vec::new(),
        };
        for (listener, target) in pairs {
            listener.set_nonblocking(false)?;
            let listener = Arc::new(listener);
            forwarders.listeners.push(listener.clone());
            let stop = forwarders.stop.clone();
            forwarders.threads.push(
                std::thread::Builder::new()
                    .name("forward-accept".into())
                    .spawn(move || accept_loop(&listener, target, &stop))?,
            );
        }
        Ok(forwarders)
    }
}

impl Drop for Forwarders {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // A listening socket shut down ends the accept blocked on it.
        for listener in &self.listeners {
            // SAFETY: shutdown(2) on a descriptor the listener owns.
            unsafe { libc::shutdown(listener.as_raw_fd(), libc::SHUT_RDWR) };
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, target: Target, stop: &AtomicBool) {
    let open = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((inbound, _)) => {
                if open.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                    tracing::warn!("more than {MAX_CONNECTIONS} connections to {target}: closed");
                    continue;
                }
                let slot = Slot::take(&open);
                let target = target.clone();
                let relayed = std::thread::Builder::new()
                    .name("forward".into())
                    .spawn(move || {
                        let _slot = slot;
                        if let Err(e) = relay(inbound, &target) {
                            tracing::debug!("forwarding to {target}: {e}");
                        }
                    });
                // No thread to spare: the connection is closed (the slot
                // given back with the closure).
                if let Err(e) = relayed {
                    tracing::warn!("forwarding: {e}");
                }
            }
            Err(e) if stop.load(Ordering::SeqCst) => tracing::trace!("{target}: stopped ({e})"),
            Err(e) => {
                // A transient failure (out of descriptors): try again soon.
                tracing::debug!("accepting for {target}: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// One of a forwarder's open connections, given back however its thread
/// ends.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(open: &Arc<AtomicUsize>) -> Slot {
        open.fetch_add(1, Ordering::SeqCst);
        Slot(open.clone())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A stream either way: TCP or Unix.
trait Duplex: Read + std::io::Write + Send + 'static {
    fn split(&self) -> std::io::Result<Box<dyn Duplex>>;
    fn close_write(&self);
}

impl Duplex for TcpStream {
    fn split(&self) -> std::io::Result<Box<dyn Duplex>> {
        Ok(Box::new(self.try_clone()?))
    }
    fn close_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

impl Duplex for UnixStream {
    fn split(&self) -> std::io::Result<Box<dyn Duplex>> {
        Ok(Box::new(self.try_clone()?))
    }
    fn close_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

fn connect(target: &Target) -> std::io::Result<Box<dyn Duplex>> {
    match target {
        Target::Unix(path) => Ok(Box::new(UnixStream::connect(path)?)),
        Target::Tcp { host, port } => {
            let mut last = std::io::Error::other(format!("{host}: no address"));
            for addr in (host.as_str(), *port).to_socket_addrs()? {
                match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                    Ok(s) => {
                        let _ = s.set_nodelay(true);
                        return Ok(Box::new(s));
                    }
                    Err(e) => last = e,
                }
            }
            Err(last)
        }
    }
}

/// Copy both ways until both sides have closed.
fn relay(inbound: TcpStream, target: &Target) -> std::io::Result<()> {
    inbound.set_nonblocking(false)?;
    let _ = inbound.set_nodelay(true);
    let outbound = connect(target)?;
    let (mut in_read, mut out_write) = (inbound.try_clone()?, outbound.split()?);
    let up = std::thread::Builder::new()
        .name("forward-up".into())
        .spawn(move || {
            let _ = std::io::copy(&mut in_read, &mut out_write);
            out_write.close_write();
        })?;
    let (mut out_read, mut in_write) = (outbound, inbound);
    let _ = std::io::copy(&mut out_read, &mut in_write);
    in_write.close_write();
    let _ = up.join();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn bytes_go_both_ways_to_the_fixed_endpoint() {
        let echo = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = echo.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = echo.accept().unwrap();
            let mut buf = Vec::new();
            s.read_to_end(&mut buf).unwrap();
            s.write_all(&buf.repeat(2)).unwrap();
        });
        let front = TcpListener::bind("127.0.0.1:0").unwrap();
        let front_addr = front.local_addr().unwrap();
        let fw = Forwarders::start(vec![(
            front,
            Target::Tcp {
                host: "127.0.0.1".into(),
                port,
            },
        )])
        .unwrap();
        let mut c = TcpStream::connect(front_addr).unwrap();
        c.write_all(b"abc").unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let mut got = String::new();
        c.read_to_string(&mut got).unwrap();
        assert_eq!(got, "abcabc");
        let stopped = std::time::Instant::now();
        drop(fw);
        assert!(stopped.elapsed() < Duration::from_millis(500));
        assert!(
            TcpStream::connect(front_addr).is_err(),
            "no longer accepting"
        );
    }

    #[test]
    fn a_unix_socket_target_is_reached() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let server = std::os::unix::net::UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = server.accept().unwrap();
            s.write_all(b"hello").unwrap();
        });
        let front = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = front.local_addr().unwrap();
        let _fw = Forwarders::start(vec![(front, Target::Unix(path))]).unwrap();
        let mut c = TcpStream::connect(addr).unwrap();
        let mut got = String::new();
        c.read_to_string(&mut got).unwrap();
        assert_eq!(got, "hello");
    }
}
