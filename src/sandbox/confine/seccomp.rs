//! The seccomp filters every confined command gets: the socket families it
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
//! a ring makes sockets without the `socket` call.
//!
//! Another ABI would name `socket` by another number: a call of one
//! (i386's `int 0x80`) kills the process, and an x32 call (the native
//! architecture, with bit 30 of its number set) fails with `ENOSYS`.
//!
//! `seccompiler` (from the rust-vmm family) builds the filter of the refused
//! sockets (`EACCES`) from rules, checking the architecture first. Its rules
//! are keyed by exact call numbers and give one action per filter, so a
//! guard of four instructions goes before its program: an x32 number (a
//! range) and `io_uring_setup` (another action) end there; anything else
//! falls through to seccompiler's instructions, whose jumps are relative
//! and stay right. One filter, installed with one call, is cheaper for each
//! run than three (measured in `docs/PERFORMANCE.md`).

use seccompiler::{
    sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::BTreeMap;
use std::io;

/// `struct sock_fprog`.
#[repr(C)]
struct Program {
    len: u16,
    filter: *const sock_filter,
}

/// `SECCOMP_SET_MODE_FILTER`.
const SET_MODE_FILTER: libc::c_uint = 1;

/// Where `struct seccomp_data` keeps the call's number.
const NR_OFFSET: u32 = 0;
/// The bit of an x32 call's number.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
/// `NETLINK_ROUTE`.
const NETLINK_ROUTE: u64 = 0;
/// The mask of a socket type without its flags (`SOCK_CLOEXEC`, ...).
const SOCK_TYPE_MASK: u64 = 0xf;

/// Whether the filter is written for this machine's architecture.
pub(super) const WRITTEN_FOR_THIS_MACHINE: bool =
    cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// This machine's architecture, where the filters are written for it.
fn target() -> Option<TargetArch> {
    #[cfg(target_arch = "x86_64")]
    return Some(TargetArch::x86_64);
    #[cfg(target_arch = "aarch64")]
    return Some(TargetArch::aarch64);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    None
}

/// The filter, ready to install in a forked child.
#[derive(Debug, Clone)]
pub(super) struct Filter(BpfProgram);

impl Filter {
    /// The filter of the socket families a command may make (Unix sockets
    /// too when `unix`), on the architectures it is written for (`None`
    /// elsewhere).
    pub(super) fn sockets(unix: bool) -> Option<Filter> {
        let refused = SeccompFilter::new(
            refused_sockets(unix),
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EACCES as u32),
            target()?,
        )
        .and_then(BpfProgram::try_from)
        .expect("the filter's rules are well formed");
        let mut program = guard();
        program.extend(refused);
        Some(Filter(program))
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

/// A condition on argument `arg` (its low 32 bits).
fn on(arg: u8, op: SeccompCmpOp, value: u64) -> SeccompCondition {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
        .expect("arguments 0 to 5 are valid")
}

/// A rule of all of `conditions`.
fn all(conditions: Vec<SeccompCondition>) -> SeccompRule {
    SeccompRule::new(conditions).expect("a rule has conditions")
}

/// The `socket` and `socketpair` calls refused: any of a call's rules
/// matching refuses it.
fn refused_sockets(unix: bool) -> BTreeMap<i64, Vec<SeccompRule>> {
    use SeccompCmpOp::{Eq, MaskedEq, Ne};
    let family = |f: libc::c_int| f as u64;
    // socket(domain, type, protocol): a family not allowed, or a netlink
    // protocol other than routing.
    let mut other_family = vec![
        on(0, Ne, family(libc::AF_INET)),
        on(0, Ne, family(libc::AF_INET6)),
        on(0, Ne, family(libc::AF_NETLINK)),
    ];
    if unix {
        other_family.push(on(0, Ne, family(libc::AF_UNIX)));
    }
    let socket = vec![
        all(other_family),
        all(vec![
            on(0, Eq, family(libc::AF_NETLINK)),
            on(2, Ne, NETLINK_ROUTE),
        ]),
    ];
    // socketpair(domain, type, ...): any family but Unix, and a Unix pair of
    // any type but stream and sequenced-packet (the rules can only compare
    // a masked value for equality, so each other type is named).
    let mut pair = vec![all(vec![on(0, Ne, family(libc::AF_UNIX))])];
    let kept = [libc::SOCK_STREAM as u64, libc::SOCK_SEQPACKET as u64];
    for kind in (0..=SOCK_TYPE_MASK).filter(|k| !kept.contains(k)) {
        pair.push(all(vec![on(1, MaskedEq(SOCK_TYPE_MASK), kind)]));
    }
    BTreeMap::from([(libc::SYS_socket, socket), (libc::SYS_socketpair, pair)])
}

/// `BPF_LD | BPF_W | BPF_ABS`: load a word of `struct seccomp_data`.
const LOAD: u16 = 0x20;
/// `BPF_JMP | BPF_JGE | BPF_K`.
const JGE: u16 = 0x35;
/// `BPF_JMP | BPF_JEQ | BPF_K`.
const JEQ: u16 = 0x15;
/// `BPF_RET | BPF_K`.
const RET: u16 = 0x06;

/// The guard before seccompiler's program: an x32 call (its number with bit
/// 30 set) and `io_uring_setup` fail with `ENOSYS`; any other call falls
/// through to the instruction after it. Jumps count from the next one.
fn guard() -> BpfProgram {
    let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        op(LOAD, 0, 0, NR_OFFSET),
        op(JGE, 1, 0, X32_SYSCALL_BIT),
        op(JEQ, 0, 1, libc::SYS_io_uring_setup as u32),
        op(RET, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ]
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
        /// `socket` by its x32 number.
        X32Socket(libc::c_int),
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
                        Call::X32Socket(domain) => libc::syscall(
                            X32_SYSCALL_BIT as libc::c_long | libc::SYS_socket,
                            domain,
                            libc::SOCK_STREAM,
                            0,
                        ) as libc::c_int,
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
            // `socket` of another number: no rule keyed by the native one
            // sees it, the guard does.
            Call::X32Socket(libc::AF_VSOCK),
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
        assert_eq!(answers[9..], [0, 0, refused, refused, unknown, unknown]);
        // Where Landlock governs Unix sockets, the filter lets them be made.
        let answers = outcomes(true, calls);
        assert_eq!(answers[0..2], [0, 0]);
        assert_eq!(answers[5..9], [refused, refused, refused, refused]);
    }

    /// What the guard answers a call numbered `nr`, read off its program as
    /// the kernel runs it: `Some` of what it returns, `None` when the call
    /// falls through to seccompiler's program. (This machine's kernel may
    /// lack x32, which answers `ENOSYS` with or without the guard.)
    fn guard_answers(nr: u32) -> Option<u32> {
        let program = guard();
        let (mut at, mut accumulator) = (0usize, 0u32);
        while let Some(op) = program.get(at) {
            match op.code {
                LOAD => {
                    assert_eq!(op.k, NR_OFFSET, "the guard loads the call's number");
                    accumulator = nr;
                }
                JGE | JEQ => {
                    let holds = if op.code == JGE {
                        accumulator >= op.k
                    } else {
                        accumulator == op.k
                    };
                    at += usize::from(if holds { op.jt } else { op.jf });
                }
                RET => return Some(op.k),
                code => panic!("the guard holds an instruction it should not: {code:#x}"),
            }
            at += 1;
        }
        assert_eq!(at, program.len(), "a jump past the guard's end");
        None
    }

    #[test]
    fn the_guard_refuses_x32_calls_and_io_uring_and_passes_the_rest() {
        let refused = Some(libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32);
        assert_eq!(guard_answers(X32_SYSCALL_BIT | 41), refused);
        assert_eq!(guard_answers(u32::MAX), refused);
        assert_eq!(guard_answers(libc::SYS_io_uring_setup as u32), refused);
        assert_eq!(guard_answers(41), None);
        assert_eq!(guard_answers(X32_SYSCALL_BIT - 1), None);
    }
}
