//! Unit tests of `wasm`.

use super::*;

#[test]
fn header_check_tells_modules_from_components() {
    let p = Path::new("x.wasm");
    assert!(check_header(p, b"\0asm\x0d\0\x01\0").is_ok());
    let e = check_header(p, b"\0asm\x01\0\0\0").unwrap_err().to_string();
    assert!(e.contains("core WebAssembly module"), "{e}");
    let e = check_header(p, b"ELF....").unwrap_err().to_string();
    assert!(e.contains("not a WebAssembly file"), "{e}");
}
