//! The network and clock facts behind `wrk.lookup`, `wrk.connect` and
//! `wrk.time_us`, as plain Rust functions the Lua bindings call.
//!
//! `wrk.lookup(host, service)` takes a service *name* as well as a port
//! number ("http" as well as "80"), which `std::net` cannot resolve, so it
//! calls `getaddrinfo` directly, asking for stream sockets as a TCP client
//! would.

use std::ffi::CString;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, TcpStream};
use std::ptr;
use std::time::Duration;

/// How long `wrk.connect` waits for a connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Resolves `host` and `service` to the addresses a TCP client would try,
/// in the resolver's order. The error is the resolver's own message.
pub(crate) fn lookup(host: &str, service: &str) -> Result<Vec<SocketAddr>, String> {
    let c_host = CString::new(host).map_err(|_| "host name contains a NUL byte".to_owned())?;
    let c_service =
        CString::new(service).map_err(|_| "service name contains a NUL byte".to_owned())?;
    // SAFETY: all-zero is a valid `addrinfo` (null pointers, zero fields).
    let mut hints: libc::addrinfo = unsafe { std::mem::zeroed() };
    hints.ai_family = libc::AF_UNSPEC;
    hints.ai_socktype = libc::SOCK_STREAM;
    let mut list: *mut libc::addrinfo = ptr::null_mut();
    // SAFETY: the strings are NUL-terminated and outlive the call; `list`
    // receives a list we free below.
    let rc = unsafe { libc::getaddrinfo(c_host.as_ptr(), c_service.as_ptr(), &hints, &mut list) };
    if rc != 0 {
        return Err(resolver_error(rc));
    }
    let addrs = collect(list);
    // SAFETY: `list` came from a successful getaddrinfo and is freed once.
    unsafe { libc::freeaddrinfo(list) };
    Ok(addrs)
}

/// Walks a getaddrinfo result, keeping IPv4 and IPv6 entries.
fn collect(list: *const libc::addrinfo) -> Vec<SocketAddr> {
    let mut addrs = Vec::new();
    let mut node = list;
    // SAFETY: each node is a valid `addrinfo` of the list until freed; the
    // address is read as the type its family says it is.
    while let Some(info) = unsafe { node.as_ref() } {
        if let Some(addr) = unsafe { to_socket_addr(info) } {
            addrs.push(addr);
        }
        node = info.ai_next;
    }
    addrs
}

/// # Safety
/// `info.ai_addr` must point to a socket address of family `ai_family`.
unsafe fn to_socket_addr(info: &libc::addrinfo) -> Option<SocketAddr> {
    match info.ai_family {
        libc::AF_INET => {
            let sin = &*(info.ai_addr as *const libc::sockaddr_in);
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddrV4::new(ip, u16::from_be(sin.sin_port)).into())
        }
        libc::AF_INET6 => {
            let sin6 = &*(info.ai_addr as *const libc::sockaddr_in6);
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            let port = u16::from_be(sin6.sin6_port);
            Some(SocketAddrV6::new(ip, port, sin6.sin6_flowinfo, sin6.sin6_scope_id).into())
        }
        _ => None,
    }
}

fn resolver_error(rc: libc::c_int) -> String {
    if rc == libc::EAI_SYSTEM {
        return std::io::Error::last_os_error().to_string();
    }
    // SAFETY: gai_strerror returns a static NUL-terminated string.
    let text = unsafe { std::ffi::CStr::from_ptr(libc::gai_strerror(rc)) };
    text.to_string_lossy().into_owned()
}

/// True if a TCP connection to `addr` opens within [`CONNECT_TIMEOUT`].
pub(crate) fn can_connect(addr: &SocketAddr) -> bool {
    TcpStream::connect_timeout(addr, CONNECT_TIMEOUT).is_ok()
}

/// Microseconds on the monotonic clock, the clock the engine times with.
pub(crate) fn time_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn looks_up_numeric_hosts_and_ports() {
        let addrs = lookup("127.0.0.1", "80").unwrap();
        assert_eq!(addrs, vec!["127.0.0.1:80".parse::<SocketAddr>().unwrap()]);
    }

    #[test]
    fn looks_up_ipv6_literals() {
        let addrs = lookup("::1", "8080").unwrap();
        assert_eq!(addrs[0].to_string(), "[::1]:8080");
    }

    #[test]
    fn unknown_names_fail_with_the_resolvers_message() {
        let error = lookup("host.invalid", "80").unwrap_err();
        assert!(!error.is_empty());
        assert!(lookup("127.0.0.1", "no-such-service-name").is_err());
    }

    #[test]
    fn connect_succeeds_only_where_someone_listens() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        assert!(can_connect(&addr));
        drop(listener);
        assert!(!can_connect(&addr));
    }

    #[test]
    fn time_moves_forward() {
        let a = time_us();
        std::thread::sleep(Duration::from_millis(2));
        assert!(time_us() >= a + 2_000);
    }
}
