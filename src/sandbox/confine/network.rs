//! A confined command's network namespace, set up in the forked child: its
//! loopback brought up and, for a run, the addresses off the machine routed
//! nowhere and the resolver's configuration covered.

/// The resolver's configuration, covered in a run (see `Confinement::new`).
pub(super) const RESOLV_CONF: &str = "/etc/resolv.conf";

/// Route every IPv4 address off this machine through the namespace's
/// loopback, where nothing forwards it: a connection to one waits and times
/// out, as from a container whose packets go nowhere, where without a route
/// it would fail at once with "Network is unreachable" (a test of a
/// client's timeout, such as requests' connection to 10.255.255.1, then
/// fails). Loopback addresses are unchanged. IPv6 stays unreachable, as in
/// Docker's default network, which has none (the kernel turns an IPv6 route
/// through the loopback into a rejecting one anyway). Best effort.
///
/// # Safety
/// Async-signal-safe; for the forked child, after [`loopback_up`].
pub(super) unsafe fn routes_to_nowhere() {
    let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if sock >= 0 {
        let mut route: libc::rtentry = std::mem::zeroed();
        for addr in [&mut route.rt_dst, &mut route.rt_genmask] {
            let any = addr as *mut libc::sockaddr as *mut libc::sockaddr_in;
            (*any).sin_family = libc::AF_INET as libc::sa_family_t;
        }
        route.rt_flags = libc::RTF_UP;
        route.rt_dev = c"lo".as_ptr() as *mut libc::c_char;
        libc::ioctl(sock, libc::SIOCADDRT, &route);
        libc::close(sock);
    }
}

/// Bring up the new network namespace's loopback, so a test suite can still
/// talk to servers it starts itself. Best effort: without it the command
/// simply has no network at all.
///
/// # Safety
/// Async-signal-safe; for the forked child.
pub(super) unsafe fn loopback_up() {
    let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if sock < 0 {
        return;
    }
    let mut req: libc::ifreq = std::mem::zeroed();
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    if libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req) == 0 {
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        libc::ioctl(sock, libc::SIOCSIFFLAGS, &req);
    }
    libc::close(sock);
}
