//! A native detector: the `empty-patch` check behind the host's C ABI (see
//! `src/native.rs`). Native detectors are trusted code; the host loads them only
//! with `--allow-native`. Build with `cargo build -p native-detector` and point a
//! signal's `detector:` at `target/debug/libnative_detector.so`.

use critic_sdk::{DetectorInput, DetectorOutput};

/// The ABI version this library implements.
#[no_mangle]
pub extern "C" fn critic_native_abi_version() -> u32 {
    1
}

fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    if input.patch.raw.trim().is_empty() {
        return Ok(DetectorOutput::fire(
            "The patch is empty (native detector).",
        ));
    }
    Ok(DetectorOutput::pass()
        .with_metadata(serde_json::json!({ "files": input.patch.files.len() })))
}

/// Run the detector on `input` (DetectorInput JSON); the result is written to
/// `*out` / `*out_len` and must be released with [`critic_free`].
///
/// # Safety
/// `input` must point to `input_len` readable bytes; `out` and `out_len` must
/// be valid for writes.
#[no_mangle]
pub unsafe extern "C" fn critic_detect(
    input: *const u8,
    input_len: usize,
    out: *mut *mut u8,
    out_len: *mut usize,
) -> i32 {
    let bytes = std::slice::from_raw_parts(input, input_len);
    let (status, text) = match std::str::from_utf8(bytes)
        .map_err(|e| e.to_string())
        .and_then(|s| critic_sdk::run_detector(s, detect))
    {
        Ok(json) => (0, json),
        Err(message) => (1, message),
    };
    let mut boxed = text.into_bytes().into_boxed_slice();
    *out_len = boxed.len();
    *out = boxed.as_mut_ptr();
    std::mem::forget(boxed);
    status
}

/// Release a buffer returned by [`critic_detect`].
///
/// # Safety
/// `ptr`/`len` must come from one `critic_detect` call and be freed once.
#[no_mangle]
pub unsafe extern "C" fn critic_free(ptr: *mut u8, len: usize) {
    drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)));
}
