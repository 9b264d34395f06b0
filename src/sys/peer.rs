//! Who is at the other end of a local connection: whether a Unix socket's
//! peer shares this process's user and network namespaces, and which user
//! owns the other end of a loopback TCP connection.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;

/// `SO_PEERPIDFD` of `<asm-generic/socket.h>` (Linux 6.5): a pidfd of the
/// process that connected.
const SO_PEERPIDFD: libc::c_int = 77;

/// Whether the process that connected to `socket` (whose pid, as the
/// kernel recorded it at `connect`, is `pid`) is in this process's user and
/// network namespaces. A confined run is in neither, so a server that asks
/// refuses it even when it can see the socket; `Err` says why not.
pub fn same_namespaces(socket: BorrowedFd<'_>, pid: Option<i32>) -> Result<(), String> {
    let pid = pid
        .filter(|&p| p > 0)
        .ok_or("its process is not visible here (another PID namespace)")?;
    let pidfd = peer_pidfd(socket);
    for ns in ["user", "net"] {
        let id = |path: String| {
            std::fs::metadata(&path)
                .map(|m| (m.dev(), m.ino()))
                .map_err(|e| format!("cannot tell its {ns} namespace ({path}: {e})"))
        };
        if id(format!("/proc/self/ns/{ns}"))? != id(format!("/proc/{pid}/ns/{ns}"))? {
            return Err(format!("it is in another {ns} namespace"));
        }
    }
    // The pid named the peer when it connected; had that process ended
    // since, the pid might have named another process, looked at instead.
    if pidfd.is_some_and(|fd| has_exited(&fd)) {
        return Err("it ended before it could be checked".into());
    }
    Ok(())
}

/// A pidfd of `socket`'s peer, where the kernel gives one.
fn peer_pidfd(socket: BorrowedFd<'_>) -> Option<OwnedFd> {
    let mut fd: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `fd`.
    let got = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_PEERPIDFD,
            (&mut fd as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    // SAFETY: on success the kernel handed us a new descriptor we now own.
    (got == 0 && fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether the process of `pidfd` has exited (its pidfd is readable then).
fn has_exited(pidfd: &OwnedFd) -> bool {
    let mut poll = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one live descriptor, without waiting.
    unsafe { libc::poll(&mut poll, 1, 0) == 1 }
}

/// The user owning the other end of a loopback TCP connection whose
/// addresses are `local` (ours) and `peer`: on loopback every user connects
/// from the same addresses, and the user is what tells one client from
/// another. Asked of the kernel's socket table through `sock_diag`, one
/// socket looked up by its addresses (a fixed cost, however many
/// connections are open).
pub fn tcp_peer_uid(local: std::net::SocketAddr, peer: std::net::SocketAddr) -> Option<u32> {
    use std::net::SocketAddr;
    /// `SOCK_DIAG_BY_FAMILY` of `<linux/sock_diag.h>`.
    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    /// Where `idiag_uid` sits in the answer: after the netlink header (16),
    /// four bytes of family and state, the socket id (48) and three counters.
    const UID_AT: usize = 16 + 4 + 48 + 12;
    let family = match peer {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    let ip_bytes = |a: &SocketAddr| -> [u8; 16] {
        let mut out = [0; 16];
        match a {
            SocketAddr::V4(v4) => out[..4].copy_from_slice(&v4.ip().octets()),
            SocketAddr::V6(v6) => out.copy_from_slice(&v6.ip().octets()),
        }
        out
    };
    // nlmsghdr (16) + inet_diag_req_v2 (56): the peer's socket is the one
    // whose source is `peer` and destination `local`.
    let mut request = [0u8; 72];
    request[0..4].copy_from_slice(&72u32.to_ne_bytes());
    request[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    request[6..8].copy_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
    request[16] = family as u8;
    request[17] = libc::IPPROTO_TCP as u8;
    request[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
    request[24..26].copy_from_slice(&peer.port().to_be_bytes());
    request[26..28].copy_from_slice(&local.port().to_be_bytes());
    request[28..44].copy_from_slice(&ip_bytes(&peer));
    request[44..60].copy_from_slice(&ip_bytes(&local));
    // No cookie to match (INET_DIAG_NOCOOKIE).
    request[64..72].copy_from_slice(&[0xff; 8]);
    // SAFETY: a netlink socket of our own, a request and an answer buffer
    // that live across the calls, and a descriptor closed by OwnedFd.
    unsafe {
        let fd = libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        );
        if fd < 0 {
            return None;
        }
        let fd = OwnedFd::from_raw_fd(fd);
        let mut kernel: libc::sockaddr_nl = std::mem::zeroed();
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        let sent = libc::sendto(
            fd.as_raw_fd(),
            request.as_ptr().cast(),
            request.len(),
            0,
            (&kernel as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        );
        if sent != request.len() as isize {
            return None;
        }
        let mut answer = [0u8; 512];
        let got = libc::recv(fd.as_raw_fd(), answer.as_mut_ptr().cast(), answer.len(), 0);
        let got = usize::try_from(got).ok()?;
        let kind = u16::from_ne_bytes([answer[4], answer[5]]);
        // Anything but the socket's record (an error: no such socket,
        // the peer closed, say) tells nothing.
        if got < UID_AT + 4 || kind != SOCK_DIAG_BY_FAMILY {
            return None;
        }
        Some(u32::from_ne_bytes(
            answer[UID_AT..UID_AT + 4].try_into().ok()?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_peer_of_this_process_shares_its_namespaces() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(
            same_namespaces(a.as_fd(), Some(std::process::id() as i32)),
            Ok(())
        );
        assert!(same_namespaces(a.as_fd(), None).is_err());
        assert!(same_namespaces(a.as_fd(), Some(0)).is_err());
    }

    #[test]
    fn the_owner_of_a_loopback_connection_is_found() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        assert_eq!(tcp_peer_uid(server.local_addr().unwrap(), peer), Some(me));
        // A port nobody holds has no owner.
        let nobody = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
        assert_eq!(tcp_peer_uid(server.local_addr().unwrap(), nobody), None);
        // And over IPv6 loopback.
        if let Ok(listener) = std::net::TcpListener::bind("[::1]:0") {
            let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (server, peer) = listener.accept().unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
            assert_eq!(tcp_peer_uid(server.local_addr().unwrap(), peer), Some(me));
        }
    }
}
