//! `iomodel MODE ADDR CONNECTIONS SECONDS`: a closed loop of GET requests
//! to ADDR (host:port) on CONNECTIONS connections for SECONDS, with nothing
//! per request but the system calls (or ring entries) it takes: no parsing
//! (the server's answer has a fixed length, measured once before the run),
//! no clock reads, no statistics. What it costs per request is the least
//! any HTTP/1.1 client pays on this kernel with that I/O model.
//!
//! MODE:
//! - `epoll`: edge-triggered epoll; per ready socket one `recv`, then one
//!   `send` per whole response (what metron's loop does, without the rest).
//! - `uring`: io_uring with a multishot receive per socket into a ring of
//!   provided buffers, registered file descriptors, and each turn's sends
//!   queued and submitted together with the next wait (one `io_uring_enter`
//!   per turn, no other system call).
//!
//! Prints `MODE requests N seconds S cpu C` (user + system time).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: iomodel epoll|uring HOST:PORT CONNECTIONS SECONDS";
    let [mode, addr, conns, secs] = &args[..] else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let (Ok(conns), Ok(secs)) = (conns.parse::<usize>(), secs.parse::<u64>()) else {
        eprintln!("CONNECTIONS and SECONDS must be whole numbers; {usage}");
        return ExitCode::from(2);
    };
    if conns == 0 || conns > 4096 {
        eprintln!("CONNECTIONS must be 1 to 4096; {usage}");
        return ExitCode::from(2);
    }
    match run(mode, addr, conns, Duration::from_secs(secs)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("iomodel: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Setup {
    request: Vec<u8>,
    answer_len: usize,
    socks: Vec<TcpStream>,
}

fn run(mode: &str, addr: &str, conns: usize, length: Duration) -> io::Result<()> {
    let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes();
    let answer_len = answer_length(addr, &request)?;
    let socks = (0..conns)
        .map(|_| {
            let s = TcpStream::connect(addr)?;
            s.set_nodelay(true)?;
            s.set_nonblocking(true)?;
            Ok(s)
        })
        .collect::<io::Result<Vec<_>>>()?;
    let setup = Setup {
        request,
        answer_len,
        socks,
    };
    let cpu = cpu_seconds();
    let start = Instant::now();
    let done = match mode {
        "epoll" => with_epoll(&setup, start + length)?,
        "uring" => with_uring(&setup, start + length)?,
        other => {
            return Err(io::Error::other(format!(
                "no mode {other:?}: epoll or uring"
            )))
        }
    };
    let wall = start.elapsed().as_secs_f64();
    println!(
        "{mode} requests {done} seconds {wall:.3} cpu {:.3}",
        cpu_seconds() - cpu
    );
    Ok(())
}

/// The length of one answer: the server's answers to the same request all
/// have it (a fixed body and a date of fixed width).
fn answer_length(addr: &str, request: &[u8]) -> io::Result<usize> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(request)?;
    let mut buf = vec![0; 65536];
    let mut got = 0;
    loop {
        let n = s.read(&mut buf[got..])?;
        if n == 0 {
            return Err(io::Error::other("the server closed before answering"));
        }
        got += n;
        let text = &buf[..got];
        if let Some(head) = text.windows(4).position(|w| w == b"\r\n\r\n") {
            let head_text = String::from_utf8_lossy(&text[..head]).to_ascii_lowercase();
            let body: usize = head_text
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| io::Error::other("the answer has no Content-Length"))?;
            if got >= head + 4 + body {
                return Ok(head + 4 + body);
            }
        }
    }
}

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

fn check(r: isize) -> io::Result<usize> {
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

fn send(fd: i32, request: &[u8]) -> io::Result<()> {
    // SAFETY: the buffer outlives the call.
    let n = check(unsafe {
        libc::send(
            fd,
            request.as_ptr().cast(),
            request.len(),
            libc::MSG_NOSIGNAL,
        )
    })?;
    if n != request.len() {
        return Err(io::Error::other("a short send of a small request"));
    }
    Ok(())
}

fn with_epoll(setup: &Setup, end: Instant) -> io::Result<u64> {
    // SAFETY: plain system calls on descriptors this function owns or borrows.
    let ep = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) } as isize)? as i32;
    for (i, s) in setup.socks.iter().enumerate() {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLET) as u32,
            u64: i as u64,
        };
        check(
            unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, s.as_raw_fd(), &mut ev) } as isize,
        )?;
        send(s.as_raw_fd(), &setup.request)?;
    }
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut buf = vec![0u8; 65536];
    let mut owed = vec![0usize; setup.socks.len()];
    let mut done = 0;
    while Instant::now() < end {
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, 100) };
        for e in &events[..check(n as isize)?] {
            let i = e.u64 as usize;
            let fd = setup.socks[i].as_raw_fd();
            let got = check(unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) })?;
            owed[i] += got;
            while owed[i] >= setup.answer_len {
                owed[i] -= setup.answer_len;
                done += 1;
                send(fd, &setup.request)?;
            }
        }
    }
    unsafe { libc::close(ep) };
    Ok(done)
}

/// Provided buffers: how many (a power of two) and how big.
const BUFFERS: u16 = 512;
const BUFFER_SIZE: usize = 4096;
const SEND: u64 = 1 << 32;

/// A ring of provided buffers shared with the kernel (group 0).
struct BufRing {
    entries: *mut types::BufRingEntry,
    memory: Vec<u8>,
    tail: u16,
}

impl BufRing {
    fn new(ring: &IoUring) -> io::Result<BufRing> {
        let bytes = BUFFERS as usize * std::mem::size_of::<types::BufRingEntry>();
        // SAFETY: an anonymous, page-aligned mapping, unmapped in Drop.
        let entries = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_ANONYMOUS | libc::MAP_PRIVATE,
                -1,
                0,
            )
        };
        if entries == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut b = BufRing {
            entries: entries.cast(),
            memory: vec![0; BUFFERS as usize * BUFFER_SIZE],
            tail: 0,
        };
        for bid in 0..BUFFERS {
            b.give(bid);
        }
        b.publish();
        // SAFETY: the entries stay mapped for as long as the ring uses them.
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(b.entries as u64, BUFFERS, 0, 0)?
        };
        Ok(b)
    }

    /// Hands buffer `bid` (back) to the kernel, seen at the next publish.
    fn give(&mut self, bid: u16) {
        // SAFETY: the index is masked into the mapping; the buffer lies in `memory`.
        unsafe {
            let e = &mut *self.entries.add((self.tail & (BUFFERS - 1)) as usize);
            e.set_addr(self.memory.as_ptr().add(bid as usize * BUFFER_SIZE) as u64);
            e.set_len(BUFFER_SIZE as u32);
            e.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail field of the first entry, shared with the kernel.
        unsafe {
            let tail = types::BufRingEntry::tail(self.entries) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        let bytes = BUFFERS as usize * std::mem::size_of::<types::BufRingEntry>();
        // SAFETY: the mapping made in `new`.
        unsafe { libc::munmap(self.entries.cast(), bytes) };
    }
}

fn with_uring(setup: &Setup, end: Instant) -> io::Result<u64> {
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_coop_taskrun()
        .build(4096)?;
    let fds: Vec<i32> = setup.socks.iter().map(|s| s.as_raw_fd()).collect();
    ring.submitter().register_files(&fds)?;
    let mut bufs = BufRing::new(&ring)?;
    let recv = |i: usize| {
        opcode::RecvMulti::new(types::Fixed(i as u32), 0)
            .build()
            .user_data(i as u64)
    };
    let send = |i: usize| {
        opcode::Send::new(
            types::Fixed(i as u32),
            setup.request.as_ptr(),
            setup.request.len() as u32,
        )
        .build()
        .user_data(SEND | i as u64)
        .flags(squeue::Flags::SKIP_SUCCESS)
    };
    let mut queued: Vec<squeue::Entry> = (0..fds.len()).flat_map(|i| [recv(i), send(i)]).collect();
    let mut owed = vec![0usize; fds.len()];
    let mut done = 0;
    let wait = types::Timespec::new().nsec(100_000_000);
    while Instant::now() < end {
        {
            let mut sq = ring.submission();
            // SAFETY: every entry points at memory that outlives the ring
            // (the request, the registered files, the buffer ring).
            unsafe { sq.push_multiple(&queued) }.map_err(|_| io::Error::other("ring full"))?;
        }
        queued.clear();
        match ring
            .submitter()
            .submit_with_args(1, &types::SubmitArgs::new().timespec(&wait))
        {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) => {}
            Err(e) => return Err(e),
        }
        let mut gave = false;
        for cqe in ring.completion() {
            let (data, res) = (cqe.user_data(), cqe.result());
            if data & SEND != 0 {
                return Err(io::Error::from_raw_os_error(-res));
            }
            let i = data as usize;
            if let Some(bid) = cqueue::buffer_select(cqe.flags()) {
                bufs.give(bid);
                gave = true;
            }
            if !cqueue::more(cqe.flags()) {
                queued.push(recv(i));
            }
            if res == -libc::ENOBUFS {
                continue;
            }
            if res <= 0 {
                return Err(match res {
                    0 => io::Error::other("the server closed a connection"),
                    _ => io::Error::from_raw_os_error(-res),
                });
            }
            owed[i] += res as usize;
            while owed[i] >= setup.answer_len {
                owed[i] -= setup.answer_len;
                done += 1;
                queued.push(send(i));
            }
        }
        if gave {
            bufs.publish();
        }
    }
    Ok(done)
}
