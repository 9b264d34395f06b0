//! Copying a directory tree for tests and benches (shared by both through
//! `#[path]`, since benches cannot use the tests' module).

use std::path::Path;

/// Copy the directory `from` into `to` (which exists), as `cp -a` does.
pub fn copy_tree(from: &Path, to: &Path) {
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(from.join("."))
        .arg(to)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}
