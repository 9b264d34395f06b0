//! [`Service`]: a warm host for many checks (`critic serve`, a program
//! embedding the library). Skills, their compiled detectors and one
//! runtime stay loaded across checks; a skill whose manifest or detector
//! files changed on disk is loaded again, never served stale. State lives in
//! the same on-disk store, under the same locks, as `critic check`'s, so
//! both can judge one session's finishes in any interleaving.

use crate::detector::wasm::Runtime;
use crate::detector::Detector;
use crate::evaluate::error::Error;
use crate::evaluate::request::{CheckRequest, HostSettings};
use crate::evaluate::scorer::{load_detectors, SkillCritic};
use crate::evaluate::state::StateStore;
use crate::evaluate::verdict::Verdict;
use crate::evaluate::{decide, Finish};
use crate::frontend::inputs::{
    load_events, patch_file_diff, state_root, test_classifier, workspace_root,
};
use crate::skill::{self, Skill, MANIFEST_FILE};
use crate::workspace::{PendingDiff, TestClassifier, Workspace};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How long after a skill file changed its load stays suspect: a file
/// rewritten within the same timestamp tick and at the same size looks
/// unchanged to `stat`, so such a load is redone on the next check (git's
/// "racily clean" rule).
const RACY_WINDOW: Duration = Duration::from_secs(2);

/// Skills kept loaded at once; loading one more drops the one loaded
/// longest ago, so a server that sees many skills over a long session does
/// not keep every compiled component mapped.
const MAX_SKILLS: usize = 32;

/// A warm host: checks many finishes with skills loaded once.
pub struct Service {
    runtime: Runtime,
    settings: HostSettings,
    skills: Mutex<HashMap<PathBuf, Arc<LoadedSkill>>>,
    /// Held while a skill loads, so that checks arriving together for a
    /// skill not loaded yet compile it once, not once each.
    loading: Mutex<()>,
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
    /// When it was loaded.
    at: SystemTime,
}

/// A native detector cannot be loaded again in the same process: `dlopen` of
/// the same path hands back the library already mapped, so a changed one
/// would be served stale.
fn refuse_native_reload(stale: &LoadedSkill) -> Result<(), Error> {
    for (path, stamp) in &stale.files {
        if crate::detector::native::is_native(path) && FileStamp::of(path) != *stamp {
            return Err(Error::Usage(format!(
                "{}: a native detector changed on disk; a running server cannot load it again (restart critic serve)",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Where a check's patch comes from.
enum DiffSource<'a> {
    /// git's processes, started.
    Git(Box<PendingDiff>),
    /// A patch file the request names.
    File(&'a Path),
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
        // Not `Runtime::pooled`: its reservation of address space made every
        // git process the server starts slower to spawn, and the whole check
        // 1.8 ms slower (docs/PERFORMANCE.md), more than the pool saves.
        let runtime = Runtime::new(settings.cache_dir.as_deref())
            .map_err(|e| Error::Internal(e.to_string()))?;
        Ok(Service {
            runtime,
            settings,
            skills: Mutex::new(HashMap::new()),
            loading: Mutex::new(()),
        })
    }

    /// Judge the finish `request` names. A finish the agent made unreadable
    /// (its work tree, its transcript) is a counted rejection, not an error
    /// (see `frontend::unjudged`). The request's `time_limit` counts
    /// from this call.
    pub fn check(&self, request: &CheckRequest) -> Result<Verdict, Error> {
        let deadline = request.deadline(Instant::now());
        self.judge(request, deadline).or_else(|e| {
            crate::frontend::unjudged::or_error(request, deadline, e, || {
                Ok(self.skill(&request.skill)?.skill.clone())
            })
        })
    }

    /// [`Service::check`] but for a finish the agent made unreadable,
    /// which is an error here.
    fn judge(&self, request: &CheckRequest, deadline: Option<Instant>) -> Result<Verdict, Error> {
        // git runs on its own while the skill and the events are read.
        let diff = match &request.patch {
            Some(file) => DiffSource::File(file),
            None => DiffSource::Git(Box::new(Workspace::start_diff(
                &request.workspace,
                request.base.as_deref(),
            )?)),
        };
        let skill = self.skill(&request.skill);
        let events = load_events(request);
        // git's processes are waited for even when the request has failed
        // already, so none is left behind in a long-running server.
        let diff = match diff {
            DiffSource::Git(pending) => pending.finish().map_err(Error::from),
            DiffSource::File(file) => patch_file_diff(request, file),
        };
        let (skill, events) = (skill?, events?);
        let (ws, diff) = diff?;
        let patch = diff.parse(&skill.classifier)?;
        let critic = SkillCritic::with_detectors(
            skill.skill.clone(),
            skill.detectors.clone(),
            StateStore::new(state_root(request, &ws)?),
            request,
            &self.settings,
        )
        .until(deadline);
        let finish = Finish {
            events: events.events.into(),
            transcript: events.raw_file,
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
        if let Some(loaded) = self.current(&key) {
            return Ok(loaded);
        }
        // Checks of skills already loaded never wait for this lock; a check
        // that finds its skill loaded while it waited uses that load.
        let _loading = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(loaded) = self.current(&key) {
            return Ok(loaded);
        }
        if let Some(stale) = self.lock().get(&key) {
            refuse_native_reload(stale)?;
        }
        let loaded = Arc::new(self.load(&key)?);
        let mut skills = self.lock();
        if skills.len() >= MAX_SKILLS && !skills.contains_key(&key) {
            let oldest = skills
                .iter()
                .min_by_key(|(_, s)| s.at)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                skills.remove(&oldest);
            }
        }
        skills.insert(key, loaded.clone());
        Ok(loaded)
    }

    /// The load of the skill in `key` at hand, if its files have not
    /// changed since.
    fn current(&self, key: &Path) -> Option<Arc<LoadedSkill>> {
        let loaded = self.lock().get(key).cloned()?;
        let current = !loaded.racy
            && loaded
                .files
                .iter()
                .all(|(path, stamp)| FileStamp::of(path) == *stamp);
        if !current {
            tracing::info!(skill = %key.display(), "skill changed on disk; loading it again");
            return None;
        }
        Some(loaded)
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
        let classifier = test_classifier(&skill.manifest.test_patterns, &skill.manifest_path)?;
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
            at: started,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Arc<LoadedSkill>>> {
        self.skills.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_skills_stay_loaded_the_oldest_going_first() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let service = Service::new(HostSettings {
            cache_dir: Some(root.join("target/test-component-cache")),
            ..HostSettings::default()
        })
        .unwrap();
        let dirs: Vec<tempfile::TempDir> = (0..=MAX_SKILLS)
            .map(|i| {
                let dir = tempfile::tempdir().unwrap();
                std::fs::copy(
                    root.join("tests/fixtures/skills/misbehave/misbehave.wasm"),
                    dir.path().join("m.wasm"),
                )
                .unwrap();
                std::fs::write(
                    dir.path().join(MANIFEST_FILE),
                    format!("name: s{i}\nversion: 0.1.0\nsignals:\n  - {{name: a, type: hard_gate, detector: m.wasm}}\n"),
                )
                .unwrap();
                dir
            })
            .collect();
        for dir in &dirs {
            service.skill(dir.path()).unwrap();
        }
        let skills = service.lock();
        assert_eq!(skills.len(), MAX_SKILLS);
        assert!(!skills.contains_key(&dirs[0].path().canonicalize().unwrap()));
        assert!(skills.contains_key(&dirs[MAX_SKILLS].path().canonicalize().unwrap()));
    }
}
