//! [`Service`]: a warm host for many checks (`critic serve`, a program
//! embedding the library). Skills, their compiled detectors and one pooled
//! runtime stay loaded across checks; a skill whose manifest or detector
//! files changed on disk is loaded again, never served stale. State lives in
//! the same on-disk store, under the same locks, as `critic check`'s, so
//! both can judge one session's finishes in any interleaving.

use crate::detector::wasm::Runtime;
use crate::detector::Detector;
use crate::evaluate::scorer::{load_detectors, SkillCritic};
use crate::evaluate::state::StateStore;
use crate::evaluate::verdict::Verdict;
use crate::evaluate::{decide, Finish};
use crate::run::inputs::{load_events, read_patch_file, state_root, workspace_root};
use crate::run::{CheckRequest, HostSettings};
use crate::skill::{self, Skill, MANIFEST_FILE};
use crate::workspace::{TestClassifier, Workspace};
use crate::Error;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Detector calls the pooled runtime holds memory for at once; more wait
/// for none but fail, so this is well above what the server's concurrency
/// times a skill's signals needs.
const POOLED_CALLS: u32 = 256;

/// How long after a skill file changed its load stays suspect: a file
/// rewritten within the same timestamp tick and at the same size looks
/// unchanged to `stat`, so such a load is redone on the next check (git's
/// "racily clean" rule).
const RACY_WINDOW: Duration = Duration::from_secs(2);

/// A warm host: checks many finishes with skills loaded once.
pub struct Service {
    runtime: Runtime,
    settings: HostSettings,
    skills: Mutex<HashMap<PathBuf, Arc<LoadedSkill>>>,
}

/// A skill with everything a check needs from it, and the files it came from.
struct LoadedSkill {
    skill: Arc<Skill>,
    detectors: Arc<[Detector]>,
    classifier: TestClassifier,
    files: Vec<(PathBuf, Option<FileStamp>)>,
    /// Some file changed so shortly before the load that a later change
    /// could go unseen.
    racy: bool,
}

/// What `stat` says about a file, enough to see it replaced or rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    fn of(path: &Path) -> Option<FileStamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(FileStamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }

    fn changed_since(&self, t: SystemTime) -> bool {
        let (secs, nanos) = self.ctime.max(self.mtime);
        let changed = SystemTime::UNIX_EPOCH
            + Duration::from_secs(secs.max(0) as u64)
            + Duration::from_nanos(nanos.max(0) as u64);
        changed + RACY_WINDOW > t
    }
}

impl Service {
    /// A service running checks under the operator's `settings` (a request's
    /// own [`CheckRequest::host`] is ignored).
    pub fn new(settings: HostSettings) -> Result<Service, Error> {
        let cache = settings.cache_dir.as_deref();
        // A pool reserves address space up front, which a `ulimit -v` may
        // refuse; a plain runtime then does the same work a little slower.
        let runtime = Runtime::pooled(cache, POOLED_CALLS)
            .or_else(|e| {
                tracing::warn!("no pooled runtime ({e}); instances map their own memory");
                Runtime::new(cache)
            })
            .map_err(|e| Error::Internal(e.to_string()))?;
        Ok(Service {
            runtime,
            settings,
            skills: Mutex::new(HashMap::new()),
        })
    }

    /// The operator's settings every check runs under.
    pub fn settings(&self) -> &HostSettings {
        &self.settings
    }

    /// Judge the finish `request` names.
    pub fn check(&self, request: &CheckRequest) -> Result<Verdict, Error> {
        let skill = self.skill(&request.skill)?;
        let events = load_events(request)?;
        let (ws, diff) = match &request.patch {
            Some(file) => {
                let ws = Workspace::open(&request.workspace)?;
                let base = match &request.base {
                    Some(rev) => ws.resolve(rev)?,
                    None => ws.head.clone(),
                };
                let diff = read_patch_file(file, base)?;
                (ws, diff)
            }
            None => Workspace::start_diff(&request.workspace, request.base.as_deref())?.finish()?,
        };
        let patch = diff.parse(&skill.classifier)?;
        let critic = SkillCritic::with_detectors(
            skill.skill.clone(),
            skill.detectors.clone(),
            StateStore::new(state_root(request, &ws)?),
            request,
            &self.settings,
        );
        let finish = Finish {
            events: events.into(),
            patch,
            workspace: workspace_root(&ws)?,
            session: request.session.clone(),
        };
        decide(&critic, &finish)
    }

    /// The skill in `dir`, loaded now unless a load of its current files is
    /// at hand.
    fn skill(&self, dir: &Path) -> Result<Arc<LoadedSkill>, Error> {
        let key = dir
            .canonicalize()
            .map_err(|source| skill::ManifestError::Io {
                path: dir.join(MANIFEST_FILE),
                source,
            })?;
        let cached = self.lock().get(&key).cloned();
        if let Some(loaded) = cached {
            let current = !loaded.racy
                && loaded
                    .files
                    .iter()
                    .all(|(path, stamp)| FileStamp::of(path) == *stamp);
            if current {
                return Ok(loaded);
            }
            tracing::info!(skill = %key.display(), "skill changed on disk; loading it again");
        }
        // Loaded outside the lock: a compile takes long, and other skills'
        // checks must not wait for it. Two checks racing here both load;
        // the later insert wins, and both are current.
        let loaded = Arc::new(self.load(&key)?);
        self.lock().insert(key, loaded.clone());
        Ok(loaded)
    }

    fn load(&self, dir: &Path) -> Result<LoadedSkill, Error> {
        let started = SystemTime::now();
        // Stamped before reading, so a change during the load shows later.
        let manifest_path = dir.join(MANIFEST_FILE);
        let manifest_stamp = FileStamp::of(&manifest_path);
        let skill = skill::load(dir)?;
        let mut files = vec![(manifest_path, manifest_stamp)];
        for signal in &skill.manifest.signals {
            let path = signal.detector_path.clone();
            let stamp = FileStamp::of(&path);
            files.push((path, stamp));
        }
        let classifier = TestClassifier::new(&skill.manifest.test_patterns).map_err(|e| {
            Error::Usage(format!(
                "{}: test_patterns: {e}",
                skill.manifest_path.display()
            ))
        })?;
        let detectors = load_detectors(&skill, &self.runtime, self.settings.allow_native)?;
        let racy = files
            .iter()
            .any(|(_, stamp)| stamp.as_ref().is_none_or(|s| s.changed_since(started)));
        Ok(LoadedSkill {
            skill: Arc::new(skill),
            detectors: detectors.into(),
            classifier,
            files,
            racy,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Arc<LoadedSkill>>> {
        self.skills.lock().unwrap_or_else(|p| p.into_inner())
    }
}
