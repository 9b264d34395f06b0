//! Native detectors: a `cdylib` loaded with `libloading`, for users who opt in
//! with `--allow-native` and trust the code (it runs with the host's full
//! privileges; no capability checks, no memory cap).
//!
//! The C ABI, version [`NATIVE_ABI_VERSION`]:
//!
//! ```c
//! uint32_t critic_native_abi_version(void);
//! /* input: DetectorInput JSON. On return *out/*out_len hold DetectorOutput JSON
//!    (status 0) or an error message (status != 0), allocated by the library. */
//! int32_t critic_detect(const uint8_t *input, size_t input_len,
//!                       uint8_t **out, size_t *out_len);
//! void critic_free(uint8_t *ptr, size_t len);
//! ```
//!
//! The call runs on a worker thread so the host can stop waiting at the
//! signal's timeout; a native detector cannot be killed, so a timed-out one
//! keeps its thread until it returns.

use crate::detector::wasm::{CallLimits, CallReport, DetectorError};
use libloading::{Library, Symbol};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The ABI version this host speaks.
pub const NATIVE_ABI_VERSION: u32 = 1;

type AbiVersionFn = unsafe extern "C" fn() -> u32;
type DetectFn = unsafe extern "C" fn(*const u8, usize, *mut *mut u8, *mut usize) -> i32;
type FreeFn = unsafe extern "C" fn(*mut u8, usize);

/// File extensions treated as native libraries.
pub const NATIVE_EXTENSIONS: &[&str] = &["so", "dylib", "dll"];

/// Whether a detector path names a native library.
pub fn is_native(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| NATIVE_EXTENSIONS.contains(&e))
}

/// A loaded native detector.
pub struct NativeDetector {
    library: Arc<Library>,
    path: PathBuf,
}

impl NativeDetector {
    /// Load the library and check its ABI version.
    pub fn load(path: &Path) -> Result<NativeDetector, DetectorError> {
        let err = |message: String| DetectorError::Native {
            path: path.to_path_buf(),
            message,
        };
        // SAFETY: loading runs the library's initializers; the user vouched for
        // it with --allow-native.
        let library =
            unsafe { Library::new(path) }.map_err(|e| err(format!("cannot load: {e}")))?;
        // SAFETY: the symbol's type is fixed by the documented ABI.
        let version = unsafe {
            let f: Symbol<AbiVersionFn> = library
                .get(b"critic_native_abi_version\0")
                .map_err(|e| err(format!("missing critic_native_abi_version: {e}")))?;
            f()
        };
        if version != NATIVE_ABI_VERSION {
            return Err(err(format!(
                "built for native ABI {version}, this host speaks {NATIVE_ABI_VERSION}"
            )));
        }
        for sym in [&b"critic_detect\0"[..], b"critic_free\0"] {
            // SAFETY: only checks the symbol exists.
            unsafe { library.get::<*const ()>(sym) }
                .map_err(|e| err(format!("missing symbol: {e}")))?;
        }
        Ok(NativeDetector {
            library: Arc::new(library),
            path: path.to_path_buf(),
        })
    }

    /// Call `critic_detect`, giving up waiting at the timeout.
    pub fn call(
        &self,
        input: &str,
        limits: &CallLimits,
    ) -> Result<(String, CallReport), DetectorError> {
        let library = self.library.clone();
        let input = input.to_string();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("critic-native".into())
            .spawn(move || {
                let _ = tx.send(invoke(&library, &input));
            })
            .map_err(|e| DetectorError::Native {
                path: self.path.clone(),
                message: format!("cannot start a thread: {e}"),
            })?;
        let (status, text) = rx
            .recv_timeout(limits.timeout)
            .map_err(|_| DetectorError::Timeout(limits.timeout))?
            .map_err(|message| DetectorError::Native {
                path: self.path.clone(),
                message,
            })?;
        if status != 0 {
            return Err(DetectorError::Reported(text));
        }
        if text.len() as u64 > limits.output_bytes {
            return Err(DetectorError::OutputTooLarge {
                size: text.len(),
                limit: limits.output_bytes,
            });
        }
        Ok((text, CallReport::default()))
    }
}

fn invoke(library: &Library, input: &str) -> Result<(i32, String), String> {
    // SAFETY: symbol types follow the documented ABI; the output buffer is
    // owned by the library and returned to it through critic_free.
    unsafe {
        let detect: Symbol<DetectFn> =
            library.get(b"critic_detect\0").map_err(|e| e.to_string())?;
        let free: Symbol<FreeFn> = library.get(b"critic_free\0").map_err(|e| e.to_string())?;
        let mut out: *mut u8 = std::ptr::null_mut();
        let mut len: usize = 0;
        let status = detect(input.as_ptr(), input.len(), &mut out, &mut len);
        if out.is_null() {
            return Err(format!(
                "critic_detect returned status {status} and no output"
            ));
        }
        let text = String::from_utf8_lossy(std::slice::from_raw_parts(out, len)).into_owned();
        free(out, len);
        Ok((status, text))
    }
}
