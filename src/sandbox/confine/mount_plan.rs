//! The confinement's mount plan: which directories a command's mount
//! namespace covers, makes and puts back, and in what order.

use super::hidden::Hidden;
use super::homes;
use super::places::PRIVATE_DIRS;
use std::ffi::{CString, OsStr};
use std::path::{Path, PathBuf};

/// Which cover a directory put back lies under (see [`super::Confinement::new`]).
#[derive(Clone, Copy)]
enum Cover {
    /// A home: its place is made before the toolchains go back.
    Home,
    /// `/dev`, a private directory, or none.
    Early,
    /// A place covered last.
    Late,
}

/// Most writable directories a command may have (their mounts are cloned
/// into a fixed array in the forked child, which cannot allocate).
pub(super) const MAX_WRITABLE: usize = 4;

/// Most directories in private places a command may need to see (cloned
/// the same way).
pub(super) const MAX_PRIVATE_SEEN: usize = 4;

/// What the command's mount namespace changes.
#[derive(Debug)]
pub(super) struct Mounts {
    /// The directories left writable (canonical paths).
    pub(super) writable: Vec<CString>,
    /// Fresh, empty, writable tmpfs mounts (see [`PRIVATE_DIRS`]).
    pub(super) private: Vec<CString>,
    /// Their mount options: the size each may hold.
    pub(super) private_options: CString,
    /// Directories to make in the private mounts, parents first, for the
    /// writable directories that lie in them to be mounted back at their
    /// paths.
    pub(super) mountpoints: Vec<CString>,
    /// What to hide.
    pub(super) hidden: Hidden,
    /// The home directories (and a moved `XDG_CONFIG_HOME`), covered by an
    /// empty file system.
    pub(super) homes: Vec<CString>,
    /// The toolchain directories in them, bound back (see [`homes`]).
    pub(super) kept: Vec<CString>,
    /// Directories to make in the covered homes, parents first, for `kept`
    /// and the writable directories there to be mounted back at their paths.
    pub(super) home_mountpoints: Vec<CString>,
    /// What the command must see that lies in a private directory (an
    /// interpreter under `/tmp`, a skill being built there), bound back
    /// read-only.
    pub(super) private_seen: Vec<CString>,
    /// The devices bound into the command's `/dev` (see [`super::places::DEVICES`]).
    pub(super) devices: Vec<CString>,
    /// A file bound over `/etc/hosts` (an agent's turn, see [`super::agent`]).
    pub(super) hosts: Option<CString>,
    /// Whether the command's `/dev` gets pseudo-terminals of its own (a
    /// fresh `devpts`: an agent's tools run commands in one).
    pub(super) ptys: bool,
    /// Directories covered by an empty file system after everything else
    /// is put back but the writable directories (an agent's turn).
    pub(super) late_dirs: Vec<CString>,
    /// Files covered by `/dev/null` then.
    pub(super) late_files: Vec<CString>,
    /// Directories the command must see in those covers, put back
    /// read-only after them.
    pub(super) late_shown: Vec<CString>,
    /// Directories to make in those covers for the writable directories
    /// and those seen there.
    pub(super) late_mountpoints: Vec<CString>,
    /// The Landlock rights the private mounts get (every handled one).
    pub(super) private_access: u64,
}

/// What a command's mount plan is made from: its own directories and the
/// machine's places, given, so that the plan can be tested on a tree made
/// for it.
pub(super) struct Inputs<'a> {
    /// The directories the command may write (canonical paths).
    pub writable: &'a [PathBuf],
    /// The private directories it gets empty and its own (none inside a
    /// writable one).
    pub private: &'a [PathBuf],
    /// What it must see, as the caller named it (see [`homes::needed`]).
    pub seen: &'a [&'a Path],
    /// An agent's turn: the places covered after everything else.
    pub covered_last: &'a [PathBuf],
    /// The user's home directories.
    pub homes: &'a [PathBuf],
    /// The `PATH` the command's programs are found on.
    pub path: Option<&'a OsStr>,
    /// The environment's variables (toolchain homes, `XDG_CONFIG_HOME`).
    pub var: &'a dyn Fn(&str) -> Option<PathBuf>,
}

/// The directories of a mount plan (canonical paths), in the order the
/// forked child mounts or makes them; [`Mounts`] holds them as C strings.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Paths {
    /// Home directories covered by an empty file system.
    pub homes: Vec<PathBuf>,
    /// Toolchain directories in them, bound back read-only.
    pub kept: Vec<PathBuf>,
    /// Directories made under `/dev` and the private directories, parents
    /// first.
    pub mountpoints: Vec<PathBuf>,
    /// Directories made in the covered homes, parents first.
    pub home_mountpoints: Vec<PathBuf>,
    /// What lies in a private directory and must be seen, bound back.
    pub private_seen: Vec<PathBuf>,
    /// Directories covered last (an agent's turn), none inside another.
    pub late_dirs: Vec<PathBuf>,
    /// Files covered last, by `/dev/null`.
    pub late_files: Vec<PathBuf>,
    /// What must be seen inside a place covered last, put back after it.
    pub late_shown: Vec<PathBuf>,
    /// Directories made in the places covered last, parents first.
    pub late_mountpoints: Vec<PathBuf>,
}

/// The mount plan of a command, from `inputs`.
pub(super) fn plan(inputs: &Inputs) -> Paths {
    let writable = inputs.writable;
    let private = inputs.private;
    let seen = inputs.seen;
    // What lies in a writable directory (the scratch copy the run's own
    // code shaped) says nothing of what to show: a `.venv` link there
    // could point anywhere.
    let seen: Vec<&Path> = seen
        .iter()
        .copied()
        .filter(|s| {
            let real = std::fs::canonicalize(s).unwrap_or_else(|_| s.to_path_buf());
            !writable
                .iter()
                .any(|w| s.starts_with(w) || real.starts_with(w))
        })
        .collect();
    let seen = seen.as_slice();
    let mut plan = homes::plan(inputs.homes, inputs.path, seen, inputs.var);
    // A home in a private or writable directory is covered with it.
    plan.covered.retain(|h| {
        !private.iter().chain(writable).any(|p| h.starts_with(p)) && !h.starts_with("/dev")
    });
    plan.kept
        .retain(|k| plan.covered.iter().any(|h| k.starts_with(h)));
    // An agent's turn: the experiment's places, covered last (a
    // directory put back, the program's own, could hold one), a file
    // by `/dev/null`; the writable directories in them go back after.
    let mut late_dirs: Vec<PathBuf> = Vec::new();
    let mut late_files: Vec<PathBuf> = Vec::new();
    for place in inputs.covered_last {
        let Ok(real) = std::fs::canonicalize(place) else {
            continue;
        };
        if writable.iter().any(|w| real.starts_with(w)) {
            continue;
        }
        if real.is_dir() {
            late_dirs.push(real);
        } else {
            late_files.push(real);
        }
    }
    let all = late_dirs.clone();
    late_dirs.retain(|d| !all.iter().any(|o| o != d && d.starts_with(o)));
    late_dirs.dedup();
    // What the command needs that lies in a private directory: what it
    // was told to see, then what is on its PATH there (an interpreter
    // or virtual environment the user keeps under /tmp).
    let all_homes = inputs.homes;
    let on_path: Vec<PathBuf> = inputs
        .path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    let mut private_seen: Vec<PathBuf> = Vec::new();
    let wanted = seen
        .iter()
        .flat_map(|s| homes::needed(s, all_homes))
        .chain(
            on_path
                .iter()
                .flat_map(|d| homes::with_prefix(d, all_homes)),
        )
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .filter(|d| d.is_dir())
        .filter(|d| private.iter().any(|p| d.starts_with(p) && d != p))
        .filter(|d| !writable.iter().any(|w| d.starts_with(w)));
    for dir in wanted {
        if !private_seen.contains(&dir) {
            private_seen.push(dir);
        }
    }
    // Nested ones would be bound twice.
    let all = private_seen.clone();
    private_seen.retain(|d| !all.iter().any(|o| o != d && d.starts_with(o)));
    // What the command must see inside a place covered last (the
    // experiment's own environment under its output directory), put
    // back read-only after it.
    let mut late_shown: Vec<PathBuf> = seen
        .iter()
        .flat_map(|s| homes::needed(s, all_homes))
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .filter(|d| d.is_dir())
        .filter(|d| late_dirs.iter().any(|l| d.starts_with(l) && d != l))
        .filter(|d| !writable.iter().any(|w| d.starts_with(w)))
        .collect();
    late_shown.sort();
    late_shown.dedup();
    let all = late_shown.clone();
    late_shown.retain(|d| !all.iter().any(|o| o != d && d.starts_with(o)));
    late_shown.truncate(MAX_PRIVATE_SEEN);
    if private_seen.len() > MAX_PRIVATE_SEEN {
        tracing::warn!(
            "{} directories in {} to show a run; it sees the first {MAX_PRIVATE_SEEN}",
            private_seen.len(),
            PRIVATE_DIRS.join(", ")
        );
        private_seen.truncate(MAX_PRIVATE_SEEN);
    }
    // A directory put back under a cover (the new `/dev`, a private
    // directory, a home, a place covered last) is mounted on
    // directories made in the deepest cover.
    let early: Vec<&Path> = std::iter::once(Path::new("/dev"))
        .chain(private.iter().map(PathBuf::as_path))
        .chain(plan.covered.iter().map(PathBuf::as_path))
        .collect();
    let all_covers: Vec<&Path> = early
        .iter()
        .copied()
        .chain(late_dirs.iter().map(PathBuf::as_path))
        .collect();
    // The directories from `dir`'s deepest cover of `covers` down to
    // it, and which kind of cover that is.
    let chain_to = |dir: &Path, covers: &[&Path]| -> (Vec<PathBuf>, Cover) {
        let deepest = covers
            .iter()
            .filter(|c| dir.starts_with(c) && dir != **c)
            .max_by_key(|c| c.components().count());
        let Some(cover) = deepest else {
            return (Vec::new(), Cover::Early);
        };
        let mut chain: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|a| a != cover)
            .map(Path::to_path_buf)
            .collect();
        chain.reverse();
        let kind = if plan.covered.iter().any(|h| h == cover) {
            Cover::Home
        } else if late_dirs.iter().any(|l| l == cover) {
            Cover::Late
        } else {
            Cover::Early
        };
        (chain, kind)
    };
    let push_new = |list: &mut Vec<PathBuf>, chain: Vec<PathBuf>| {
        for d in chain {
            if !list.contains(&d) {
                list.push(d);
            }
        }
    };
    // One in a home needs its place there before the kept directories
    // go back; the others are made once `/dev` and the private
    // directories are mounted. The writable directories and what the
    // command must see inside a place covered last go back after it,
    // so into it; the rest before.
    let mut mountpoints: Vec<PathBuf> = Vec::new();
    let mut home_mountpoints: Vec<PathBuf> = Vec::new();
    let mut late_mountpoints: Vec<PathBuf> = Vec::new();
    let placed = writable
        .iter()
        .chain(&late_shown)
        .map(|w| chain_to(w, &all_covers))
        .chain(
            plan.kept
                .iter()
                .chain(&private_seen)
                // A place covered last is made where it is not seen
                // (its own directory ends its chain).
                .chain(&late_dirs)
                .map(|d| chain_to(d, &early)),
        );
    for (chain, kind) in placed.collect::<Vec<_>>() {
        match kind {
            Cover::Home => push_new(&mut home_mountpoints, chain),
            Cover::Early => push_new(&mut mountpoints, chain),
            Cover::Late => push_new(&mut late_mountpoints, chain),
        }
    }
    Paths {
        homes: plan.covered,
        kept: plan.kept,
        mountpoints,
        home_mountpoints,
        private_seen,
        late_dirs,
        late_files,
        late_shown,
        late_mountpoints,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(root: &Path, names: &[&str]) {
        for name in names {
            std::fs::create_dir_all(root.join(name)).unwrap();
        }
    }

    #[test]
    fn a_run_gets_its_mountpoints_under_the_deepest_cover_parents_first() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        dirs(
            &root,
            &[
                "home/.cargo/bin",
                "home/.ssh",
                "home/work/tmp",
                "private/venv/bin",
                "private/pool/copy/.venv/bin",
            ],
        );
        std::fs::write(root.join("private/venv/bin/python"), "").unwrap();
        std::fs::write(root.join("private/pool/copy/.venv/bin/python"), "").unwrap();
        let (copy, tmp) = (root.join("private/pool/copy"), root.join("home/work/tmp"));
        let python = root.join("private/venv/bin/python");
        // What the run's own copy holds says nothing of what to show.
        let planted = copy.join(".venv/bin/python");
        let path = root.join("home/.cargo/bin").into_os_string();
        let got = plan(&Inputs {
            writable: &[copy.clone(), tmp.clone()],
            private: &[root.join("private")],
            seen: &[&python, &planted],
            covered_last: &[],
            homes: &[root.join("home")],
            path: Some(&path),
            var: &|_| None,
        });
        let at = |name: &str| root.join(name);
        assert_eq!(
            got,
            Paths {
                homes: vec![at("home")],
                kept: vec![at("home/.cargo")],
                // The copy in a private directory, then what is seen there.
                mountpoints: vec![at("private/pool"), copy, at("private/venv")],
                // The temporary directory in the home, then the toolchain.
                home_mountpoints: vec![at("home/work"), tmp, at("home/.cargo")],
                private_seen: vec![at("private/venv")],
                ..Paths::default()
            }
        );
    }

    #[test]
    fn an_agents_turn_covers_its_places_last_and_puts_back_what_it_needs_after() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        dirs(&root, &["out/run/copy", "out/env/bin", "out/inner", "home"]);
        std::fs::write(root.join("out/env/bin/python"), "").unwrap();
        std::fs::write(root.join("secret.txt"), "").unwrap();
        let at = |name: &str| root.join(name);
        let python = at("out/env/bin/python");
        let got = plan(&Inputs {
            writable: &[at("out/run/copy")],
            private: &[],
            seen: &[&python],
            // A place inside another is covered with it; one that does not
            // exist is passed over.
            covered_last: &[at("out"), at("out/inner"), at("secret.txt"), at("gone")],
            homes: &[],
            path: None,
            var: &|_| None,
        });
        assert_eq!(
            got,
            Paths {
                late_dirs: vec![at("out")],
                late_files: vec![at("secret.txt")],
                late_shown: vec![at("out/env")],
                // The writable copy first, then what must be seen there.
                late_mountpoints: vec![at("out/run"), at("out/run/copy"), at("out/env")],
                ..Paths::default()
            }
        );
    }

    #[test]
    fn a_home_inside_a_writable_or_private_directory_is_not_covered_again() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        dirs(&root, &["scratch/home/.cargo", "private/home"]);
        let at = |name: &str| root.join(name);
        let got = plan(&Inputs {
            writable: &[at("scratch")],
            private: &[at("private")],
            seen: &[],
            covered_last: &[],
            homes: &[at("scratch/home"), at("private/home")],
            path: None,
            var: &|_| None,
        });
        assert_eq!(got, Paths::default());
    }
}
