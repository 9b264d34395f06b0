//! The previous-round survivor check: a mutant that survived round k-1 is
//! kept as its change to that round's fix c_{k-1}, carried onto this round's
//! fix c_k, and run against this round's test t_k. Carried mutants that still
//! pass t_k are *persistent*; those t_k now fails are *newly killed*. A
//! change that no longer applies to c_k (the fix moved under it) is excluded
//! with the reason.

use critic_sdk::mutants::FixFile;
use critic_sdk::python::syntax_error;
use serde::{Deserialize, Serialize};
use similar::{DiffOp, TextDiff};
use std::collections::BTreeMap;

/// One contiguous change of a mutant to one file of the fix it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    /// Workspace-relative path.
    pub path: String,
    /// 0-based line in that fix where `old` starts.
    pub line: usize,
    /// The fix's lines the mutant replaces, with up to 3 lines of context on
    /// each side, so the change is found again only where it makes sense.
    pub old: String,
    /// What the mutant has there instead.
    pub new: String,
    /// Lines of `old` (and `new`) before the change that are context.
    pub before: usize,
    /// Lines of `old` (and `new`) after the change that are context.
    pub after: usize,
}

/// The most a survivor's edits may hold (old and new text) to be kept in
/// the state: a model's variant can rewrite whole files, and the state is
/// written back on every finish.
pub const MAX_KEPT_BYTES: usize = 64 * 1024;

/// How mutant `files` differs from `fix`, as edits in file order; none when
/// they would hold more than [`MAX_KEPT_BYTES`].
pub fn edits(fix: &[FixFile], files: &BTreeMap<String, String>) -> Vec<Edit> {
    const CONTEXT: usize = 3;
    let mut out = Vec::new();
    let mut kept = 0;
    for f in fix {
        let Some(mutant) = files.get(&f.path) else {
            continue;
        };
        let diff = TextDiff::from_lines(f.fixed.as_str(), mutant.as_str());
        let (old_lines, new_lines) = (diff.old_slices(), diff.new_slices());
        for group in diff.grouped_ops(CONTEXT) {
            let (Some(first), Some(last)) = (group.first(), group.last()) else {
                continue;
            };
            let old = first.old_range().start..last.old_range().end;
            let new = first.new_range().start..last.new_range().end;
            if group.iter().all(|op| matches!(op, DiffOp::Equal { .. })) {
                continue;
            }
            let context = |op: &DiffOp| match op {
                DiffOp::Equal { len, .. } => *len,
                _ => 0,
            };
            let edit = Edit {
                path: f.path.clone(),
                line: old.start,
                old: old_lines[old.clone()].concat(),
                new: new_lines[new].concat(),
                before: context(first),
                after: context(last),
            };
            kept += edit.old.len() + edit.new.len();
            if kept > MAX_KEPT_BYTES {
                return Vec::new();
            }
            out.push(edit);
        }
    }
    out
}

/// How many context lines a side may lose before an edit counts as no
/// longer matching (`patch`'s default fuzz).
const MAX_FUZZ: usize = 2;

/// Where edit `e` goes in `lines`: the occurrence of its old lines nearest
/// to `wanted`, with as much of its context as still matches (all of it
/// first, then up to [`MAX_FUZZ`] lines less on each side, as `patch` does).
/// The lines looked for always keep at least one line, so an insertion is
/// found only next to the context it had. Returns the position and the old
/// and new lines that apply there.
fn locate<'e>(
    e: &'e Edit,
    lines: &[&str],
    wanted: usize,
) -> Option<(usize, Vec<&'e str>, Vec<&'e str>)> {
    let old: Vec<&str> = e.old.split_inclusive('\n').collect();
    let new: Vec<&str> = e.new.split_inclusive('\n').collect();
    for fuzz in 0..=MAX_FUZZ.min(e.before.max(e.after)) {
        let skip = fuzz.min(e.before);
        let drop = fuzz.min(e.after);
        if skip + drop >= old.len() || skip + drop > new.len() {
            break;
        }
        let o = &old[skip..old.len() - drop];
        let found = (0..=lines.len().saturating_sub(o.len()))
            .filter(|&i| lines[i..].starts_with(o))
            .min_by_key(|&i| i.abs_diff(wanted + skip));
        if let Some(at) = found {
            return Some((at, o.to_vec(), new[skip..new.len() - drop].to_vec()));
        }
    }
    None
}

/// The mutant carried onto `fix`: every Python file of the fix, with the
/// edits applied where their old text is found (nearest to where it was).
/// `Err` says why it cannot be carried.
pub fn carry(edits: &[Edit], fix: &[FixFile]) -> Result<BTreeMap<String, String>, String> {
    let mut files: BTreeMap<String, String> = fix
        .iter()
        .map(|f| (f.path.clone(), f.fixed.clone()))
        .collect();
    // Edits of a file shift the lines of the ones after them.
    let mut shift: BTreeMap<&str, isize> = BTreeMap::new();
    for e in edits {
        let Some(text) = files.get_mut(&e.path) else {
            return Err(format!("this round's fix no longer changes `{}`", e.path));
        };
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let wanted = e
            .line
            .saturating_add_signed(*shift.get(e.path.as_str()).unwrap_or(&0));
        let (at, old, new) = locate(e, &lines, wanted).ok_or_else(|| {
            format!(
                "its change to `{}` near line {} no longer matches this round's fix",
                e.path,
                e.line + 1
            )
        })?;
        let delta = new.len() as isize - old.len() as isize;
        let joined: String = lines[..at]
            .iter()
            .chain(&new)
            .chain(&lines[at + old.len()..])
            .copied()
            .collect();
        *text = joined;
        *shift.entry(e.path.as_str()).or_default() += delta;
    }
    if fix.iter().all(|f| files[&f.path] == f.fixed) {
        return Err("carried onto this round's fix it changes nothing".into());
    }
    if let Some((path, err)) = files
        .iter()
        .find_map(|(p, t)| syntax_error(t).map(|e| (p, e)))
    {
        return Err(format!(
            "carried onto this round's fix `{path}` does not parse ({err})"
        ));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXED: &str = "def merge(xs):\n    out = []\n    for s, e in sorted(xs):\n        if out and s <= out[-1][1]:\n            out[-1] = (out[-1][0], max(out[-1][1], e))\n        else:\n            out.append((s, e))\n    return out\n";

    fn fix(fixed: &str) -> Vec<FixFile> {
        vec![FixFile {
            path: "m.py".into(),
            base: String::new(),
            fixed: fixed.into(),
            hunks: Vec::new(),
        }]
    }

    fn mutant(text: &str) -> BTreeMap<String, String> {
        BTreeMap::from([("m.py".to_string(), text.to_string())])
    }

    #[test]
    fn a_mutant_moves_with_the_fix() {
        let m = FIXED.replace("s <= out", "s == out");
        let e = edits(&fix(FIXED), &mutant(&m));
        assert_eq!(e.len(), 1);
        // Unchanged fix: the mutant comes back as it was.
        assert_eq!(carry(&e, &fix(FIXED)).unwrap()["m.py"], m);
        // The fix grew a docstring above: the change is found lower down.
        let grown = FIXED.replace(
            "def merge(xs):\n",
            "def merge(xs):\n    \"\"\"Merge overlapping or touching intervals.\"\"\"\n",
        );
        let carried = carry(&e, &fix(&grown)).unwrap();
        assert_eq!(carried["m.py"], grown.replace("s <= out", "s == out"));
    }

    #[test]
    fn a_change_the_fix_rewrote_is_excluded_with_the_reason() {
        let m = FIXED.replace("s <= out", "s == out");
        let e = edits(&fix(FIXED), &mutant(&m));
        let rewritten = FIXED.replace(
            "if out and s <= out[-1][1]",
            "if out and s - out[-1][1] <= 0",
        );
        let err = carry(&e, &fix(&rewritten)).unwrap_err();
        assert!(err.contains("near line") && err.contains("m.py"), "{err}");
        let other = vec![FixFile {
            path: "n.py".into(),
            ..fix(FIXED).remove(0)
        }];
        assert!(carry(&e, &other)
            .unwrap_err()
            .contains("no longer changes `m.py`"));
    }

    #[test]
    fn a_huge_variant_is_not_kept() {
        let m = format!("{FIXED}{}", "x = 1\n".repeat(MAX_KEPT_BYTES / 6 + 1));
        assert!(edits(&fix(FIXED), &mutant(&m)).is_empty());
    }

    #[test]
    fn an_insertion_goes_only_where_its_context_still_is() {
        // A shortcut inserted at the top of the function.
        let m = FIXED.replace(
            "    out = []\n",
            "    if xs == [(1, 3), (3, 5)]:\n        return [(1, 5)]\n    out = []\n",
        );
        let e = edits(&fix(FIXED), &mutant(&m));
        assert_eq!(e.len(), 1);
        // The fix rewritten around it: the insertion has nowhere to go.
        let rewritten = "def merge(xs):\n    return _merged(sorted(xs))\n\n\ndef _merged(xs):\n    result = []\n    return result\n";
        let err = carry(&e, &fix(rewritten)).unwrap_err();
        assert!(err.contains("no longer matches"), "{err}");
    }

    #[test]
    fn a_carried_mutant_equal_to_the_fix_is_not_a_mutant() {
        let m = FIXED.replace("s <= out", "s == out");
        let e = edits(&fix(FIXED), &mutant(&m));
        // This round's fix is the mutant itself: carried, it changes nothing new.
        let err = carry(&e, &fix(&m)).unwrap_err();
        assert!(
            err.contains("no longer matches") || err.contains("changes nothing"),
            "{err}"
        );
    }
}
