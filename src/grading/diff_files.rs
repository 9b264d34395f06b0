//! The files a git diff leaves, computed from their base content without a
//! work tree: how the golden fix, the golden tests and generated tests of an
//! instance become files to write into a scratch copy; and a diff without
//! the binary sections that carry no data.

use std::collections::BTreeMap;

/// The files a git diff leaves (path to content; deleted files are refused,
/// since a fix variant that deletes a module is no plausible fix), with each
/// file's base content from `base`.
pub fn apply_diff(
    diff: &str,
    base: &dyn Fn(&str) -> Result<Option<String>, String>,
) -> Result<BTreeMap<String, String>, String> {
    apply_diff_where(diff, base, &|_| true)
}

/// [`apply_diff`] for the files `keep` accepts; the others are not read.
pub fn apply_diff_where(
    diff: &str,
    base: &dyn Fn(&str) -> Result<Option<String>, String>,
    keep: &dyn Fn(&str) -> bool,
) -> Result<BTreeMap<String, String>, String> {
    Ok(files_of(diff, base, keep, false)?.0)
}

/// The files a diff leaves, and the paths it deletes (a deleted file, a
/// renamed file's old name) when `deletes` allows them (else a deletion is
/// an error): the golden test patch may remove a test file.
pub fn files_of(
    diff: &str,
    base: &dyn Fn(&str) -> Result<Option<String>, String>,
    keep: &dyn Fn(&str) -> bool,
    deletes: bool,
) -> Result<(BTreeMap<String, String>, Vec<String>), String> {
    use critic_sdk::FileStatus;
    let files = critic_sdk::diff::parse(diff).map_err(|e| format!("not a git diff: {e}"))?;
    if files.is_empty() && !diff.trim().is_empty() {
        return Err("not a git diff: no file's section in it".into());
    }
    let sections = critic_sdk::diff::sections(diff);
    let mut out = BTreeMap::new();
    let mut deleted = Vec::new();
    for (f, section) in files
        .into_iter()
        .zip(sections)
        .filter(|(f, _)| keep(&f.path))
    {
        for path in std::iter::once(&f.path).chain(&f.old_path) {
            crate::sandbox::scratch::relative(path)?;
            if path.split('/').next() == Some(".git") {
                return Err(format!("{path}: inside .git"));
            }
        }
        if f.binary {
            return Err(format!("{}: binary changes are not supported", f.path));
        }
        if f.status == FileStatus::Deleted {
            if !deletes {
                return Err(format!("{}: deletes the file", f.path));
            }
            deleted.push(f.path.clone());
            continue;
        }
        let source = match (&f.status, &f.old_path) {
            (FileStatus::Renamed | FileStatus::Copied, Some(old)) => old.clone(),
            _ => f.path.clone(),
        };
        if f.status != FileStatus::Added && base(&source)?.is_none() {
            return Err(format!("{source}: not in the base commit"));
        }
        let new = applied(section, base, &f.path)
            .map_err(|e| format!("does not apply to the base: {e}"))?;
        if deletes && f.status == FileStatus::Renamed {
            deleted.push(source);
        }
        out.insert(f.path.clone(), new);
    }
    Ok((out, deleted))
}

/// What one file's `section` leaves at `path`, applied as `git apply` does.
fn applied(
    section: &str,
    base: &dyn Fn(&str) -> Result<Option<String>, String>,
    path: &str,
) -> Result<String, String> {
    use crate::workspace::apply::{apply, Entry, Mode};
    let mut read = |p: &str| -> Result<Option<Entry>, String> {
        Ok(base(p)?.map(|text| Entry {
            bytes: text.into_bytes(),
            mode: Mode::File,
        }))
    };
    let results = apply(section, &mut read).map_err(|e| e.to_string())?;
    let entry = results
        .get(path)
        .cloned()
        .flatten()
        .ok_or_else(|| format!("{path}: the patch leaves no file"))?;
    String::from_utf8(entry.bytes).map_err(|_| format!("{path}: not UTF-8 text"))
}

/// `patch` without the binary file sections that carry no data (`Binary
/// files ... differ`), and the paths they changed. A `GIT binary patch`
/// section is kept: it applies as `git apply` applies it.
pub fn without_binary(patch: &str) -> (String, Vec<String>) {
    let Ok(files) = critic_sdk::diff::parse(patch) else {
        return (patch.to_string(), Vec::new());
    };
    let dataless = |section: &str, file: &critic_sdk::FileChange| {
        file.binary && !section.lines().any(|l| l == "GIT binary patch")
    };
    let sections = critic_sdk::diff::sections(patch);
    if !files.iter().zip(&sections).any(|(f, s)| dataless(s, f)) {
        return (patch.to_string(), Vec::new());
    }
    let mut kept = String::new();
    let mut binary = Vec::new();
    for (section, file) in sections.into_iter().zip(&files) {
        if dataless(section, file) {
            binary.push(file.path.clone());
        } else {
            kept.push_str(section);
        }
    }
    (kept, binary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_round_trip_and_bad_ones_say_why() {
        let (old, new) = ("def f():\n    return 1\n", "def f():\n    return 2\n");
        let base = |p: &str| -> Result<Option<String>, String> {
            Ok((p == "pkg/m.py").then(|| old.to_string()))
        };
        let files: BTreeMap<String, String> = [("pkg/m.py".to_string(), new.to_string())].into();
        let diff = format!(
            "diff --git a/pkg/m.py b/pkg/m.py\n{}",
            critic_sdk::diff::unified("pkg/m.py", old, new)
        );
        assert_eq!(apply_diff(&diff, &base).unwrap(), files);
        let e = apply_diff(&diff.replace("pkg/m.py", "pkg/gone.py"), &base).unwrap_err();
        assert!(e.contains("pkg/gone.py: not in the base commit"), "{e}");
        let e = apply_diff(&diff.replace("pkg/m.py", "../m.py"), &base).unwrap_err();
        assert!(e.contains("without `..`"), "{e}");
        let e = apply_diff(&diff.replace("pkg/m.py", ".git/config"), &base).unwrap_err();
        assert!(e.contains("inside .git"), "{e}");
        let e = apply_diff("not a diff\n", &base).unwrap_err();
        assert!(e.starts_with("not a git diff"), "{e}");
    }
}
