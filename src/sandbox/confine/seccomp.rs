//! The seccomp filter every confined command gets: the socket families it
//! may make. IPv4 and IPv6 (in the command's own network namespace), route
//! netlink (what `getaddrinfo` asks about addresses; in that namespace it
//! sees only its loopback), and Unix socket pairs; every other family
//! (vsock, which reaches the hypervisor past any network namespace; packet;
//! the other netlink protocols; Bluetooth, CAN, ...) fails with `EACCES`.
//!
//! Unix sockets themselves are allowed only where Landlock governs what
//! they connect to (ABI 9). Below it a filter, which sees a system call's
//! arguments and not the memory they point to, cannot tell a socket path
//! in the scratch copy from one in the user's home; it refuses the socket
//! itself instead. A Unix socket pair of any type but `SOCK_STREAM` and
//! `SOCK_SEQPACKET` is refused too: a datagram socket (and `SOCK_RAW`,
//! which the kernel makes one) can `sendto` or `connect` any path, while
//! stream and sequenced-packet pairs are connected for good and reach
//! nothing but each other (Python's `socketpair()`, asyncio and
//! `multiprocessing.Pipe` use them). `io_uring_setup` fails with `ENOSYS`:
//! a ring makes sockets without the `socket` call. So does every call of
//! another ABI (i386's `int 0x80`, x32), which would name `socket` by
//! another number.
//!
//! The program is classic BPF, assembled from labelled instructions; the
//! unit tests install it in a child and try each call.

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
const ARG2: u32 = 32;
/// `NETLINK_ROUTE`.
const NETLINK_ROUTE: u32 = 0;

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
    /// The filter of the socket families a command may make (Unix sockets
    /// too when `unix`), on the architectures it is written for (`None`
    /// elsewhere).
    pub(super) fn sockets(unix: bool) -> Option<Filter> {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            Some(Filter(program(unix)))
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let _ = unix;
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

/// One instruction of the program before its jumps are resolved.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
enum Step {
    /// An instruction that does not jump.
    Do(u16, u32),
    /// A conditional jump to one label if true, another if false.
    If(u16, u32, &'static str, &'static str),
    /// A place jumps go to.
    Label(&'static str),
}

/// The instructions of `steps`, each jump's offsets counted from the
/// instruction after it, as classic BPF counts them.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn assemble(steps: &[Step]) -> Vec<Instruction> {
    let mut at = std::collections::HashMap::new();
    let mut n = 0usize;
    for step in steps {
        match step {
            Step::Label(name) => {
                at.insert(*name, n);
            }
            _ => n += 1,
        }
    }
    let mut out = Vec::with_capacity(n);
    for step in steps {
        match *step {
            Step::Do(code, k) => out.push(Instruction {
                code,
                jt: 0,
                jf: 0,
                k,
            }),
            Step::If(code, k, yes, no) => {
                let next = out.len() + 1;
                let offset = |label: &str| (at[label] - next) as u8;
                out.push(Instruction {
                    code,
                    jt: offset(yes),
                    jf: offset(no),
                    k,
                });
            }
            Step::Label(_) => {}
        }
    }
    out
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn program(unix: bool) -> Vec<Instruction> {
    use Step::{Do, If, Label};
    let unix_socket = if unix { "allow" } else { "refuse" };
    assemble(&[
        Do(BPF_LD_W_ABS, ARCH),
        If(BPF_JEQ_K, abi::ARCH, "native", "unknown"),
        Label("native"),
        Do(BPF_LD_W_ABS, NR),
        If(BPF_JGE_K, 0x4000_0000, "unknown", "not_x32"), // x32
        Label("not_x32"),
        If(BPF_JEQ_K, abi::IO_URING_SETUP, "unknown", "1"),
        Label("1"),
        If(BPF_JEQ_K, abi::SOCKET, "socket", "2"),
        Label("2"),
        If(BPF_JEQ_K, abi::SOCKETPAIR, "pair", "allow"),
        // socket(domain, type, protocol)
        Label("socket"),
        Do(BPF_LD_W_ABS, ARG0),
        If(BPF_JEQ_K, libc::AF_INET as u32, "allow", "3"),
        Label("3"),
        If(BPF_JEQ_K, libc::AF_INET6 as u32, "allow", "4"),
        Label("4"),
        If(BPF_JEQ_K, libc::AF_UNIX as u32, unix_socket, "5"),
        Label("5"),
        If(BPF_JEQ_K, libc::AF_NETLINK as u32, "netlink", "refuse"),
        Label("netlink"),
        Do(BPF_LD_W_ABS, ARG2),
        If(BPF_JEQ_K, NETLINK_ROUTE, "allow", "refuse"),
        // socketpair(domain, type, ...)
        Label("pair"),
        Do(BPF_LD_W_ABS, ARG0),
        If(BPF_JEQ_K, libc::AF_UNIX as u32, "pair_type", "refuse"),
        Label("pair_type"),
        Do(BPF_LD_W_ABS, ARG1),
        Do(BPF_AND_K, 0xf), // the type without its flags
        If(BPF_JEQ_K, libc::SOCK_STREAM as u32, "allow", "6"),
        Label("6"),
        If(BPF_JEQ_K, libc::SOCK_SEQPACKET as u32, "allow", "refuse"),
        Label("allow"),
        Do(BPF_RET_K, SECCOMP_RET_ALLOW),
        Label("refuse"),
        Do(BPF_RET_K, SECCOMP_RET_ERRNO | libc::EACCES as u32),
        Label("unknown"),
        Do(BPF_RET_K, SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calls tried in a child with the filter installed.
    #[derive(Clone, Copy)]
    enum Call {
        Socket(libc::c_int, libc::c_int),
        /// A socket of a family with a protocol.
        Proto(libc::c_int, libc::c_int, libc::c_int),
        Pair(libc::c_int),
        IoUringSetup,
    }

    /// What each of `calls` gives in a child with the filter installed: 0
    /// for success, else its errno.
    fn outcomes<const N: usize>(unix: bool, calls: [Call; N]) -> [i32; N] {
        let filter = Filter::sockets(unix).expect("a filter for this architecture");
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
                        Call::Proto(domain, kind, protocol) => libc::socket(domain, kind, protocol),
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
    fn only_ip_route_netlink_and_unix_pairs_are_made() {
        let calls = [
            Call::Socket(libc::AF_UNIX, libc::SOCK_STREAM),
            Call::Socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC),
            Call::Socket(libc::AF_INET, libc::SOCK_STREAM),
            Call::Socket(libc::AF_INET6, libc::SOCK_DGRAM),
            Call::Proto(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_ROUTE),
            // What the host's audit, uevents or firewall say is not the run's.
            Call::Proto(
                libc::AF_NETLINK,
                libc::SOCK_RAW,
                libc::NETLINK_KOBJECT_UEVENT,
            ),
            // vsock reaches the hypervisor past any network namespace.
            Call::Socket(libc::AF_VSOCK, libc::SOCK_STREAM),
            Call::Socket(libc::AF_PACKET, libc::SOCK_RAW),
            Call::Socket(libc::AF_BLUETOOTH, libc::SOCK_STREAM),
            Call::Pair(libc::SOCK_STREAM),
            Call::Pair(libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC),
            Call::Pair(libc::SOCK_DGRAM),
            // The kernel makes a Unix SOCK_RAW socket a datagram socket.
            Call::Pair(libc::SOCK_RAW),
            Call::IoUringSetup,
        ];
        let (refused, unknown) = (libc::EACCES, libc::ENOSYS);
        // A refused family fails whatever the kernel would have said of it
        // (a family it lacks would be EAFNOSUPPORT).
        let made = |errno: i32| errno == 0 || errno == libc::EPERM;
        let answers = outcomes(false, calls);
        assert_eq!(answers[0..2], [refused, refused]);
        assert!(
            made(answers[2]) && made(answers[3]) && made(answers[4]),
            "{answers:?}"
        );
        assert_eq!(answers[5..9], [refused, refused, refused, refused]);
        assert_eq!(answers[9..], [0, 0, refused, refused, unknown]);
        // Where Landlock governs Unix sockets, the filter lets them be made.
        let answers = outcomes(true, calls);
        assert_eq!(answers[0..2], [0, 0]);
        assert_eq!(answers[5..9], [refused, refused, refused, refused]);
    }
}
