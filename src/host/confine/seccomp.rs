//! The seccomp filter a confined command gets where Landlock cannot govern
//! Unix sockets (below ABI 9): no Unix socket can be made, so none of the
//! host's can be connected to, wherever it lies and however it was bound.
//!
//! A filter sees a system call's arguments, not the memory they point to,
//! so it cannot tell a socket path in the scratch copy from one in the
//! user's home; it refuses the socket itself instead. `socket(AF_UNIX, ...)`
//! fails with `EACCES`, and so does a Unix socket pair of any type but
//! `SOCK_STREAM` and `SOCK_SEQPACKET`: a datagram socket (and `SOCK_RAW`,
//! which the kernel makes one) can `sendto` or `connect` any path, while
//! stream and sequenced-packet pairs are connected for good and reach
//! nothing but each other (Python's `socketpair()`, asyncio and
//! `multiprocessing.Pipe` use them). `io_uring_setup` fails with `ENOSYS`:
//! a ring makes sockets without the `socket` call. So does every call of
//! another ABI (i386's `int 0x80`, x32), which would name `socket` by
//! another number.
//!
//! The program is classic BPF, small enough to write out; the unit tests
//! install it in a child and try each call.

use std::io;

/// `struct sock_filter`: one classic BPF instruction.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct Instruction {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// `struct sock_fprog`.
#[repr(C)]
struct Program {
    len: u16,
    filter: *const Instruction,
}

/// `BPF_LD | BPF_W | BPF_ABS`: load a word of `struct seccomp_data`.
const BPF_LD_W_ABS: u16 = 0x20;
/// `BPF_JMP | BPF_JEQ | BPF_K`.
const BPF_JEQ_K: u16 = 0x15;
/// `BPF_JMP | BPF_JGE | BPF_K`.
const BPF_JGE_K: u16 = 0x35;
/// `BPF_ALU | BPF_AND | BPF_K`.
const BPF_AND_K: u16 = 0x54;
/// `BPF_RET | BPF_K`.
const BPF_RET_K: u16 = 0x06;

const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
/// `SECCOMP_SET_MODE_FILTER`.
const SET_MODE_FILTER: libc::c_uint = 1;

/// Where `struct seccomp_data` keeps the call's number, its ABI and the
/// low half of its first two arguments (little-endian machines).
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0: u32 = 16;
const ARG1: u32 = 24;

/// The calls of this machine's native ABI the filter looks at.
#[cfg(target_arch = "x86_64")]
mod abi {
    /// `AUDIT_ARCH_X86_64`.
    pub const ARCH: u32 = 0xc000_003e;
    pub const SOCKET: u32 = 41;
    pub const SOCKETPAIR: u32 = 53;
    pub const IO_URING_SETUP: u32 = 425;
}

#[cfg(target_arch = "aarch64")]
mod abi {
    /// `AUDIT_ARCH_AARCH64`.
    pub const ARCH: u32 = 0xc000_00b7;
    pub const SOCKET: u32 = 198;
    pub const SOCKETPAIR: u32 = 199;
    pub const IO_URING_SETUP: u32 = 425;
}

/// Whether the filter is written for this machine's architecture.
pub(super) const WRITTEN_FOR_THIS_MACHINE: bool =
    cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// The filter, ready to install in a forked child.
#[derive(Debug, Clone)]
pub(super) struct Filter(Vec<Instruction>);

impl Filter {
    /// The filter refusing Unix sockets, on the architectures it is written
    /// for (`None` elsewhere).
    pub(super) fn no_unix_sockets() -> Option<Filter> {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            Some(Filter(program()))
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            None
        }
    }

    /// Install the filter on the calling thread (which must have
    /// `no_new_privs`); it passes to what the thread execs.
    ///
    /// # Safety
    /// Async-signal-safe; for the forked child.
    pub(super) unsafe fn install(&self) -> io::Result<()> {
        let program = Program {
            len: self.0.len() as u16,
            filter: self.0.as_ptr(),
        };
        if libc::syscall(
            libc::SYS_seccomp,
            SET_MODE_FILTER,
            0 as libc::c_uint,
            &program as *const Program,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn program() -> Vec<Instruction> {
    let stmt = |code, k| Instruction {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code, k, jt, jf| Instruction { code, jt, jf, k };
    // Jumps count instructions from the next one; the indexes on the right
    // are what the offsets were worked out from.
    vec![
        /* 0 */ stmt(BPF_LD_W_ABS, ARCH),
        /* 1 */ jump(BPF_JEQ_K, abi::ARCH, 0, 16), // another ABI: 18
        /* 2 */ stmt(BPF_LD_W_ABS, NR),
        /* 3 */ jump(BPF_JGE_K, 0x4000_0000, 14, 0), // x32: 18
        /* 4 */ jump(BPF_JEQ_K, abi::IO_URING_SETUP, 13, 0), // 18
        /* 5 */ jump(BPF_JEQ_K, abi::SOCKET, 2, 0), // 8
        /* 6 */ jump(BPF_JEQ_K, abi::SOCKETPAIR, 3, 0), // 10
        /* 7 */ stmt(BPF_RET_K, SECCOMP_RET_ALLOW),
        // socket(domain, ...)
        /* 8 */ stmt(BPF_LD_W_ABS, ARG0),
        /* 9 */ jump(BPF_JEQ_K, libc::AF_UNIX as u32, 7, 6), // 17 : 16
        // socketpair(domain, type, ...)
        /* 10 */ stmt(BPF_LD_W_ABS, ARG0),
        /* 11 */ jump(BPF_JEQ_K, libc::AF_UNIX as u32, 0, 4), // 12 : 16
        /* 12 */ stmt(BPF_LD_W_ABS, ARG1),
        /* 13 */ stmt(BPF_AND_K, 0xf), // the type without its flags
        /* 14 */ jump(BPF_JEQ_K, libc::SOCK_STREAM as u32, 1, 0), // 16 : 15
        /* 15 */ jump(BPF_JEQ_K, libc::SOCK_SEQPACKET as u32, 0, 1), // 16 : 17
        /* 16 */ stmt(BPF_RET_K, SECCOMP_RET_ALLOW),
        /* 17 */ stmt(BPF_RET_K, SECCOMP_RET_ERRNO | libc::EACCES as u32),
        /* 18 */ stmt(BPF_RET_K, SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calls tried in a child with the filter installed.
    #[derive(Clone, Copy)]
    enum Call {
        Socket(libc::c_int, libc::c_int),
        Pair(libc::c_int),
        IoUringSetup,
    }

    /// What each of `calls` gives in a child with the filter installed: 0
    /// for success, else its errno.
    fn outcomes<const N: usize>(calls: [Call; N]) -> [i32; N] {
        let filter = Filter::no_unix_sockets().expect("a filter for this architecture");
        let mut pipe = [0; 2];
        // SAFETY: a pipe of our own; the child makes only async-signal-safe
        // calls, writes its answers and `_exit`s.
        unsafe {
            assert_eq!(libc::pipe(pipe.as_mut_ptr()), 0);
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                if filter.install().is_err() {
                    libc::_exit(1);
                }
                let mut answers = [0i32; N];
                for (answer, call) in answers.iter_mut().zip(calls) {
                    let mut pair = [0; 2];
                    let made = match call {
                        Call::Socket(domain, kind) => libc::socket(domain, kind, 0),
                        Call::Pair(kind) => {
                            libc::socketpair(libc::AF_UNIX, kind, 0, pair.as_mut_ptr())
                        }
                        Call::IoUringSetup => {
                            let params = [0u8; 120];
                            libc::syscall(libc::SYS_io_uring_setup, 1, params.as_ptr())
                                as libc::c_int
                        }
                    };
                    *answer = if made >= 0 {
                        0
                    } else {
                        std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
                    };
                }
                let size = std::mem::size_of_val(&answers);
                libc::write(pipe[1], answers.as_ptr().cast(), size);
                libc::_exit(0);
            }
            libc::close(pipe[1]);
            let mut answers = [0i32; N];
            let size = std::mem::size_of_val(&answers);
            let n = libc::read(pipe[0], answers.as_mut_ptr().cast(), size);
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            assert_eq!(n as usize, size, "the child could not install the filter");
            answers
        }
    }

    #[test]
    fn unix_sockets_are_refused_and_everything_else_works() {
        let answers = outcomes([
            Call::Socket(libc::AF_UNIX, libc::SOCK_STREAM),
            Call::Socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC),
            Call::Socket(libc::AF_INET, libc::SOCK_STREAM),
            Call::Pair(libc::SOCK_STREAM),
            Call::Pair(libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC),
            Call::Pair(libc::SOCK_DGRAM),
            // The kernel makes a Unix SOCK_RAW socket a datagram socket.
            Call::Pair(libc::SOCK_RAW),
            Call::IoUringSetup,
        ]);
        let (refused, unknown) = (libc::EACCES, libc::ENOSYS);
        assert_eq!(
            answers,
            [refused, refused, 0, 0, 0, refused, refused, unknown]
        );
    }
}
