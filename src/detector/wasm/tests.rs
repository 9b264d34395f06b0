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

#[test]
fn capped_pipe_keeps_the_head_and_counts_the_rest() {
    use tokio::io::AsyncWrite;
    let mut pipe = CappedPipe::new(4);
    let waker = std::task::Waker::noop();
    let mut cx = Context::from_waker(waker);
    let n = Pin::new(&mut pipe).poll_write(&mut cx, b"hello world");
    assert!(matches!(n, Poll::Ready(Ok(11))));
    assert_eq!(pipe.text(), "hell\n[7 more bytes dropped]");
}
