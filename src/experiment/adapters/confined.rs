//! How an agent's turns are confined in an experiment (unless the user
//! passes `--unconfined-agents`): the confinement of the runs a skill asks
//! for ([`crate::sandbox::confine`]), with
//!
//! - the run's workspace and its agent directory (`<run>/agent`: the
//!   agent's home, temporary files, prompt and transcript) the only places
//!   it writes;
//! - the output directory (every run's files, the workspaces of the others,
//!   the grader's copies), the user's repositories and the instances file
//!   (with the golden patches) covered, so not even readable;
//! - a network namespace of its own, in which only the run's model proxy
//!   (see [`crate::experiment::model_proxy`]), the session's judge and the
//!   `agent.network` endpoints answer (see
//!   [`crate::sandbox::confine::AgentReach`]);
//! - a PID namespace per turn: whatever the turn started ends with it.
//!
//! An agent whose finish boundary is its own Stop hook runs that hook
//! inside its confinement, where a check cannot run (its test runs would
//! need namespaces of their own, which Landlock refuses to nest): the hook
//! asks the session's judge instead, a `critic serve` the runner starts
//! outside, pinned to the session ([`crate::frontend::pinned`]), which keeps the
//! critic's state and writes the verdict log where the agent cannot.

use crate::experiment::model_proxy::{ModelProxy, Serving};
use crate::sandbox::confine::memory::MemoryCgroup;
use crate::sandbox::confine::{AgentReach, Confinement};
use crate::sys::forward::{Forwarders, Target};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// The judge's port in a turn's own network namespace (any port is free
/// there; another is taken when an `agent.network` endpoint uses this one).
const JUDGE_PORT: u16 = 47_100;

/// The model proxy's port in a turn's namespace (likewise).
const MODEL_PORT: u16 = 47_000;

/// What one of a turn's listeners is for.
#[derive(Debug, Clone)]
enum Route {
    /// Bytes forwarded to an endpoint (`agent.network`, the judge).
    Forward(Target),
    /// The run's model proxy.
    Model(Arc<ModelProxy>),
}

/// What every turn of one run is given.
#[derive(Debug, Clone)]
pub struct Reach {
    /// `<run>/agent`: writable by the agent, with the workspace.
    pub agent_dir: PathBuf,
    /// Programs the turn runs besides the agent (the experiment's
    /// interpreter, `critic` for a Stop hook): what they need is seen,
    /// read-only, even inside a covered place.
    pub seen: Vec<PathBuf>,
    reach: AgentReach,
    routes: Vec<Route>,
    judge: Option<SocketAddr>,
    model: Option<SocketAddr>,
    /// The memory a turn may hold (see [`crate::sandbox::confine::memory`]).
    memory_bytes: Option<u64>,
}

/// One endpoint a turn reaches: where its listener goes in the turn's
/// namespace, the name it is dialled by (if not an address), and where the
/// runner forwards it.
fn endpoint(url: &str) -> Result<(SocketAddr, Option<String>, Target), String> {
    // `host:port` as well as a URL.
    let full = if url.contains("://") {
        url.to_string()
    } else {
        format!("tcp://{url}")
    };
    let uri: axum::http::Uri = full.parse().map_err(|e| format!("{url:?}: {e}"))?;
    let host = uri
        .host()
        .ok_or_else(|| format!("{url:?}: no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = match (uri.port_u16(), uri.scheme_str()) {
        (Some(port), _) => port,
        (None, Some("https")) => 443,
        (None, Some("http")) => 80,
        (None, _) => {
            return Err(format!(
                "{url:?}: give a port (host:port) or an http(s) URL"
            ))
        }
    };
    let (listen, name) = match host.parse::<IpAddr>() {
        Ok(ip) if crate::sandbox::confine::listenable(ip) => (SocketAddr::new(ip, port), None),
        Ok(ip) => {
            return Err(format!(
                "{url:?}: an agent's confined turn reaches an endpoint by host name or on a \
                 loopback address, not at {ip}; name the host (or pass --unconfined-agents)"
            ))
        }
        // Its address in the turn is chosen by [`Reach::new`].
        Err(_) => (
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
            Some(host.clone()),
        ),
    };
    Ok((listen, name, Target::Tcp { host, port }))
}

/// Whether `entry` of `agent.network` names an endpoint a confined turn can
/// reach.
pub fn check_endpoint(entry: &str) -> Result<(), String> {
    endpoint(entry).map(|_| ())
}

impl Reach {
    /// This reach with each private directory of a turn holding
    /// `tmp_bytes`, and the turn's processes `memory_bytes` of memory.
    pub fn with_limits(mut self, tmp_bytes: u64, memory_bytes: u64) -> Reach {
        self.reach.tmp_bytes = Some(tmp_bytes);
        self.memory_bytes = Some(memory_bytes);
        self
    }

    /// The reach of the run in `run_dir`: its model proxy, the `network`
    /// endpoints, the judge's socket (for a hooked agent), `covered` (the
    /// experiment's places) and `seen` (see [`Reach::seen`]).
    pub fn new(
        run_dir: &Path,
        covered: Vec<PathBuf>,
        seen: Vec<PathBuf>,
        model: Option<Arc<ModelProxy>>,
        network: &[String],
        judge_socket: Option<&Path>,
    ) -> Result<Reach, String> {
        let agent_dir = run_dir.join("agent");
        let mut listen: Vec<SocketAddr> = Vec::new();
        let mut names = Vec::new();
        let mut targets = Vec::new();
        let mut named = Vec::new();
        for url in network.iter().map(String::as_str) {
            let (addr, name, target) = endpoint(url)?;
            if targets.contains(&target) {
                continue;
            }
            match name {
                Some(name) => named.push((name, addr.port(), target)),
                None if listen.contains(&addr) => {
                    return Err(format!("{url:?}: {addr} is named twice"));
                }
                None => {
                    listen.push(addr);
                    targets.push(target);
                }
            }
        }
        // Each name gets a loopback address of its own (all of 127/8 is
        // the turn's loopback), so that names on one port (443) do not share
        // a listener.
        let mut next = 2u8;
        for (name, port, target) in named {
            let ip = match names.iter().find(|(n, _)| *n == name) {
                Some((_, ip)) => *ip,
                None => loop {
                    let ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, next));
                    next = next
                        .checked_add(1)
                        .ok_or("too many endpoints for one turn")?;
                    if listen.iter().all(|a| a.ip() != ip) {
                        names.push((name.clone(), ip));
                        break ip;
                    }
                },
            };
            listen.push(SocketAddr::new(ip, port));
            targets.push(target);
        }
        let mut routes: Vec<Route> = targets.into_iter().map(Route::Forward).collect();
        // A port of the turn's loopback that nothing else listens on.
        let free = |listen: &[SocketAddr], from: u16| {
            let port = (from..)
                .find(|p| listen.iter().all(|a: &SocketAddr| a.port() != *p))
                .unwrap_or(from);
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
        };
        let model = model.map(|proxy| {
            let addr = free(&listen, MODEL_PORT);
            listen.push(addr);
            routes.push(Route::Model(proxy));
            addr
        });
        let judge = judge_socket.map(|socket| {
            let addr = free(&listen, JUDGE_PORT);
            listen.push(addr);
            routes.push(Route::Forward(Target::Unix(socket.to_path_buf())));
            addr
        });
        let hosts = if names.is_empty() {
            None
        } else {
            let file = run_dir.join("hosts");
            crate::sys::atomic_file::write(
                &file,
                crate::sandbox::confine::hosts_file(&names).as_bytes(),
                false,
            )
            .map_err(|e| format!("{}: {e}", file.display()))?;
            Some(file)
        };
        Ok(Reach {
            agent_dir,
            seen,
            reach: AgentReach {
                covered,
                listen,
                hosts,
                tmp_bytes: None,
            },
            routes,
            judge,
            model,
            memory_bytes: None,
        })
    }

    /// The model proxy's address as the agent dials it, with `path` (its
    /// `base_url`'s) after it.
    pub fn model_url(&self, path: &str) -> Option<String> {
        self.model.map(|a| format!("http://{a}{path}"))
    }

    /// The judge's address as the agent's hook dials it.
    pub fn judge_address(&self) -> Option<String> {
        self.judge.map(|a| format!("http://{a}"))
    }

    /// Make `cmd` start confined, writing only to `workspace` and the
    /// agent directory, seeing `seen` (its program, its interpreter's
    /// directory). Call [`Pending::forward`] once it has started.
    pub fn confine(
        &self,
        cmd: &mut Command,
        workspace: &Path,
        seen: &[&Path],
    ) -> Result<Pending, String> {
        let (mut confinement, listeners) =
            Confinement::for_agent(&[workspace, &self.agent_dir], seen, &self.reach)?;
        // Where the machine has no memory cgroup to give, each process of
        // the turn is held to the limit instead (`critic doctor` says which).
        let memory = self.memory_bytes.and_then(|bytes| {
            MemoryCgroup::new(bytes)
                .inspect_err(|e| {
                    tracing::debug!(
                        "no memory cgroup for the turn ({e}): a data limit per process"
                    );
                    confinement.limit_data(bytes);
                })
                .ok()
        });
        if let Some(cgroup) = &memory {
            confinement.join_memory(cgroup);
        }
        confinement.apply(cmd);
        Ok(Pending {
            listeners,
            routes: self.routes.clone(),
            memory,
        })
    }
}

/// A confined turn's listeners and memory cgroup, before it has started.
pub struct Pending {
    listeners: crate::sandbox::confine::Listeners,
    routes: Vec<Route>,
    memory: Option<MemoryCgroup>,
}

/// A started turn's forwarders and model proxy (stopped when dropped) and
/// memory cgroup.
pub struct Started {
    /// What forwards the turn's listeners: held, not read, until the turn
    /// ends, when dropping it stops the forwarding.
    _forwarders: Forwarders,
    /// The model proxy serving the turn's listener, held the same way.
    _model: Option<Serving>,
    /// The turn's memory cgroup, when it has one.
    pub memory: Option<MemoryCgroup>,
}

impl Pending {
    /// Serve what the started turn's listeners accept.
    pub fn forward(self) -> Result<Started, String> {
        let network = |e: std::io::Error| format!("the turn's network: {e}");
        let listeners = self.listeners.receive().map_err(network)?;
        let mut pairs = Vec::new();
        let mut model = None;
        for (listener, route) in listeners.into_iter().zip(self.routes) {
            match route {
                Route::Forward(target) => pairs.push((listener, target)),
                Route::Model(proxy) => model = Some(proxy.serve(listener).map_err(network)?),
            }
        }
        Ok(Started {
            _forwarders: Forwarders::start(pairs).map_err(network)?,
            _model: model,
            memory: self.memory,
        })
    }
}

/// PATH with `prefix` first.
pub fn path_with(prefix: &[std::path::PathBuf]) -> std::ffi::OsString {
    let mut dirs: Vec<std::path::PathBuf> = prefix.to_vec();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap_or_default()
}

/// `program` as `PATH` (with `prefix` first) finds it, when it is a bare
/// name.
pub fn locate(program: &str, prefix: &[PathBuf]) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    let path = path_with(prefix);
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_reached_by_loopback_address_or_by_name_only() {
        let (addr, name, target) = endpoint("http://127.0.0.1:8123/v1").unwrap();
        assert_eq!(addr, "127.0.0.1:8123".parse().unwrap());
        assert_eq!(name, None);
        assert_eq!(
            target,
            Target::Tcp {
                host: "127.0.0.1".into(),
                port: 8123
            }
        );
        let (addr, name, _) = endpoint("https://api.example.com").unwrap();
        assert_eq!(addr, "127.0.0.1:443".parse().unwrap());
        assert_eq!(name.as_deref(), Some("api.example.com"));
        let (addr, _, _) = endpoint("http://[::1]:9000").unwrap();
        assert_eq!(addr, "[::1]:9000".parse().unwrap());
        let e = endpoint("http://10.1.2.3:8000").unwrap_err();
        assert!(e.contains("host name"), "{e}");
        let (addr, name, _) = endpoint("pypi.org:443").unwrap();
        assert_eq!(
            (addr, name.as_deref()),
            ("127.0.0.1:443".parse().unwrap(), Some("pypi.org"))
        );
        assert!(endpoint("pypi.org").unwrap_err().contains("give a port"));
    }

    #[test]
    fn names_on_one_port_get_addresses_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let network = [
            "https://api.example.com".into(),
            "pypi.org:443".into(),
            "127.0.0.3:9000".into(),
            "api.example.com:8443".into(),
        ];
        let r = Reach::new(dir.path(), vec![], vec![], None, &network, None).unwrap();
        let listen: Vec<String> = r.reach.listen.iter().map(|a| a.to_string()).collect();
        assert_eq!(
            listen,
            [
                "127.0.0.3:9000",
                "127.0.0.2:443",
                "127.0.0.4:443",
                "127.0.0.2:8443"
            ]
        );
        let hosts = std::fs::read_to_string(dir.path().join("hosts")).unwrap();
        assert!(hosts.contains("127.0.0.2\tapi.example.com\n"), "{hosts}");
        assert!(hosts.contains("127.0.0.4\tpypi.org\n"), "{hosts}");
        let e = Reach::new(
            dir.path(),
            vec![],
            vec![],
            None,
            &["127.0.0.1:80".into(), "http://127.0.0.1".into()],
            None,
        );
        assert!(e.is_ok(), "the same endpoint twice is one");
    }

    #[test]
    fn the_model_and_the_judge_take_ports_nothing_else_uses() {
        let dir = tempfile::tempdir().unwrap();
        let proxy = ModelProxy::new(crate::experiment::model_proxy::Settings {
            upstream: None,
            replay: None,
            record: dir.path().join("model.jsonl"),
            price: None,
            max_tokens: None,
            max_cost: None,
            spending: Arc::new(crate::experiment::model_proxy::Spending {
                cap: None,
                spent: Default::default(),
            }),
            normalizer: Default::default(),
            verdict_log: None,
        })
        .unwrap();
        let r = Reach::new(
            dir.path(),
            vec![],
            vec![],
            Some(proxy),
            &[
                format!("127.0.0.1:{MODEL_PORT}"),
                format!("127.0.0.1:{JUDGE_PORT}"),
            ],
            Some(Path::new("/s")),
        )
        .unwrap();
        assert_eq!(
            r.model_url("/v1").unwrap(),
            format!("http://127.0.0.1:{}/v1", MODEL_PORT + 1)
        );
        assert_eq!(
            r.judge_address().unwrap(),
            format!("http://127.0.0.1:{}", JUDGE_PORT + 1)
        );
    }
}
