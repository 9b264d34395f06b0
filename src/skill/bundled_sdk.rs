//! The `critic-sdk` crate as this binary was built with it, for `critic
//! new`: a new Rust skill depends on a copy of it in critic's cache
//! (`<cache>/sdk/critic-sdk-<version>-<digest>/`), so an installed `critic`
//! needs no checkout of this repository, and a moved one breaks no skill.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The SDK's files: path in the crate, content.
const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../../critic-sdk/Cargo.toml")),
    (
        "wit/detector.wit",
        include_str!("../../critic-sdk/wit/detector.wit"),
    ),
    ("src/arms.rs", include_str!("../../critic-sdk/src/arms.rs")),
    ("src/diff.rs", include_str!("../../critic-sdk/src/diff.rs")),
    (
        "src/helpers.rs",
        include_str!("../../critic-sdk/src/helpers.rs"),
    ),
    ("src/host.rs", include_str!("../../critic-sdk/src/host.rs")),
    ("src/lib.rs", include_str!("../../critic-sdk/src/lib.rs")),
    (
        "src/mutants.rs",
        include_str!("../../critic-sdk/src/mutants.rs"),
    ),
    (
        "src/mutants/tests.rs",
        include_str!("../../critic-sdk/src/mutants/tests.rs"),
    ),
    (
        "src/protocol.rs",
        include_str!("../../critic-sdk/src/protocol.rs"),
    ),
    (
        "src/python/cfg.rs",
        include_str!("../../critic-sdk/src/python/cfg.rs"),
    ),
    (
        "src/python/edit_file.rs",
        include_str!("../../critic-sdk/src/python/edit_file.rs"),
    ),
    (
        "src/python/eliminate.rs",
        include_str!("../../critic-sdk/src/python/eliminate.rs"),
    ),
    (
        "src/python/eliminate/tests.rs",
        include_str!("../../critic-sdk/src/python/eliminate/tests.rs"),
    ),
    (
        "src/python/equivalence.rs",
        include_str!("../../critic-sdk/src/python/equivalence.rs"),
    ),
    (
        "src/python/mod.rs",
        include_str!("../../critic-sdk/src/python/mod.rs"),
    ),
    (
        "src/python/statements.rs",
        include_str!("../../critic-sdk/src/python/statements.rs"),
    ),
    (
        "src/reproduction.rs",
        include_str!("../../critic-sdk/src/reproduction.rs"),
    ),
    (
        "src/templates.rs",
        include_str!("../../critic-sdk/src/templates.rs"),
    ),
    (
        "src/test_input.rs",
        include_str!("../../critic-sdk/src/test_input.rs"),
    ),
];

/// The copy of the SDK in critic's cache, made now if it is not there.
pub fn rust() -> Result<PathBuf, String> {
    let root = crate::sys::private_dir::cache_root().ok_or(
        "no cache directory (set CRITIC_CACHE_DIR, XDG_CACHE_HOME or HOME), or pass --sdk",
    )?;
    extract(&root.join("sdk"))
}

/// The SDK under `parent`, in a directory named by its version and the
/// digest of its files: written once, whole (made aside, then renamed).
fn extract(parent: &Path) -> Result<PathBuf, String> {
    let mut h = Sha256::new();
    for (path, content) in FILES {
        h.update(path.as_bytes());
        h.update([0]);
        h.update((content.len() as u64).to_le_bytes());
        h.update(content.as_bytes());
    }
    let digest = hex::encode(h.finalize());
    let dir = parent.join(format!(
        "critic-sdk-{}-{}",
        env!("CARGO_PKG_VERSION"),
        &digest[..16]
    ));
    if dir.join("Cargo.toml").is_file() {
        return Ok(dir);
    }
    crate::sys::private_dir::ensure(parent)?;
    let aside = parent.join(format!(".making-{}", std::process::id()));
    let made = (|| -> std::io::Result<()> {
        for (path, content) in FILES {
            let file = aside.join(path);
            std::fs::create_dir_all(file.parent().unwrap_or(&aside))?;
            std::fs::write(&file, content)?;
        }
        std::fs::rename(&aside, &dir)
    })();
    if let Err(e) = made {
        let _ = std::fs::remove_dir_all(&aside);
        // Another `critic new` may have made it meanwhile.
        if !dir.join("Cargo.toml").is_file() {
            return Err(format!(
                "{}: cannot write the SDK there: {e}",
                dir.display()
            ));
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file of the crate is carried, and only those.
    #[test]
    fn the_copy_holds_the_sdk_as_it_is_in_the_checkout() {
        let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("critic-sdk");
        let mut on_disk = Vec::new();
        let mut todo = vec![sdk.clone()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    if p.file_name() != Some("target".as_ref()) {
                        todo.push(p);
                    }
                } else {
                    on_disk.push(p.strip_prefix(&sdk).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        on_disk.sort();
        let mut carried: Vec<String> = FILES.iter().map(|(p, _)| p.to_string()).collect();
        carried.sort();
        assert_eq!(carried, on_disk, "list every file of critic-sdk/ in FILES");
        let dir = tempfile::tempdir().unwrap();
        let copy = extract(dir.path()).unwrap();
        for (path, _) in FILES {
            assert_eq!(
                std::fs::read(copy.join(path)).unwrap(),
                std::fs::read(sdk.join(path)).unwrap(),
                "{path}"
            );
        }
        assert_eq!(extract(dir.path()).unwrap(), copy, "made once");
        // It stands alone: no workspace to inherit from.
        let manifest = std::fs::read_to_string(copy.join("Cargo.toml")).unwrap();
        assert!(!manifest.contains(".workspace"), "{manifest}");
        assert!(
            manifest.contains(&format!("\nversion = \"{}\"\n", env!("CARGO_PKG_VERSION"))),
            "the SDK's version is the workspace's: {manifest}"
        );
    }
}
