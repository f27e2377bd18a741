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

/// `Some((needed, limit))` when `connections` over `threads` cannot all be
/// open at once under the open-file limit.
pub fn open_files_short(connections: usize, threads: usize) -> io::Result<Option<(u64, u64)>> {
    let limit = raise_open_files()?;
    let needed = connections as u64 + overhead(threads);
    Ok((needed > limit).then_some((needed, limit)))
}

#[cfg(test)]
mod tests {
    use super::*;

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
