//! Round state that survives between finish calls.
//!
//! Layout: `<state dir>/<skill>/<session>/` holds `harness.json` (iteration and
//! rejection counts, the instance key) and `signal-<name>.json` per signal (the
//! detector's own JSON). A session directory is guarded by an exclusive file
//! lock held for a whole check, so two checks on one session run one after the
//! other and neither loses the other's update. Writes are atomic (temp file,
//! fsync, rename). A file that does not parse is moved aside, never overwritten.
//!
//! One file is written without the lock: `locked-rejections`, one byte
//! appended for each rejection a hook gave while another check held the
//! session (see [`count_locked_rejection`]); they count toward the
//! session's cap like the ones `harness.json` records.
//!
//! The state directory lies outside the workspace, but an agent running as
//! the user can still reach it. So nothing here is opened in a way that
//! follows a link, waits on a FIFO or reads without bound: a session or
//! skill directory, or a state file, that is anything but what the critic
//! made (a link, FIFO, device, directory, a file with other hard links, a
//! file over its size cap) is tampering. It is moved aside and opening the
//! session fails with [`StateError::Tampered`], which a check counts as a
//! rejection of the finish (see [`crate::frontend::unjudged`]).

use crate::sys::bounded_read::read_regular_file_nofollow;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Version of the on-disk documents; bump on incompatible change.
pub const STATE_SCHEMA_VERSION: u32 = 1;

/// How long a check waits for another check on the same session by default.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(120);

/// Poll interval while waiting for a session lock.
const LOCK_POLL: Duration = Duration::from_millis(20);

/// The file of a session directory counting the rejections given while
/// another check held the session, one byte each.
const LOCKED_REJECTIONS: &str = "locked-rejections";

/// The largest `harness.json` read: it holds a few counters and names.
const MAX_HARNESS_BYTES: u64 = 1 << 20;

/// The largest detector state read back (`signal-*.json`).
const MAX_SIGNAL_BYTES: u64 = 256 << 20;

/// Why state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// File system failure.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Another check holds the session.
    #[error("{lock}: another `critic check` is running on session {session:?}; waited {waited:?} (wait for it to finish, or raise --lock-timeout)")]
    Locked {
        /// The lock file.
        lock: PathBuf,
        /// The session.
        session: String,
        /// How long this check waited.
        waited: Duration,
    },
    /// Something other than what the critic made lies where it keeps a
    /// session's state.
    #[error("{path}: {found} where the critic keeps this session's state (the critic's state is not the agent's to touch); {handled}")]
    Tampered {
        /// The place.
        path: PathBuf,
        /// What was there.
        found: String,
        /// What the critic did about it.
        handled: String,
    },
}

/// The harness's own per-session record.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HarnessState {
    /// `STATE_SCHEMA_VERSION`.
    pub schema_version: u32,
    /// Skill name.
    pub skill: String,
    /// Session id.
    pub session: String,
    /// Base commit and workspace; a change resets the session.
    pub instance: String,
    /// Finish calls evaluated so far (counted as each one starts).
    pub iteration: u32,
    /// How many of them were rejected.
    pub rejections: u32,
    /// Rejections in the session across instances: a new base commit (the
    /// agent committed) resets the round, never this count, which a
    /// request's `max_rejections` caps.
    #[serde(default)]
    pub session_rejections: u32,
}

/// A session as its record on disk says.
#[derive(Debug, Clone)]
pub struct SessionRecord {
    /// Its directory.
    pub dir: PathBuf,
    /// Its harness record: skill, session id, count, rejections.
    pub harness: HarnessState,
}

/// One signal's persisted state.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SignalState {
    /// [`STATE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Skill name.
    pub skill: String,
    /// Session id.
    pub session: String,
    /// Signal name.
    pub signal: String,
    /// Instance key at the time of writing.
    pub instance: String,
    /// The detector's state document.
    pub state: Value,
}

/// Where state lives.
#[derive(Debug, Clone)]
pub struct StateStore {
    root: PathBuf,
    durable: bool,
}

/// An open, locked session. Dropping it releases the lock.
#[derive(Debug)]
pub struct Session {
    dir: PathBuf,
    skill: String,
    session: String,
    instance: String,
    durable: bool,
    _lock: File,
    /// The harness record (reset when the instance changed).
    pub harness: HarnessState,
    /// Problems found and handled while opening (corrupt files moved aside, resets).
    pub warnings: Vec<String>,
    /// Rejections given while another check held the session, when it was
    /// opened.
    locked_rejections: u32,
}

impl StateStore {
    /// A store rooted at `root` (created on first use).
    pub fn new(root: impl Into<PathBuf>) -> StateStore {
        StateStore {
            root: root.into(),
            durable: true,
        }
    }

    /// Skip fsync on writes: for ephemeral sessions (tests, benchmarks, an
    /// embedding program that keeps its own records), where a crash may lose the
    /// last update. Writes stay atomic either way.
    pub fn without_fsync(mut self) -> StateStore {
        self.durable = false;
        self
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Lock and open the state of (`skill`, `session`) for `instance`, waiting
    /// up to `lock_timeout` for a concurrent check.
    pub fn open(
        &self,
        skill: &str,
        session: &str,
        instance: &str,
        lock_timeout: Duration,
    ) -> Result<Session, StateError> {
        let session = self.open_inner(skill, session, Some(instance), lock_timeout, true)?;
        Ok(session.expect("opening with a reset allowed always gives a session"))
    }

    /// [`StateStore::open`] on a guess of the instance: `None`, leaving the
    /// session's state as it is, when it belongs to another instance (opening
    /// would reset it).
    pub(crate) fn open_same_instance(
        &self,
        skill: &str,
        session: &str,
        instance: &str,
        lock_timeout: Duration,
    ) -> Result<Option<Session>, StateError> {
        self.open_inner(skill, session, Some(instance), lock_timeout, false)
    }

    /// [`StateStore::open`] when the finish's instance cannot be told (its
    /// work tree is broken): the session's state as it is, whatever
    /// instance it was for, else a new one for `fallback`. Nothing is reset,
    /// so a finish the agent made unreadable cannot restart the count.
    pub(crate) fn open_current_instance(
        &self,
        skill: &str,
        session: &str,
        fallback: &str,
        lock_timeout: Duration,
    ) -> Result<Session, StateError> {
        let session = self.open_inner(skill, session, None, lock_timeout, true)?;
        let mut session = session.expect("opening with a reset allowed always gives a session");
        if session.harness.instance.is_empty() {
            session.harness.instance = fallback.to_string();
            session.instance = fallback.to_string();
        }
        Ok(session)
    }

    /// The directory of (`skill`, `session`).
    pub fn session_dir(&self, skill: &str, session: &str) -> PathBuf {
        self.root.join(skill).join(dir_name(session))
    }

    /// Every session recorded under the root, by skill then session (what
    /// `critic state list` shows); a record that cannot be read is left
    /// out with a warning, never moved or changed.
    pub fn sessions(&self) -> Vec<SessionRecord> {
        let mut found = Vec::new();
        let dirs = |dir: &Path| -> Vec<PathBuf> {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            entries.sort();
            entries
        };
        for skill_dir in dirs(&self.root) {
            for dir in dirs(&skill_dir) {
                let path = dir.join("harness.json");
                match crate::sys::bounded_read::read_regular_file_nofollow(&path, MAX_HARNESS_BYTES)
                    .map_err(|e| e.to_string())
                    .and_then(|b| {
                        serde_json::from_slice::<HarnessState>(&b).map_err(|e| e.to_string())
                    }) {
                    // A record is data, never a path: one whose names lead
                    // anywhere but where it lies was not written here.
                    Ok(harness)
                        if !plain_component(&harness.skill)
                            || self.session_dir(&harness.skill, &harness.session) != dir =>
                    {
                        tracing::warn!(
                            "{}: names skill {:?}, session {:?}, whose place is not this \
                             directory; left as it is",
                            path.display(),
                            harness.skill,
                            harness.session
                        )
                    }
                    Ok(harness) => found.push(SessionRecord { dir, harness }),
                    Err(e) if !path.exists() => tracing::debug!("{}: {e}", path.display()),
                    Err(e) => tracing::warn!("{}: {e}; left as it is", path.display()),
                }
            }
        }
        found
    }

    /// Forget (`skill`, `session`): its count and every signal's state go,
    /// with the session's lock held (waiting up to `lock_timeout` for a
    /// check that holds it). Whether there was anything to forget.
    pub fn reset(
        &self,
        skill: &str,
        session: &str,
        lock_timeout: Duration,
    ) -> Result<bool, StateError> {
        if !plain_component(skill) {
            return Err(StateError::Tampered {
                path: self.root.clone(),
                found: format!("a skill named {skill:?}, which is not a plain directory name"),
                handled: "nothing was reset".into(),
            });
        }
        let dir = self.session_dir(skill, session);
        let mut tampered = Vec::new();
        for place in [self.root.join(skill), dir.clone()] {
            guard_dir(&place, &mut tampered)?;
        }
        if let Some(first) = tampered.into_iter().next() {
            return Err(first);
        }
        if !dir.is_dir() {
            return Ok(false);
        }
        let _lock = lock(&dir.join(".lock"), session, lock_timeout)?;
        let io = |path: &Path, source| StateError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut forgot = false;
        for entry in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
            let entry = entry.map_err(|e| io(&dir, e))?;
            if entry.file_name() == ".lock" {
                continue;
            }
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => crate::sys::remove_tree::remove_tree(&path),
                _ => std::fs::remove_file(&path),
            }
            .map_err(|e| io(&path, e))?;
            forgot = true;
        }
        Ok(forgot)
    }

    /// Open (`skill`, `session`) for `instance`, resetting state recorded
    /// for another one if `may_reset` (else `None`); `instance: None` takes
    /// the recorded one, whatever it is (empty when there is none).
    fn open_inner(
        &self,
        skill: &str,
        session: &str,
        instance: Option<&str>,
        lock_timeout: Duration,
        may_reset: bool,
    ) -> Result<Option<Session>, StateError> {
        let skill_dir = self.root.join(skill);
        // The critic made everything below the skill's directory and can
        // use it: what it cannot (a mode the agent took away, a file in the
        // way of a directory) is tampering too, never a reason to let the
        // agent stop.
        self.open_unchecked(skill, session, instance, lock_timeout, may_reset)
            .map_err(|e| match e {
                StateError::Io { path, source } if path.starts_with(&skill_dir) => {
                    StateError::Tampered {
                        path,
                        found: format!("something the critic cannot use ({source})"),
                        handled: "left as it is".into(),
                    }
                }
                e => e,
            })
    }

    /// [`StateStore::open_inner`], with the errors as they come.
    fn open_unchecked(
        &self,
        skill: &str,
        session: &str,
        instance: Option<&str>,
        lock_timeout: Duration,
        may_reset: bool,
    ) -> Result<Option<Session>, StateError> {
        if !plain_component(skill) {
            return Err(StateError::Tampered {
                path: self.root.clone(),
                found: format!("a skill named {skill:?}, which is not a plain directory name"),
                handled: "nothing was reset".into(),
            });
        }
        let dir = self.session_dir(skill, session);
        let mut tampered = Vec::new();
        for place in [self.root.join(skill), dir.clone()] {
            guard_dir(&place, &mut tampered)?;
        }
        std::fs::create_dir_all(&dir).map_err(|source| StateError::Io {
            path: dir.clone(),
            source,
        })?;
        guard_files(&dir, &mut tampered)?;
        if let Some(first) = tampered.into_iter().next() {
            return Err(first);
        }
        let lock_path = dir.join(".lock");
        let lock = lock(&lock_path, session, lock_timeout)?;
        let mut warnings = Vec::new();
        let harness_path = dir.join("harness.json");
        let mut harness =
            read_json::<HarnessState>(&harness_path, MAX_HARNESS_BYTES, &mut warnings)?
                .unwrap_or_default();
        let recorded = harness.instance.clone();
        let instance = instance.unwrap_or(&recorded);
        let fresh = HarnessState {
            schema_version: STATE_SCHEMA_VERSION,
            skill: skill.to_string(),
            session: session.to_string(),
            instance: instance.to_string(),
            iteration: 0,
            rejections: 0,
            // Kept across instances of the same session.
            session_rejections: if harness.session == session {
                harness.session_rejections
            } else {
                0
            },
        };
        if harness.schema_version != STATE_SCHEMA_VERSION
            || harness.instance != instance
            || harness.session != session
        {
            if harness.schema_version != 0 && !may_reset {
                return Ok(None);
            }
            if harness.schema_version != 0 {
                let msg = format!(
                    "state of session {session:?} was for another instance or schema; starting over"
                );
                tracing::info!("{msg}");
                warnings.push(msg);
            }
            clear_signals(&dir)?;
            harness = fresh;
        }
        let locked_rejections = locked_rejections(&dir)?;
        Ok(Some(Session {
            dir,
            skill: skill.to_string(),
            session: session.to_string(),
            instance: instance.to_string(),
            durable: self.durable,
            _lock: lock,
            harness,
            warnings,
            locked_rejections,
        }))
    }
}

impl Session {
    /// The persisted state of `signal`, `null` when there is none.
    pub fn signal_state(&mut self, signal: &str) -> Result<Value, StateError> {
        let path = self.signal_path(signal);
        let doc = read_json::<SignalState>(&path, MAX_SIGNAL_BYTES, &mut self.warnings)?;
        Ok(match doc {
            Some(d) if d.instance == self.instance && d.schema_version == STATE_SCHEMA_VERSION => {
                d.state
            }
            _ => Value::Null,
        })
    }

    /// Persist `state` for `signal`.
    pub fn save_signal(&self, signal: &str, state: Value) -> Result<(), StateError> {
        let doc = SignalState {
            schema_version: STATE_SCHEMA_VERSION,
            skill: self.skill.clone(),
            session: self.session.clone(),
            signal: signal.to_string(),
            instance: self.instance.clone(),
            state,
        };
        write_json(&self.signal_path(signal), &doc, self.durable)
    }

    /// Persist the harness record.
    pub fn save_harness(&self) -> Result<(), StateError> {
        write_json(&self.dir.join("harness.json"), &self.harness, self.durable)
    }

    /// The session directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The instance (base commit and workspace) the state belongs to.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Rejections given while another check held the session (see
    /// `count_locked_rejection`); they count toward the session's cap.
    pub fn locked_rejections(&self) -> u32 {
        self.locked_rejections
    }

    fn signal_path(&self, signal: &str) -> PathBuf {
        self.dir.join(format!("signal-{}.json", dir_name(signal)))
    }
}

/// Whether `name` is one plain path component under the root: not empty,
/// `.` or `..`, with no separator (an absolute name would replace the root).
fn plain_component(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// A file-system-safe name: the id itself when it is plain, else a cleaned
/// prefix, `~` and a hash of the whole id. A plain id never holds `~`, so
/// no id kept as it is can be another's cleaned form.
fn dir_name(id: &str) -> String {
    let plain = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !id.starts_with('.');
    if plain {
        return id.to_string();
    }
    use sha2::{Digest, Sha256};
    let clean: String = id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .take(32)
        .collect();
    format!(
        "{clean}~{}",
        &hex::encode(Sha256::digest(id.as_bytes()))[..16]
    )
}

fn lock(path: &Path, session: &str, timeout: Duration) -> Result<File, StateError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|source| opening_error(path, source))?;
    own_file(&file, path)?;
    let started = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => {
                if started.elapsed() >= timeout {
                    return Err(StateError::Locked {
                        lock: path.to_path_buf(),
                        session: session.to_string(),
                        waited: started.elapsed(),
                    });
                }
                std::thread::sleep(LOCK_POLL);
            }
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(StateError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
    }
}

/// The session in `dir` as far as it can be read without its lock: the
/// harness record the last check left (the default when there is none, or
/// it does not parse, which the next check that opens the session
/// handles), and the rejections given while it was locked.
pub(crate) fn peek(dir: &Path) -> Result<(HarnessState, u32), StateError> {
    let recorded = read_regular_file_nofollow(&dir.join("harness.json"), MAX_HARNESS_BYTES)
        .ok()
        .and_then(|text| serde_json::from_slice::<HarnessState>(&text).ok())
        .unwrap_or_default();
    Ok((recorded, locked_rejections(dir)?))
}

/// Count a rejection given to a finish of the session in `dir` while
/// another check held its lock (a check the agent's slow code kept past
/// its time, say). Such a rejection cannot wait for the lock, so it is
/// appended to a file of its own, which every check adds to the session's
/// rejections when it opens the session: the cap holds for these too.
pub(crate) fn count_locked_rejection(dir: &Path) -> Result<(), StateError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(LOCKED_REJECTIONS);
    // One `write` of one byte in append mode: concurrent hooks each add
    // theirs, and none is lost.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .map_err(|source| opening_error(&path, source))?;
    own_file(&file, &path)?;
    file.write_all(b"x")
        .map_err(|source| StateError::Io { path, source })
}

/// How many rejections [`count_locked_rejection`] counted in `dir`.
fn locked_rejections(dir: &Path) -> Result<u32, StateError> {
    let path = dir.join(LOCKED_REJECTIONS);
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if !made_by_the_critic(&meta) => Err(StateError::Tampered {
            found: describe(&meta),
            path,
            handled: "the next check moves it aside".into(),
        }),
        Ok(meta) => Ok(u32::try_from(meta.len()).unwrap_or(u32::MAX)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(source) => Err(StateError::Io { path, source }),
    }
}

fn clear_signals(dir: &Path) -> Result<(), StateError> {
    let io = |source| StateError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with("signal-") && name.ends_with(".json") {
            std::fs::remove_file(&path).map_err(|source| StateError::Io {
                path: path.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

/// The default state directory of the workspace at `workspace`: under the
/// user's state directory (`$XDG_STATE_HOME`, else `~/.local/state`), one
/// directory per workspace, named by its last component and a hash of its
/// canonical path. `None` when neither variable is set.
pub fn default_root(workspace: &Path) -> Option<PathBuf> {
    use sha2::{Digest, Sha256};
    use std::os::unix::ffi::OsStrExt;
    let path = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let hash = hex::encode(&Sha256::digest(path.as_os_str().as_bytes())[..8]);
    let name: String = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    crate::sys::private_dir::user_dir("XDG_STATE_HOME", ".local/state")
        .map(|d| d.join("workspaces").join(format!("{name}-{hash}")))
}

/// Read a JSON document; a missing file is `None`, a corrupt one is moved aside
/// (with a warning) and also `None`.
fn read_json<T: for<'de> Deserialize<'de>>(
    path: &Path,
    max: u64,
    warnings: &mut Vec<String>,
) -> Result<Option<T>, StateError> {
    let text = match read_regular_file_nofollow(path, max) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // Swapped in since the session was opened: set aside like the rest.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData || tampering_errno(&e) => {
            let handled = set_aside(path).map_or_else(
                |e| e.to_string(),
                |aside| format!("moved it to {}", aside.display()),
            );
            return Err(StateError::Tampered {
                path: path.to_path_buf(),
                found: format!("something else than a state file ({e})"),
                handled,
            });
        }
        Err(source) => {
            return Err(StateError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    // Bytes, not text: a file that is not UTF-8 is corrupt like any other.
    match serde_json::from_slice(&text) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            let stamp = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0);
            let aside = path.with_extension(format!("json.corrupt-{stamp}"));
            std::fs::rename(path, &aside).map_err(|source| StateError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            // The file may be a symlink to some secret (in a state directory
            // a request named, or another party can write): its place and
            // what was expected, never its text.
            let msg = format!(
                "{}:{}:{}: corrupt state file ({}); moved it to {} and started this signal fresh",
                path.display(),
                e.line(),
                e.column(),
                crate::sys::json_error::describe(&e),
                aside.display()
            );
            tracing::warn!("{msg}");
            warnings.push(msg);
            Ok(None)
        }
    }
}

/// Whether `meta` (not followed) is a file as the critic makes them: a
/// regular file with no other name.
fn made_by_the_critic(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_file() && meta.nlink() == 1
}

/// What `meta` (not followed) is, in words.
fn describe(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    if kind.is_symlink() {
        "a symbolic link".into()
    } else if kind.is_fifo() {
        "a FIFO".into()
    } else if kind.is_socket() {
        "a socket".into()
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device".into()
    } else if kind.is_dir() {
        "a directory".into()
    } else if meta.nlink() > 1 {
        format!("a file with {} hard links", meta.nlink())
    } else {
        "a file".into()
    }
}

/// Whether opening failed on what lies at the path rather than on the
/// file system: a link (`O_NOFOLLOW`), a FIFO with no reader
/// (`O_NONBLOCK`), a directory.
fn tampering_errno(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ELOOP | libc::ENXIO | libc::EISDIR | libc::ENOTDIR)
    )
}

/// The error of opening the state file `path`.
fn opening_error(path: &Path, source: std::io::Error) -> StateError {
    if tampering_errno(&source) {
        StateError::Tampered {
            path: path.to_path_buf(),
            found: format!("something else than a state file ({source})"),
            handled: "the next check moves it aside".into(),
        }
    } else {
        StateError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Refuse the opened `file` unless the critic made it (see
/// [`made_by_the_critic`]): a FIFO or device opened without blocking, or a
/// hard link to a file of the user's, is tampering.
fn own_file(file: &File, path: &Path) -> Result<(), StateError> {
    let meta = file.metadata().map_err(|source| StateError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if made_by_the_critic(&meta) {
        return Ok(());
    }
    Err(StateError::Tampered {
        path: path.to_path_buf(),
        found: describe(&meta),
        handled: "the next check moves it aside".into(),
    })
}

/// Rename `path` (never followed) to a name beside it that no state file
/// has; the new name.
fn set_aside(path: &Path) -> Result<PathBuf, StateError> {
    let stamp = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tampered-{stamp}"));
    let aside = path.with_file_name(name);
    std::fs::rename(path, &aside).map_err(|source| StateError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(aside)
}

/// Record `path` as tampered with (`found` says what it is), moving it
/// aside so the next opening finds the place clear.
fn tampered_with(path: &Path, found: String) -> StateError {
    let handled = match set_aside(path) {
        Ok(aside) => format!("moved it to {}", aside.display()),
        Err(e) => format!("could not move it aside ({e})"),
    };
    tracing::warn!(
        "{}: {found} in the critic's state; {handled}",
        path.display()
    );
    StateError::Tampered {
        path: path.to_path_buf(),
        found,
        handled,
    }
}

/// Check that the skill or session directory `dir`, if it exists, is a
/// directory (not a link to one); else set it aside and record it.
fn guard_dir(dir: &Path, tampered: &mut Vec<StateError>) -> Result<(), StateError> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_dir() => Ok(()),
        Ok(meta) => {
            tampered.push(tampered_with(dir, describe(&meta)));
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(StateError::Io {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// Check every state file of the session directory `dir` (see
/// [`made_by_the_critic`]; the data files also against their size cap);
/// set aside and record each that is not one.
fn guard_files(dir: &Path, tampered: &mut Vec<StateError>) -> Result<(), StateError> {
    let io = |source| StateError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let cap = match &*name {
            ".lock" | LOCKED_REJECTIONS => u64::MAX,
            "harness.json" => MAX_HARNESS_BYTES,
            n if n.starts_with("signal-") && n.ends_with(".json") => MAX_SIGNAL_BYTES,
            _ => continue,
        };
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).map_err(|source| StateError::Io {
            path: path.clone(),
            source,
        })?;
        if !made_by_the_critic(&meta) {
            tampered.push(tampered_with(&path, describe(&meta)));
        } else if meta.len() > cap {
            let found = format!(
                "a file of {} bytes (a state file holds at most {cap})",
                meta.len()
            );
            tampered.push(tampered_with(&path, found));
        }
    }
    Ok(())
}

fn write_json<T: Serialize>(path: &Path, value: &T, durable: bool) -> Result<(), StateError> {
    let io = |source| StateError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut text = serde_json::to_vec_pretty(value).map_err(|e| io(std::io::Error::other(e)))?;
    text.push(b'\n');
    crate::sys::atomic_file::write(path, &text, durable).map_err(io)
}

#[cfg(test)]
mod tests;
