//! The WebAssembly runtime: loads detector components and calls them under
//! limits.
//!
//! One [`Engine`] and one epoch ticker serve the whole process; every call gets
//! a fresh [`Store`], so no state leaks between calls except what the host
//! persists on purpose. A detector is untrusted: its memory is capped by a
//! resource limiter, its wall-clock time by epoch interruption, its output by
//! size checks, and it reaches the outside world only through WASI with nothing
//! granted (no files, no environment, no network) and the capability-checked
//! `critic:detector/host` functions.

pub mod cache;
mod capped_pipe;
mod deadline_clock;

use crate::detector::feed::EventFeed;
use crate::detector::wasm::cache::{CacheOutcome, ComponentCache};
use crate::detector::wasm::deadline_clock::{ClockView, DeadlineClock};
use crate::host::llm::LlmClient;
use crate::host::log::{Level, LogBuffer, LogLine};
use crate::host::run::Runner;
use crate::host::{Capability, Grants};
use capped_pipe::CappedPipe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, ResourceLimiter, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

wasmtime::component::bindgen!({
    path: "critic-sdk/wit",
    world: "critic-detector",
});

use critic::detector::host::LogLevel;

/// The largest linear memory a detector may be given (`memory_mb` is at most
/// 4096 in the manifest schema, all a 32-bit memory can address).
const MAX_MEMORY_BYTES: usize = 4 << 30;

/// Longest error text a detector may report; the rest is cut (a detector's
/// `Err` is a guest string of any size, and it reaches verdicts and logs).
pub const MAX_ERROR_BYTES: usize = 4096;

/// How often the epoch advances; the granularity of detector timeouts.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// The WIT package whose `detector` interface a component must export.
const DETECTOR_INTERFACE: &str = "critic:detector/detector";

/// World versions this host can call, as `major.minor` prefixes (0.x is
/// compatible within a minor version, as wasmtime's linker treats it).
pub const SUPPORTED_VERSIONS: &[&str] = &["0.1"];

/// Why a detector could not be loaded or did not produce an answer.
#[derive(Debug, thiserror::Error)]
pub enum DetectorError {
    /// The file could not be read.
    #[error("{path}: cannot read detector: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A core module, or not WebAssembly at all.
    #[error("{path}: {what}; a detector must be a WebAssembly component (build it for wasm32-wasip2, e.g. with `critic build`)")]
    NotComponent {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        what: &'static str,
    },
    /// A component that does not export the detector interface.
    #[error("{path}: not a critic detector: it exports no `{DETECTOR_INTERFACE}` interface (exports: {exports})")]
    NotDetector {
        /// The file.
        path: PathBuf,
        /// What it exports.
        exports: String,
    },
    /// Built against another world version.
    #[error("{path}: built for critic:detector@{found}, but this host supports {}; rebuild it against a matching critic-sdk", supported())]
    WrongVersion {
        /// The file.
        path: PathBuf,
        /// The version it exports.
        found: String,
    },
    /// Compilation or linking failed.
    #[error("{path}: cannot load component: {message}")]
    Load {
        /// The file.
        path: PathBuf,
        /// wasmtime's words.
        message: String,
    },
    /// Ran past its deadline.
    #[error("timed out after {0:?} (raise the signal's `timeout` if it needs longer)")]
    Timeout(Duration),
    /// Still running when the time of the whole check (the request's
    /// `time_limit`) was up.
    #[error("stopped when the check's time limit of {:.1} s ran out (`--time-limit`, or the server's `--check-timeout`)", .0.as_secs_f64())]
    OutOfTime(Duration),
    /// Tried to grow memory past its cap.
    #[error("exceeded its memory limit of {} MiB (raise `limits.memory_mb` or the signal's `memory_mb`)", .0 >> 20)]
    OutOfMemory(u64),
    /// Trapped (panic, unreachable, stack overflow...).
    #[error("crashed: {message}{}", stderr_note(.stderr))]
    Trap {
        /// wasmtime's description.
        message: String,
        /// The end of what the detector wrote to stderr.
        stderr: String,
    },
    /// A pooled runtime had no free instance slot.
    #[error("could not start: {0}; make the pooled runtime with a higher `calls` limit")]
    Busy(String),
    /// The detector returned an error.
    #[error("reported an error: {0}")]
    Reported(String),
    /// Returned more than the output cap.
    #[error("returned {size} bytes, more than the {} KiB output limit (`limits.output_kb`)", .limit >> 10)]
    OutputTooLarge {
        /// Bytes returned.
        size: usize,
        /// The cap.
        limit: u64,
    },
    /// Returned JSON that is not a `DetectorOutput`.
    #[error("returned invalid output: {0}")]
    BadOutput(String),
    /// Native detectors need an explicit opt-in.
    #[error("{0}: is a native library; native detectors run with full host privileges and load only with --allow-native")]
    NativeNotAllowed(PathBuf),
    /// A native library failed.
    #[error("{path}: native detector: {message}")]
    Native {
        /// The library.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl DetectorError {
    /// A short account for the agent's follow-up: what happened, without the
    /// backtrace or the detector's stderr (those are for the user, in the
    /// verdict's signal error and the log).
    pub fn for_agent(&self) -> String {
        match self {
            DetectorError::Timeout(t) => format!("the detector timed out after {t:?}"),
            DetectorError::OutOfTime(t) => {
                format!("the check ran out of time ({:.0} s)", t.as_secs_f64())
            }
            DetectorError::OutOfMemory(_) => "the detector ran out of memory".into(),
            DetectorError::Trap { .. } => "the detector crashed".into(),
            DetectorError::Reported(m) => {
                let first = m.lines().next().unwrap_or_default();
                format!(
                    "the detector reported: {}",
                    crate::host::log::truncate(first, 300)
                )
            }
            DetectorError::OutputTooLarge { .. } | DetectorError::BadOutput(_) => {
                "the detector returned unusable output".into()
            }
            _ => "the detector could not be started".into(),
        }
    }
}

fn supported() -> String {
    SUPPORTED_VERSIONS
        .iter()
        .map(|v| format!("critic:detector@{v}.x"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn stderr_note(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("\ndetector stderr (last lines):\n{}", stderr.trim_end())
    }
}

/// Limits and context for one call.
#[derive(Debug, Clone)]
pub struct CallLimits {
    /// Wall-clock deadline.
    pub timeout: Duration,
    /// Linear-memory cap, bytes.
    pub memory_bytes: u64,
    /// Cap on the returned JSON, bytes.
    pub output_bytes: u64,
    /// Cap on captured stdout and stderr, each, bytes.
    pub stdio_bytes: u64,
}

/// Who is calling, for capability checks and log tags.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// Skill name.
    pub skill: String,
    /// Signal name.
    pub signal: String,
    /// Capabilities in force.
    pub grants: Grants,
    /// Canonical workspace root for `read-file`.
    pub workspace: PathBuf,
    /// The finish's events, for the `events` and `event-raw` host functions.
    pub events: Arc<EventFeed>,
    /// Where the `log` capability puts this call's lines (the harness emits
    /// them once it knows the call counts).
    pub logs: Arc<Mutex<LogBuffer>>,
    /// Scratch copies for the `run` capabilities, shared by the check.
    pub runner: Arc<Runner>,
    /// The model for `llm-complete`, shared by the check.
    pub llm: Arc<LlmClient>,
    /// When the call's time is up; host calls never run past it.
    pub deadline: Instant,
}

impl CallContext {
    /// The lines logged so far, leaving the buffer empty.
    pub fn take_logs(&self) -> Vec<LogLine> {
        let mut buf = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *buf).into_lines()
    }
}

/// What a successful call produced besides the output JSON.
#[derive(Debug, Clone, Default)]
pub struct CallReport {
    /// Captured stdout (capped).
    pub stdout: String,
    /// Captured stderr (capped).
    pub stderr: String,
}

/// A process-wide engine with its epoch ticker and component cache.
pub struct Runtime {
    clock: Arc<EpochClock>,
    /// The settings of the engine that compiles. The engine that runs
    /// detectors has no compiler, so a load from the cache never builds
    /// Cranelift's tables (0.2 ms of a warm `critic check`); the compiling
    /// engine is made on the first miss.
    compile_config: Config,
    compiler: OnceLock<Result<Engine, String>>,
    /// Linked with [`BASIC_WASI`] only; made on first use.
    basic: OnceLock<Result<Linker<HostState>, String>>,
    /// Linked with all of WASI, for components that import more; made on
    /// first use.
    full: OnceLock<Result<Linker<HostState>, String>>,
    cache: ComponentCache,
}

/// The WASI interfaces (name prefixes) Rust's standard library imports in a
/// detector that touches neither files nor sockets: `wasi:cli` (stdio, exit,
/// environment, terminals), `wasi:io` streams, clocks and randomness. Linking
/// only these takes a third of the time linking all of WASI takes, which
/// every check would pay for interfaces no detector calls.
const BASIC_WASI: [&str; 4] = ["wasi:cli/", "wasi:io/", "wasi:clocks/", "wasi:random/"];

/// Host functions that need only the resource table (`wasi:io`).
struct HasTable;

impl wasmtime::component::HasData for HasTable {
    type Data<'a> = &'a mut ResourceTable;
}

/// A linker with the `critic:detector/host` interface and either
/// [`BASIC_WASI`] or all of WASI.
fn linker(engine: &Engine, full: bool) -> wasmtime::Result<Linker<HostState>> {
    use wasmtime_wasi::cli::{WasiCli, WasiCliView};
    use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
    use wasmtime_wasi::p2::bindings::{cli, clocks, random, sync::io};
    use wasmtime_wasi::random::{WasiRandom, WasiRandomView};
    let mut linker = Linker::<HostState>::new(engine);
    let l = &mut linker;
    if full {
        wasmtime_wasi::p2::add_to_linker_sync(l)?;
        // Replaced below by the clock whose waits end at the deadline.
        l.allow_shadowing(true);
    } else {
        io::error::add_to_linker::<_, HasTable>(l, |s| &mut s.table)?;
        io::poll::add_to_linker::<_, HasTable>(l, |s| &mut s.table)?;
        io::streams::add_to_linker::<_, HasTable>(l, |s| &mut s.table)?;
        let cli = <HostState as WasiCliView>::cli;
        cli::exit::add_to_linker::<_, WasiCli>(l, cli)?;
        cli::environment::add_to_linker::<_, WasiCli>(l, cli)?;
        cli::stdin::add_to_linker::<_, WasiCli>(l, cli)?;
        cli::stdout::add_to_linker::<_, WasiCli>(l, cli)?;
        cli::stderr::add_to_linker::<_, WasiCli>(l, cli)?;
        cli::terminal_input::add_to_linker::<_, WasiCli>(l, cli)?;
        cli::terminal_output::add_to_linker::<_, WasiCli>(l, cli)?;
        cli::terminal_stdin::add_to_linker::<_, WasiCli>(l, cli)?;
        cli::terminal_stdout::add_to_linker::<_, WasiCli>(l, cli)?;
        cli::terminal_stderr::add_to_linker::<_, WasiCli>(l, cli)?;
        let clocks = <HostState as WasiClocksView>::clocks;
        clocks::wall_clock::add_to_linker::<_, WasiClocks>(l, clocks)?;
        let random = <HostState as WasiRandomView>::random;
        random::random::add_to_linker::<_, WasiRandom>(l, random)?;
        random::insecure::add_to_linker::<_, WasiRandom>(l, random)?;
        random::insecure_seed::add_to_linker::<_, WasiRandom>(l, random)?;
    }
    clocks::monotonic_clock::add_to_linker::<_, DeadlineClock>(l, |s| ClockView {
        table: &mut s.table,
        deadline: s.ctx.as_ref().map(|c| c.deadline),
    })?;
    CriticDetector::add_to_linker::<HostState, HasSelf<HostState>>(l, |s| s)?;
    Ok(linker)
}

/// The engine and the thread that advances its epoch. Every loaded detector
/// holds it, so deadlines keep working for as long as any detector can run,
/// even after the [`Runtime`] that loaded it is gone.
struct EpochClock {
    engine: Engine,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// The stores of finished calls, when [`Runtime::short_lived`] defers
    /// their release; dropped with the clock.
    retired: Option<Mutex<Vec<Store<HostState>>>>,
}

impl EpochClock {
    /// Release a finished call's store now, or keep it for later.
    fn retire(&self, mut store: Store<HostState>) {
        match &self.retired {
            Some(kept) => {
                store.data_mut().ctx = None;
                kept.lock().unwrap_or_else(|p| p.into_inner()).push(store);
            }
            None => drop(store),
        }
    }
}

impl Drop for EpochClock {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Runtime {
    /// An engine with epoch interruption and a compile cache under `cache_dir`
    /// (`None` disables the cache). Each call maps its instance's memory and
    /// unmaps it before returning: for a long-running process that evaluates
    /// now and then, where a pool's reservation would not pay off.
    pub fn new(cache_dir: Option<&Path>) -> Result<Runtime, DetectorError> {
        Runtime::with_allocation(cache_dir, None, false)
    }

    /// Like [`Runtime::new`], for a process that evaluates one finish and
    /// exits, such as `critic check`: a finished call's instance is kept
    /// until the runtime (and every detector it loaded) is dropped, instead
    /// of being unmapped before the call returns. Unmapping then happens off
    /// the answer's path, or not at all when the process exits without
    /// dropping the runtime (the kernel tears the whole address space down
    /// at once, without interrupting the other cores to flush their TLBs).
    /// Memory grows with every call, so a long-lived host wants
    /// [`Runtime::new`] or [`Runtime::pooled`].
    pub fn short_lived(cache_dir: Option<&Path>) -> Result<Runtime, DetectorError> {
        Runtime::with_allocation(cache_dir, None, true)
    }

    /// Like [`Runtime::new`], for a process that evaluates many finishes (a
    /// host embedding the library, a server): instances take memory from a
    /// pool reserved up front instead of mapping and unmapping their own,
    /// which makes every call about 0.1 ms cheaper once the pool is set up
    /// (a few milliseconds, paid by the first calls). At most `calls`
    /// detector calls can run at once; one more fails with an error saying
    /// so. The pool reserves address space, not memory: about 8 GiB per
    /// call, which a `ulimit -v` may refuse.
    pub fn pooled(cache_dir: Option<&Path>, calls: u32) -> Result<Runtime, DetectorError> {
        let calls = calls.max(1);
        let mut pool = wasmtime::PoolingAllocationConfig::new();
        // A component built with the SDK has one memory and a few small
        // core instances and tables; the spare room is for other toolchains.
        pool.total_component_instances(calls)
            .total_core_instances(calls.saturating_mul(8))
            .total_memories(calls.saturating_mul(2))
            .total_tables(calls.saturating_mul(8))
            .max_memory_size(MAX_MEMORY_BYTES);
        Runtime::with_allocation(
            cache_dir,
            Some(wasmtime::InstanceAllocationStrategy::Pooling(pool)),
            false,
        )
    }

    fn with_allocation(
        cache_dir: Option<&Path>,
        allocation: Option<wasmtime::InstanceAllocationStrategy>,
        defer_release: bool,
    ) -> Result<Runtime, DetectorError> {
        let mut config = Config::new();
        config
            .wasm_component_model(true)
            .epoch_interruption(true)
            .cranelift_opt_level(wasmtime::OptLevel::Speed);
        // Compiling needs no instance pool, whose reservation is costly.
        let compile_config = config.clone();
        if let Some(allocation) = allocation {
            config.allocation_strategy(allocation);
        }
        config.enable_compiler(false);
        let load_err = |e: wasmtime::Error| DetectorError::Load {
            path: PathBuf::from("<engine>"),
            message: format!("{e:#}"),
        };
        let engine = Engine::new(&config).map_err(load_err)?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let engine = engine.clone();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("critic-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::park_timeout(EPOCH_TICK);
                        engine.increment_epoch();
                    }
                })
                .map_err(|e| DetectorError::Load {
                    path: PathBuf::from("<engine>"),
                    message: format!("cannot start the epoch thread: {e}"),
                })?
        };
        let cache = ComponentCache::new(&engine, cache_dir);
        Ok(Runtime {
            compile_config,
            compiler: OnceLock::new(),
            clock: Arc::new(EpochClock {
                engine,
                stop,
                thread: Some(thread),
                retired: defer_release.then(Mutex::default),
            }),
            basic: OnceLock::new(),
            full: OnceLock::new(),
            cache,
        })
    }

    /// Load a detector component: check it is a component of a supported world
    /// version, compile (or fetch from cache) and pre-link it.
    pub fn load(&self, path: &Path) -> Result<WasmDetector, DetectorError> {
        if let Some(detector) = self.load_cached(path)? {
            return Ok(detector);
        }
        let engine = &self.clock.engine;
        let key = self.cache.file_key(path);
        let bytes = read_component(path)?;
        let compiler = || {
            self.compiler
                .get_or_init(|| Engine::new(&self.compile_config).map_err(|e| format!("{e:#}")))
                .as_ref()
                .map_err(|message| wasmtime::format_err!("cannot make the compiler: {message}"))
        };
        let (component, outcome) = self
            .cache
            .load(engine, compiler, key.as_ref(), &bytes)
            .map_err(|e| load_error(path, e))?;
        self.link(path, component, outcome)
    }

    /// [`Runtime::load`] when the compiled component is in the cache (a
    /// fraction of a millisecond); `None` when it would have to be compiled.
    pub fn load_cached(&self, path: &Path) -> Result<Option<WasmDetector>, DetectorError> {
        // A cache entry was compiled from this very file, so it passed the
        // checks `load` makes when it was made.
        let Some(component) = self
            .cache
            .file_key(path)
            .and_then(|k| self.cache.cached(&self.clock.engine, &k))
        else {
            return Ok(None);
        };
        self.link(path, component, CacheOutcome::Hit).map(Some)
    }

    fn link(
        &self,
        path: &Path,
        component: Component,
        outcome: CacheOutcome,
    ) -> Result<WasmDetector, DetectorError> {
        let engine = &self.clock.engine;
        let load_err = |e| load_error(path, e);
        let version = detector_version(engine, &component, path)?;
        let full = component.component_type().imports(engine).any(|(name, _)| {
            name.starts_with("wasi:") && !BASIC_WASI.iter().any(|p| name.starts_with(p))
        });
        let linker = if full { &self.full } else { &self.basic }
            .get_or_init(|| linker(engine, full).map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|message| DetectorError::Load {
                path: PathBuf::from("<engine>"),
                message: message.clone(),
            })?;
        let pre = linker.instantiate_pre(&component).map_err(load_err)?;
        let pre = CriticDetectorPre::new(pre).map_err(load_err)?;
        Ok(WasmDetector {
            clock: self.clock.clone(),
            pre,
            path: path.to_path_buf(),
            version,
            cache: outcome,
        })
    }
}

fn load_error(path: &Path, e: wasmtime::Error) -> DetectorError {
    DetectorError::Load {
        path: path.to_path_buf(),
        message: format!("{e:#}"),
    }
}

/// The bytes of a regular file of at most
/// [`crate::skill::MAX_DETECTOR_BYTES`], once its header says it is a
/// component: a huge or endless file is refused before it is read.
fn read_component(path: &Path) -> Result<Vec<u8>, DetectorError> {
    use std::io::Read;
    let io = |source| DetectorError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Opened without blocking: a FIFO swapped in after the manifest's check
    // must not hang the loader.
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::File::options()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(io)?
    };
    let meta = file.metadata().map_err(io)?;
    let limit = crate::skill::MAX_DETECTOR_BYTES;
    if !meta.is_file() || meta.len() > limit {
        return Err(DetectorError::NotComponent {
            path: path.to_path_buf(),
            what: "not a regular file of at most 64 MiB",
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    let mut file = file.take(limit);
    (&mut file).take(8).read_to_end(&mut bytes).map_err(io)?;
    check_header(path, &bytes)?;
    file.read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
}

/// `\0asm` then a version/layer word: 1/0 for core modules, 0xd/1 for components.
fn check_header(path: &Path, bytes: &[u8]) -> Result<(), DetectorError> {
    let not = |what| DetectorError::NotComponent {
        path: path.to_path_buf(),
        what,
    };
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(not("not a WebAssembly file"));
    }
    match (&bytes[4..6], &bytes[6..8]) {
        (_, [1, 0]) => Ok(()),
        ([1, 0], [0, 0]) => Err(not("a core WebAssembly module, not a component")),
        _ => Err(not("an unknown WebAssembly encoding")),
    }
}

fn detector_version(
    engine: &Engine,
    component: &Component,
    path: &Path,
) -> Result<String, DetectorError> {
    let ty = component.component_type();
    let names: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
    let Some(found) = names
        .iter()
        .find_map(|n| n.strip_prefix(DETECTOR_INTERFACE))
    else {
        return Err(DetectorError::NotDetector {
            path: path.to_path_buf(),
            exports: if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            },
        });
    };
    let version = found.strip_prefix('@').unwrap_or("unversioned").to_string();
    if !SUPPORTED_VERSIONS
        .iter()
        .any(|v| version.strip_prefix(v).is_some_and(|r| r.starts_with('.')))
    {
        return Err(DetectorError::WrongVersion {
            path: path.to_path_buf(),
            found: version,
        });
    }
    Ok(version)
}

/// A loaded, pre-linked detector component.
pub struct WasmDetector {
    clock: Arc<EpochClock>,
    pre: CriticDetectorPre<HostState>,
    path: PathBuf,
    version: String,
    cache: CacheOutcome,
}

impl WasmDetector {
    /// The world version the component was built for.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether loading hit the compile cache.
    pub fn cache_outcome(&self) -> CacheOutcome {
        self.cache
    }

    /// The component file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Call `detect(input)` in a fresh store under `limits`.
    pub fn call(
        &self,
        input: &str,
        limits: &CallLimits,
        ctx: &CallContext,
    ) -> Result<(String, CallReport), DetectorError> {
        let stdout = CappedPipe::new(limits.stdio_bytes as usize);
        let stderr = CappedPipe::new(limits.stdio_bytes as usize);
        let wasi = WasiCtxBuilder::new()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .build();
        let state = HostState {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryCap {
                limit: limits.memory_bytes,
                hit: false,
            },
            ctx: Some(ctx.clone()),
        };
        let mut store = Store::new(&self.clock.engine, state);
        store.limiter(|s| &mut s.limiter);
        let ticks = limits.timeout.as_nanos().div_ceil(EPOCH_TICK.as_nanos()) as u64 + 1;
        store.set_epoch_deadline(ticks);
        let instance = self.pre.instantiate(&mut store);
        if let Some(full) = instance
            .as_ref()
            .err()
            .and_then(|e| e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>())
        {
            return Err(DetectorError::Busy(full.to_string()));
        }
        let result =
            instance.and_then(|b| b.critic_detector_detector().call_detect(&mut store, input));
        let memory_cap_hit = store.data().limiter.hit;
        self.clock.retire(store);
        let report = CallReport {
            stdout: stdout.text(),
            stderr: stderr.text(),
        };
        if !report.stderr.is_empty() {
            let lines: Vec<_> = report
                .stderr
                .lines()
                .map(crate::sys::terminal_text::one_line)
                .collect();
            tracing::debug!(signal = %ctx.signal, "detector stderr:\n  | {}", lines.join("\n  | "));
        }
        match result {
            Ok(Ok(out)) => {
                if out.len() as u64 > limits.output_bytes {
                    return Err(DetectorError::OutputTooLarge {
                        size: out.len(),
                        limit: limits.output_bytes,
                    });
                }
                Ok((out, report))
            }
            Ok(Err(message)) => Err(DetectorError::Reported(crate::host::log::truncate(
                &message,
                MAX_ERROR_BYTES,
            ))),
            Err(e) => {
                if memory_cap_hit {
                    return Err(DetectorError::OutOfMemory(limits.memory_bytes));
                }
                if matches!(
                    e.downcast_ref::<wasmtime::Trap>(),
                    Some(wasmtime::Trap::Interrupt)
                ) || e
                    .downcast_ref::<crate::detector::wasm::deadline_clock::DeadlineExceeded>()
                    .is_some()
                {
                    return Err(DetectorError::Timeout(limits.timeout));
                }
                Err(DetectorError::Trap {
                    message: format!("{e:#}"),
                    stderr: tail(&report.stderr, 20),
                })
            }
        }
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

struct MemoryCap {
    limit: u64,
    hit: bool,
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.limit {
            self.hit = true;
            wasmtime::bail!("memory limit of {} bytes reached", self.limit);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Tables hold function references; a million is far beyond any detector.
        Ok(desired <= 1_000_000)
    }
}

struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: MemoryCap,
    /// `None` once the call is over: a store kept by [`Runtime::short_lived`]
    /// must not keep the check's scratch copies and clients alive.
    ctx: Option<CallContext>,
}

impl HostState {
    /// The context of the call in progress.
    fn call(&self) -> &CallContext {
        self.ctx
            .as_ref()
            .expect("host functions run only during a call")
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl critic::detector::host::Host for HostState {
    fn log(&mut self, level: LogLevel, message: String) {
        if let Err(e) = self.call().grants.check(Capability::Log) {
            tracing::debug!(signal = %self.call().signal, "dropped log line: {e}");
            return;
        }
        let level = match level {
            LogLevel::Trace => Level::Trace,
            LogLevel::Debug => Level::Debug,
            LogLevel::Info => Level::Info,
            LogLevel::Warn => Level::Warn,
            LogLevel::Error => Level::Error,
        };
        self.call()
            .logs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(level, &message);
    }

    fn read_file(&mut self, path: String) -> Result<Vec<u8>, String> {
        self.call().grants.check(Capability::ReadFile)?;
        crate::host::read_file::read(&self.call().workspace, &path)
    }

    fn run(&mut self, request: String) -> Result<String, String> {
        self.call().grants.check(Capability::Run)?;
        self.call().runner.run(&request, self.call().deadline)
    }

    fn run_matrix(&mut self, requests: String) -> Result<String, String> {
        self.call().grants.check(Capability::RunMatrix)?;
        self.call()
            .runner
            .run_matrix(&requests, self.call().deadline)
    }

    fn llm_complete(&mut self, requests: String) -> Result<String, String> {
        self.call().grants.check(Capability::LlmComplete)?;
        self.call()
            .llm
            .complete_json(&requests, self.call().deadline)
    }

    fn events(&mut self) -> String {
        self.call().events.lean_json().to_string()
    }

    fn event_raw(&mut self, index: u32) -> Option<String> {
        self.call().events.raw(index as usize)
    }

    fn event_count(&mut self) -> u32 {
        u32::try_from(self.call().events.len()).unwrap_or(u32::MAX)
    }

    fn events_range(&mut self, start: u32, end: u32) -> String {
        self.call().events.lean_range(start as usize, end as usize)
    }
}

#[cfg(test)]
mod tests;
