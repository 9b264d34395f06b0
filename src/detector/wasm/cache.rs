//! On-disk cache of compiled detector components.
//!
//! Compiling a component with Cranelift takes hundreds of milliseconds; loading
//! a precompiled one is a memory map. Entries are keyed by the engine's
//! compatibility hash (wasmtime version and every setting that changes code)
//! and the SHA-256 of the `.wasm` bytes, so a stale entry is never used: it
//! simply has a different name. The engine that runs detectors has no
//! compiler, so its hash leaves out the CPU features the code was compiled
//! for; those are checked against the host when an entry is loaded, and an
//! entry made for another CPU (a cache shared between machines) is compiled
//! again.

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::component::Component;
use wasmtime::Engine;

/// Where compiled components go when no directory is configured:
/// `CRITIC_CACHE_DIR`, else the user's cache directory; `None` (compile every
/// time) when there is no such place.
pub fn default_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CRITIC_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    crate::sys::private_dir::user_dir("XDG_CACHE_HOME", ".cache").map(|d| d.join("components"))
}

/// A directory of precompiled components for one engine configuration.
#[derive(Debug, Clone)]
pub struct ComponentCache {
    dir: Option<PathBuf>,
}

/// How a component was obtained, for reports and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheOutcome {
    /// Loaded precompiled from the cache.
    Hit,
    /// Compiled now (and stored, when the cache is enabled).
    Compiled,
}

struct HexHasher(Sha256);

impl Hasher for HexHasher {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

impl ComponentCache {
    /// A cache under `dir`, partitioned by `engine`'s compatibility hash;
    /// `None` disables caching, and so does a directory another user could
    /// write (its entries are loaded as native code).
    pub fn new(engine: &Engine, dir: Option<&Path>) -> ComponentCache {
        let dir = dir.and_then(|d| {
            let mut h = HexHasher(Sha256::new());
            engine.precompile_compatibility_hash().hash(&mut h);
            let engine_dir = d.join(hex::encode(&h.0.finalize()[..12]));
            // Every level the host reads from, not just the top.
            let levels = [
                d.to_path_buf(),
                engine_dir.clone(),
                engine_dir.join("digests"),
            ];
            match levels
                .iter()
                .try_for_each(|l| crate::sys::private_dir::ensure(l))
            {
                Ok(()) => Some(engine_dir),
                Err(e) => {
                    tracing::warn!("not using the component cache: {e}");
                    None
                }
            }
        });
        ComponentCache { dir }
    }

    /// The identity of the `.wasm` file at `path` (device, inode, size,
    /// modification and change times), under which its SHA-256 is
    /// remembered: a warm load then neither reads nor hashes the file, and
    /// any write to it gives it a new identity. Take it *before* reading the
    /// file. `None` without a cache or when the file cannot be stat'ed.
    pub fn file_key(&self, path: &Path) -> Option<FileKey> {
        use std::os::unix::fs::MetadataExt;
        let dir = self.dir.as_ref()?;
        let m = std::fs::metadata(path).ok()?;
        let identity = format!(
            "{}|{}|{}|{}.{}|{}.{}|{}",
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
            path.display()
        );
        let name = hex::encode(&Sha256::digest(identity.as_bytes())[..16]);
        Some(FileKey(dir.join("digests").join(name)))
    }

    /// The precompiled component for the file `key` identifies, when its
    /// digest is remembered and the cache holds the entry.
    pub fn cached(&self, engine: &Engine, key: &FileKey) -> Option<Component> {
        let dir = self.dir.as_ref()?;
        crate::sys::private_dir::trusted_file(&key.0).ok()?;
        let digest = std::fs::read_to_string(&key.0).ok()?;
        let digest = digest.trim();
        if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        deserialize(engine, &dir.join(format!("{digest}.cwasm")))
    }

    /// The component for `wasm` (the bytes of the file `key` identifies),
    /// from the cache or compiled by `compiler` (an engine with the same
    /// settings as `engine`, which may have none) and stored.
    pub fn load<'c>(
        &self,
        engine: &Engine,
        compiler: impl FnOnce() -> wasmtime::Result<&'c Engine>,
        key: Option<&FileKey>,
        wasm: &[u8],
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let compile = || compiler()?.precompile_component(wasm);
        // SAFETY: the bytes were just compiled by an engine with the same
        // settings as `engine`; deserializing checks that they agree.
        let compiled = |bytes: &[u8]| unsafe { Component::deserialize(engine, bytes) };
        let Some(dir) = &self.dir else {
            return Ok((compiled(&compile()?)?, CacheOutcome::Compiled));
        };
        let digest = hex::encode(Sha256::digest(wasm));
        let path = dir.join(format!("{digest}.cwasm"));
        let (component, outcome) = match deserialize(engine, &path) {
            Some(c) => (c, CacheOutcome::Hit),
            None => {
                let bytes = compile()?;
                if let Err(e) = crate::sys::atomic_file::write(&path, &bytes, false) {
                    tracing::warn!(dir = %dir.display(), "cannot write the component cache: {e}");
                }
                (compiled(&bytes)?, CacheOutcome::Compiled)
            }
        };
        if let Some(key) = key {
            // Only a shortcut for the next load: without it, that load hashes again.
            if let Err(e) = crate::sys::atomic_file::write(&key.0, digest.as_bytes(), false) {
                tracing::debug!("cannot remember the digest of a detector: {e}");
            }
        }
        Ok((component, outcome))
    }
}

/// Where the digest of one `.wasm` file (in one state) is remembered.
#[derive(Debug, Clone)]
pub struct FileKey(PathBuf);

/// A cache entry, mapped (its pages fault in as the detector touches them,
/// which is cheaper than mapping the whole image up front); `None` when
/// there is none, and (with a warning) when it is unusable or someone else
/// could have written it.
fn deserialize(engine: &Engine, path: &Path) -> Option<Component> {
    match crate::sys::private_dir::trusted_file(path) {
        Ok(()) => {}
        Err(_) if !path.exists() => return None,
        Err(e) => {
            tracing::warn!("not loading a cache entry: {e}");
            return None;
        }
    }
    // SAFETY: the file is one this cache wrote with `Component::serialize`
    // for an engine with the same compatibility hash (the directory name);
    // writes go through a temp file and rename, so it is never partial.
    match unsafe { Component::deserialize_file(engine, path) } {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(path = %path.display(), "discarding unusable cache entry: {e:#}");
            None
        }
    }
}
