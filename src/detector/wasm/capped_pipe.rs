//! [`CappedPipe`]: a detector's stdout and stderr, kept up to a cap and
//! the rest dropped.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
/// A stdout/stderr sink that keeps the first `cap` bytes and silently drops the
/// rest, so a chatty detector is neither killed nor able to exhaust memory.
#[derive(Clone)]
pub(super) struct CappedPipe {
    inner: Arc<Mutex<CappedBuf>>,
}
pub(super) struct CappedBuf {
    cap: usize,
    bytes: Vec<u8>,
    dropped: usize,
}
impl CappedPipe {
    pub(super) fn new(cap: usize) -> Self {
        CappedPipe {
            inner: Arc::new(Mutex::new(CappedBuf {
                cap,
                bytes: Vec::new(),
                dropped: 0,
            })),
        }
    }

    pub(super) fn text(&self) -> String {
        let buf = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let mut text = String::from_utf8_lossy(&buf.bytes).into_owned();
        if buf.dropped > 0 {
            text.push_str(&format!("\n[{} more bytes dropped]", buf.dropped));
        }
        text
    }
}
impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}
impl StdoutStream for CappedPipe {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}
impl tokio::io::AsyncWrite for CappedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut buf = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let room = buf.cap.saturating_sub(buf.bytes.len());
        let keep = room.min(data.len());
        buf.bytes.extend_from_slice(&data[..keep]);
        buf.dropped += data.len() - keep;
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
