//! Operating-system limits checked before a run, so that a run that cannot
//! open its connections fails with one line saying how to fix it instead of
//! counting thousands of connect errors.

use std::io;

/// Descriptors a run needs besides its connections: per thread a poller,
/// a timer and a waker, plus the process's own (stdio, signals, files).
fn overhead(threads: usize) -> u64 {
    64 + 4 * threads as u64
}

/// The open-file limit after raising the soft limit as far as the hard
/// limit allows.
pub fn raise_open_files() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads one valid rlimit; failure leaves the old one.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    // rlim_t is u64 here but narrower on some targets.
    #[allow(clippy::unnecessary_cast)]
    Ok(lim.rlim_cur as u64)
}

/// The most connections `threads` threads can have open under the
/// open-file limit (raised as far as it goes): `-c auto`'s ceiling.
pub fn connections_allowed(threads: usize) -> usize {
    let limit = raise_open_files().unwrap_or(1024);
    limit.saturating_sub(overhead(threads)).max(threads as u64) as usize
}

/// `Some((needed, limit))` when `connections` over `threads` cannot all be
/// open at once under the open-file limit.
pub fn open_files_short(connections: usize, threads: usize) -> io::Result<Option<(u64, u64)>> {
    let limit = raise_open_files()?;
    let needed = connections as u64 + overhead(threads);
    Ok((needed > limit).then_some((needed, limit)))
}

/// Where Linux keeps the range of local ports it gives outgoing
/// connections.
const PORT_RANGE: &str = "/proc/sys/net/ipv4/ip_local_port_range";

/// The local port range for outgoing connections, if the system says.
pub fn local_port_range() -> Option<(u16, u16)> {
    parse_port_range(&std::fs::read_to_string(PORT_RANGE).ok()?)
}

fn parse_port_range(text: &str) -> Option<(u16, u16)> {
    let mut ports = text.split_whitespace().map(str::parse::<u16>);
    match (ports.next(), ports.next()) {
        (Some(Ok(lo)), Some(Ok(hi))) if lo <= hi => Some((lo, hi)),
        _ => None,
    }
}

/// `Some(available)` when `connections` to one address need more local
/// ports than `range` holds: every connection from this host to one
/// address and port needs a local port of its own.
pub fn ports_short(connections: usize, range: (u16, u16)) -> Option<u64> {
    let available = u64::from(range.1 - range.0) + 1;
    (connections as u64 > available).then_some(available)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_range_is_read_as_the_kernel_writes_it() {
        assert_eq!(parse_port_range("32768\t60999\n"), Some((32768, 60999)));
        assert_eq!(parse_port_range("1024 1024"), Some((1024, 1024)));
        assert_eq!(parse_port_range("60999 32768"), None);
        assert_eq!(parse_port_range("nonsense"), None);
        assert!(local_port_range().is_some(), "Linux states its range");
    }

    #[test]
    fn more_connections_than_ports_are_short() {
        assert_eq!(ports_short(28_232, (32768, 60999)), None);
        assert_eq!(ports_short(28_233, (32768, 60999)), Some(28_232));
        assert_eq!(ports_short(2, (5000, 5000)), Some(1));
    }

    #[test]
    fn a_modest_run_fits() {
        assert_eq!(open_files_short(10, 2).unwrap(), None);
    }

    #[test]
    fn an_absurd_run_does_not() {
        let (needed, limit) = open_files_short(usize::MAX / 2, 1).unwrap().unwrap();
        assert!(needed > limit);
    }
}
