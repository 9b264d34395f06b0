//! A loaded detector, WebAssembly or native, behind one call interface.

#[doc(hidden)] // public for the fuzz tests only
pub mod feed;
pub mod native;
pub mod wasm;

use crate::detector::native::NativeDetector;
use crate::detector::wasm::cache::CacheOutcome;
use crate::detector::wasm::{
    CallContext, CallLimits, CallReport, DetectorError, Runtime, WasmDetector,
};
use std::path::Path;

/// A detector ready to call.
pub enum Detector {
    /// A sandboxed component.
    Wasm(WasmDetector),
    /// A trusted native library (`--allow-native`).
    Native(NativeDetector),
}

impl Detector {
    /// Load `path`: a native library when its extension says so (and
    /// `allow_native` is set), a component otherwise.
    pub fn load(
        runtime: &Runtime,
        path: &Path,
        allow_native: bool,
    ) -> Result<Detector, DetectorError> {
        if native::is_native(path) {
            if !allow_native {
                return Err(DetectorError::NativeNotAllowed(path.to_path_buf()));
            }
            return NativeDetector::load(path).map(Detector::Native);
        }
        runtime.load(path).map(Detector::Wasm)
    }

    /// [`Detector::load`] without compiling: `None` when `path` is a
    /// component whose compiled form is not in the cache.
    pub fn load_cached(
        runtime: &Runtime,
        path: &Path,
        allow_native: bool,
    ) -> Result<Option<Detector>, DetectorError> {
        if native::is_native(path) {
            return Detector::load(runtime, path, allow_native).map(Some);
        }
        Ok(runtime.load_cached(path)?.map(Detector::Wasm))
    }

    /// Run the detector on one input.
    pub fn call(
        &self,
        input: &str,
        limits: &CallLimits,
        ctx: &CallContext,
    ) -> Result<(String, CallReport), DetectorError> {
        match self {
            Detector::Wasm(d) => d.call(input, limits, ctx),
            Detector::Native(d) => d.call(input, limits),
        }
    }

    /// Whether this is a native library (which gets its input's events inline).
    pub fn is_native(&self) -> bool {
        matches!(self, Detector::Native(_))
    }

    /// Whether the compiled component came from the cache (`None` for native).
    pub fn cache_outcome(&self) -> Option<CacheOutcome> {
        match self {
            Detector::Wasm(d) => Some(d.cache_outcome()),
            Detector::Native(_) => None,
        }
    }
}
