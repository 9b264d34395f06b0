//! What an agent's turn gets beyond a run's confinement (see
//! [`super::Confinement::for_agent`]): the experiment's own places covered
//! as the homes are, and the only network it can reach.
//!
//! The turn keeps its own network namespace, whose only interface is its
//! loopback. The agent needs its model's API, so the runner names the
//! endpoints it may reach: for each, a listening TCP socket is opened
//! *inside* the namespace (at the loopback address the agent will dial) and
//! its descriptor sent back to the runner over a socket pair. The runner
//! serves the model's listener with the run's model proxy
//! (`crate::experiment::model_proxy`) and forwards every connection
//! accepted at the others to their real endpoints (see
//! [`crate::sys::forward`]). An endpoint named by host name reaches the turn
//! through its own `/etc/hosts`, which maps that name to a loopback address;
//! TLS to it runs end to end, since the bytes are forwarded as they are. Nothing
//! else is reachable: not the host's loopback services, not its Unix
//! sockets (the namespace scopes abstract ones, and pathname ones are hidden
//! or refused as for runs), not the internet.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

/// Most listeners a turn may have (their descriptors go back in one
/// message, built in the forked child without allocating).
pub const MAX_LISTENERS: usize = 8;

/// What an agent's turn may reach beyond its writable directories.
#[derive(Debug, Default, Clone)]
pub struct AgentReach {
    /// Places the agent must not read, covered like a home: directories by
    /// an empty file system (the writable ones inside put back), files by
    /// `/dev/null`. The output directory, the user's repositories, the
    /// instances with their golden patches.
    pub covered: Vec<PathBuf>,
    /// Loopback addresses in the turn's namespace that the runner listens
    /// on (through the descriptors [`Listeners::receive`] returns).
    pub listen: Vec<SocketAddr>,
    /// A file bound over `/etc/hosts` (names the agent dials, mapped to
    /// the listeners' loopback address).
    pub hosts: Option<PathBuf>,
    /// How much each of the turn's private directories (`/tmp`, `/var/tmp`,
    /// `/dev/shm`) holds; `None`: [`super::DEFAULT_PRIVATE_DIR_BYTES`].
    pub tmp_bytes: Option<u64>,
}

/// The runner's end of the listeners a confined turn opens.
#[derive(Debug)]
pub struct Listeners {
    channel: OwnedFd,
    count: usize,
}

/// The child's side: where to listen, and where to send the sockets.
#[derive(Debug)]
pub(super) struct ChildListen {
    addrs: Vec<(libc::sockaddr_storage, libc::socklen_t)>,
    channel: OwnedFd,
}

/// Prepare `listen` (in the parent, where allocating is allowed): the
/// child's plan and the runner's end.
pub(super) fn prepare(listen: &[SocketAddr]) -> Result<(ChildListen, Listeners), String> {
    if listen.len() > MAX_LISTENERS {
        return Err(format!(
            "at most {MAX_LISTENERS} endpoints for an agent's turn"
        ));
    }
    for addr in listen {
        if !addr.ip().is_loopback() {
            return Err(format!(
                "{addr}: a turn listens only on loopback addresses (internal error)"
            ));
        }
    }
    let mut fds = [0; 2];
    // SAFETY: socketpair fills the two descriptors it creates.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(format!(
            "cannot make a socket pair: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: both descriptors were just created and are owned here.
    let (runner, child) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((
        ChildListen {
            addrs: listen.iter().map(sockaddr).collect(),
            channel: child,
        },
        Listeners {
            channel: runner,
            count: listen.len(),
        },
    ))
}

fn sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is valid; the family-specific
    // struct written into it fits (that is what the storage is for).
    unsafe {
        let mut storage: libc::sockaddr_storage = std::mem::zeroed();
        let len = match addr {
            SocketAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from(*a.ip()).to_be(),
                    },
                    sin_zero: [0; 8],
                };
                std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin);
                std::mem::size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: 0,
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: 0,
                };
                std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6);
                std::mem::size_of::<libc::sockaddr_in6>()
            }
        };
        (storage, len as libc::socklen_t)
    }
}

impl ChildListen {
    /// Open every listener in this (new) network namespace and send them
    /// to the runner in one message.
    ///
    /// # Safety
    /// Async-signal-safe; for the forked child, after its loopback is up.
    pub(super) unsafe fn open_and_send(&self) -> std::io::Result<()> {
        let os = std::io::Error::last_os_error;
        let mut opened = [-1 as libc::c_int; MAX_LISTENERS];
        let close_all = |opened: &[libc::c_int]| {
            for &fd in opened.iter().filter(|&&fd| fd >= 0) {
                libc::close(fd);
            }
        };
        for (slot, (addr, len)) in opened.iter_mut().zip(&self.addrs) {
            let fd = libc::socket(
                addr.ss_family as libc::c_int,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
            );
            if fd < 0 {
                let e = os();
                close_all(&opened);
                return Err(e);
            }
            *slot = fd;
            let one: libc::c_int = 1;
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_REUSEADDR,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
            if libc::bind(fd, (addr as *const libc::sockaddr_storage).cast(), *len) != 0
                || libc::listen(fd, 64) != 0
            {
                let e = os();
                close_all(&opened);
                return Err(e);
            }
        }
        let count = self.addrs.len();
        // One byte of data carries the descriptors.
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = [0u64; 16];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        let fds_len = (count * std::mem::size_of::<libc::c_int>()) as libc::c_uint;
        if count > 0 {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(fds_len) as _;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(fds_len) as _;
            std::ptr::copy_nonoverlapping(
                opened.as_ptr(),
                libc::CMSG_DATA(cmsg).cast::<libc::c_int>(),
                count,
            );
        }
        let sent = libc::sendmsg(self.channel.as_raw_fd(), &msg, libc::MSG_NOSIGNAL);
        let e = os();
        close_all(&opened);
        if sent != 1 {
            return Err(e);
        }
        Ok(())
    }
}

impl Listeners {
    /// The listening sockets the started turn opened, in the order they
    /// were asked for. Call once the command has started.
    pub fn receive(self) -> std::io::Result<Vec<std::net::TcpListener>> {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = [0u64; 16];
        // SAFETY: recvmsg into buffers that live through the call; the
        // descriptors read from the control message are owned from here.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control) as _;
            let n = libc::recvmsg(
                self.channel.as_raw_fd(),
                &mut msg,
                libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
            );
            if n != 1 {
                return Err(std::io::Error::other(format!(
                    "the turn sent no listeners: {}",
                    std::io::Error::last_os_error()
                )));
            }
            let mut listeners = Vec::new();
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(cmsg).cast::<libc::c_int>();
                    let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                    for i in 0..bytes / std::mem::size_of::<libc::c_int>() {
                        let fd = std::ptr::read_unaligned(data.add(i));
                        listeners.push(std::net::TcpListener::from(OwnedFd::from_raw_fd(fd)));
                    }
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
            if listeners.len() != self.count {
                return Err(std::io::Error::other(format!(
                    "the turn sent {} listeners, not {}",
                    listeners.len(),
                    self.count
                )));
            }
            Ok(listeners)
        }
    }
}

/// The `/etc/hosts` of a turn whose endpoints are `names`, each mapped to
/// the loopback address of its listener only (a client that tried an IPv6
/// address first might not fall back), with `localhost` kept on `127.0.0.1`
/// unless it is one of them.
pub fn hosts_file(names: &[(String, IpAddr)]) -> String {
    let mut text = String::new();
    if !names.iter().any(|(n, _)| n == "localhost") {
        text.push_str("127.0.0.1\tlocalhost\n");
    }
    text.push_str("::1\tip6-localhost ip6-loopback\n");
    for (name, ip) in names {
        text.push_str(&format!("{ip}\t{name}\n"));
    }
    text
}

/// Whether `ip` is reachable from a turn through a listener at the same
/// address: only loopback addresses exist in its namespace.
pub fn listenable(ip: IpAddr) -> bool {
    ip.is_loopback()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_maps_to_its_listeners_address_only() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let text = hosts_file(&[
            ("api.example.com".into(), ip("127.0.0.2")),
            ("localhost".into(), ip("127.0.0.3")),
        ]);
        assert_eq!(
            text,
            "::1\tip6-localhost ip6-loopback\n127.0.0.2\tapi.example.com\n127.0.0.3\tlocalhost\n"
        );
    }
}
