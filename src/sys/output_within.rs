//! Running a helper program whose answer is needed within a time: its
//! output read up to a cap (the rest drained, so it never blocks on a full
//! pipe), and its whole process group killed once the time is up.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What the program left.
#[derive(Debug)]
pub struct Output {
    /// How it ended; `None` when it ran out of time and was killed.
    pub status: Option<ExitStatus>,
    /// Its standard output, up to the cap.
    pub stdout: Vec<u8>,
    /// Its standard error, up to the cap.
    pub stderr: Vec<u8>,
}

/// Run `cmd` in a process group of its own for at most `limit`, keeping at
/// most `cap` bytes of each output stream.
pub fn output_within(cmd: &mut Command, limit: Duration, cap: usize) -> std::io::Result<Output> {
    let started = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let reader = |from: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            if let Some(mut from) = from {
                let mut buf = [0u8; 64 << 10];
                while let Ok(n @ 1..) = from.read(&mut buf) {
                    let room = cap.saturating_sub(kept.len()).min(n);
                    kept.extend_from_slice(&buf[..room]);
                }
            }
            let _ = tx.send(kept);
        });
        rx
    };
    let stdout = reader(child.stdout.take().map(|s| Box::new(s) as _));
    let stderr = reader(child.stderr.take().map(|s| Box::new(s) as _));
    let group = child.id() as i32;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            // Out of time, or it cannot be waited for: it is killed below.
            Ok(None) | Err(_) => break None,
        }
    };
    // Whatever it started goes with it, and so does the program itself
    // when its time ran out.
    // SAFETY: kill(2) on a process group this call made; no memory is
    // involved.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
    if status.is_none() {
        let _ = child.wait();
    }
    // A process that left the group may hold the pipes open: it is not
    // waited for.
    let wait = Duration::from_secs(2);
    Ok(Output {
        status,
        stdout: stdout.recv_timeout(wait).unwrap_or_default(),
        stderr: stderr.recv_timeout(wait).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_capped_and_a_slow_program_is_killed_in_time() {
        let out = output_within(
            Command::new("sh").args(["-c", "head -c 100000 /dev/zero; echo err >&2"]),
            Duration::from_secs(10),
            1000,
        )
        .unwrap();
        assert!(out.status.unwrap().success());
        assert_eq!(out.stdout.len(), 1000);
        assert_eq!(out.stderr, b"err\n");

        let started = Instant::now();
        let out = output_within(
            Command::new("sh").args(["-c", "sleep 60 & sleep 60"]),
            Duration::from_millis(200),
            1000,
        )
        .unwrap();
        assert!(out.status.is_none());
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
