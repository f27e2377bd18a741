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
//! - `h2c`: HTTP/2 with prior knowledge over edge-triggered epoll, STREAMS
//!   (default 100) in flight on each connection: per ready socket one
//!   `recv`, the frames walked only for their type, flags and length (a
//!   stream ends at END_STREAM; HPACK is not decoded, SETTINGS and PING
//!   are acknowledged), then one `send` of a ready-made HEADERS frame for
//!   each stream that ended. Windows are opened wide once at the start.
//!   What it costs per request is the least any HTTP/2 client pays here
//!   with one read and one write per ready connection.
//!
//! - `pace`: the floor under pacing, not throughput. Requests fall due at
//!   RATE (the fifth argument, default 90000) per second on one schedule;
//!   the loop sleeps in `epoll_pwait2` (a nanosecond timeout) until the
//!   next is due, then sends every request that has fallen due, each on a
//!   connection whose last answer is in (one request in flight on each,
//!   as metron's HTTP/1.1 keeps them; the answers' fixed length, measured
//!   once, says when one is in), and notes how late each left against its
//!   due time. A request that finds every connection busy waits for one,
//!   and its lag counts the wait, as metron's does. After one second of
//!   warm-up it measures SECONDS and prints the send lag's p50, p99 and
//!   max: the least lateness this machine's timers, scheduler and server
//!   allow a sender on this core today, for metron's `Send lag` to be
//!   judged beside.
//!
//! - `sleep`: the floor of a generator that keeps a schedule and waits for
//!   each answer, for bench/ws.sh and bench/flows.sh to set beside their
//!   generators' CPU: `iomodel sleep HOST:PORT CONNECTIONS SECONDS RATE
//!   http PATH` or `... RATE ws PATH MESSAGE`. Requests (or WebSocket
//!   messages, after an upgrade on each connection) fall due at RATE per
//!   second, round robin over the connections; for each, one
//!   `clock_nanosleep` until it is due, one `send`, and blocking `recv`s
//!   until its answer is in (an HTTP answer's length measured once, a
//!   text frame's echo two bytes longer than the message). One at a time,
//!   so it keeps the schedule while a round trip is shorter than the gap
//!   between two; later, it sends late, never skips. A receive waits at
//!   most 5 s.
//!
//! Prints `MODE requests N seconds S cpu C` (user + system time); `pace`
//! prints `pace requests N lag_p50_us A lag_p99_us B lag_max_us C`;
//! `sleep` prints one JSON object: `asked`, `sent`, `answered`, `seconds`
//! (from the first due time to the last answer) and `first_ms` (when the
//! first was due, ms since the epoch).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: iomodel epoll|uring|h2c|pace HOST:PORT CONNECTIONS SECONDS [STREAMS|RATE]\n       \
                 iomodel sleep HOST:PORT CONNECTIONS SECONDS RATE http PATH | ws PATH MESSAGE";
    if let [m, a, c, s, rest @ ..] = &args[..] {
        if m == "pace" {
            return pace_main(a, c, s, rest.first().map_or("90000", String::as_str), usage);
        }
        if m == "sleep" {
            return sleep_main(a, c, s, rest, usage);
        }
    }
    let (mode, addr, conns, secs, streams) = match &args[..] {
        [m, a, c, s] => (m, a, c, s, "100"),
        [m, a, c, s, n] if m == "h2c" => (m, a, c, s, n.as_str()),
        _ => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    let (Ok(conns), Ok(secs), Ok(streams)) = (
        conns.parse::<usize>(),
        secs.parse::<u64>(),
        streams.parse::<u32>(),
    ) else {
        eprintln!("CONNECTIONS, SECONDS and STREAMS must be whole numbers; {usage}");
        return ExitCode::from(2);
    };
    if conns == 0 || conns > 4096 {
        eprintln!("CONNECTIONS must be 1 to 4096; {usage}");
        return ExitCode::from(2);
    }
    if streams == 0 || streams > 1000 {
        eprintln!("STREAMS must be 1 to 1000; {usage}");
        return ExitCode::from(2);
    }
    let length = Duration::from_secs(secs);
    exit_status(match mode.as_str() {
        "h2c" => h2c(addr, conns, streams, length),
        _ => run(mode, addr, conns, length),
    })
}

/// The process's exit status for a mode's run, its error printed.
fn exit_status(ran: io::Result<()>) -> ExitCode {
    match ran {
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
    let request = http_get(addr, "/");
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

/// HTTP/2 frame types and flags the `h2c` mode looks at (RFC 9113 §6).
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// A GET of `/` on `stream`: HEADERS with END_STREAM, the header block
/// from HPACK's static table but for a literal `:authority`.
fn get(out: &mut Vec<u8>, authority: &str, stream: u32) {
    let block_len = 3 + 2 + authority.len();
    frame_head(out, block_len, HEADERS, END_STREAM | END_HEADERS, stream);
    // :method GET, :scheme http, :path / (static 2, 6, 4).
    out.extend_from_slice(&[0x82, 0x86, 0x84]);
    // :authority, literal without indexing, name from static 1.
    out.extend_from_slice(&[0x01, authority.len() as u8]);
    out.extend_from_slice(authority.as_bytes());
}

/// One connection of the `h2c` mode.
struct H2Conn {
    sock: TcpStream,
    /// The unread part of a frame cut off by the end of a read.
    carry: Vec<u8>,
    next_stream: u32,
    out: Vec<u8>,
}

impl H2Conn {
    /// Walks the whole frames of what was carried over and `got`, in
    /// place when nothing was carried; keeps a cut-off frame's start for
    /// the next read. Returns how many streams ended.
    fn on_bytes(&mut self, got: &[u8]) -> io::Result<u32> {
        if self.carry.is_empty() {
            let (ended, at) = walk(got, &mut self.out)?;
            self.carry.extend_from_slice(&got[at..]);
            return Ok(ended);
        }
        self.carry.extend_from_slice(got);
        let (ended, at) = walk(&self.carry, &mut self.out)?;
        self.carry.drain(..at);
        Ok(ended)
    }
}

/// Walks the whole frames at the start of `bytes`, answering SETTINGS and
/// PING into `out`: how many streams ended, and where the first frame not
/// whole starts.
fn walk(bytes: &[u8], out: &mut Vec<u8>) -> io::Result<(u32, usize)> {
    let mut ended = 0;
    let mut at = 0;
    while bytes.len() - at >= 9 {
        let h = &bytes[at..at + 9];
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        let (kind, flags) = (h[3], h[4]);
        if bytes.len() - at < 9 + len {
            break;
        }
        match kind {
            DATA | HEADERS if flags & END_STREAM != 0 => ended += 1,
            SETTINGS if flags & ACK == 0 => frame_head(out, 0, SETTINGS, ACK, 0),
            PING if flags & ACK == 0 => {
                frame_head(out, len, PING, ACK, 0);
                out.extend_from_slice(&bytes[at + 9..at + 9 + len]);
            }
            GOAWAY => return Err(io::Error::other("the server sent GOAWAY")),
            _ => {}
        }
        at += 9 + len;
    }
    Ok((ended, at))
}

fn h2c(addr: &str, conns: usize, streams: u32, length: Duration) -> io::Result<()> {
    // The authority's length goes in one octet (a 7-bit prefix).
    if addr.len() > 126 {
        return Err(io::Error::other("HOST:PORT is longer than 126 bytes"));
    }
    let mut all = Vec::with_capacity(conns);
    for _ in 0..conns {
        let sock = TcpStream::connect(addr)?;
        sock.set_nodelay(true)?;
        sock.set_nonblocking(true)?;
        let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        // SETTINGS: INITIAL_WINDOW_SIZE 2^31 - 1, then the connection's
        // window opened as far (it starts at 65,535).
        frame_head(&mut out, 6, SETTINGS, 0, 0);
        out.extend_from_slice(&[0, 4, 0x7f, 0xff, 0xff, 0xff]);
        frame_head(&mut out, 4, 8, 0, 0);
        out.extend_from_slice(&(0x7fff_ffffu32 - 65_535).to_be_bytes());
        all.push(H2Conn {
            sock,
            carry: Vec::new(),
            next_stream: 1,
            out,
        });
    }
    let cpu = cpu_seconds();
    let start = Instant::now();
    let end = start + length;
    // SAFETY: plain system calls on descriptors this function owns.
    let ep = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) } as isize)? as i32;
    for (i, c) in all.iter_mut().enumerate() {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLET) as u32,
            u64: i as u64,
        };
        check(
            unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, c.sock.as_raw_fd(), &mut ev) }
                as isize,
        )?;
        for _ in 0..streams {
            get(&mut c.out, addr, c.next_stream);
            c.next_stream += 2;
        }
        send(c.sock.as_raw_fd(), &c.out)?;
        c.out.clear();
    }
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut buf = vec![0u8; 65536];
    let mut done = 0u64;
    while Instant::now() < end {
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, 100) };
        for e in &events[..check(n as isize)?] {
            let c = &mut all[e.u64 as usize];
            let fd = c.sock.as_raw_fd();
            let got = check(unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) })?;
            let ended = c.on_bytes(&buf[..got])?;
            done += u64::from(ended);
            for _ in 0..ended {
                get(&mut c.out, addr, c.next_stream);
                c.next_stream += 2;
            }
            if !c.out.is_empty() {
                send(fd, &c.out)?;
                c.out.clear();
            }
        }
    }
    unsafe { libc::close(ep) };
    let wall = start.elapsed().as_secs_f64();
    println!(
        "h2c requests {done} seconds {wall:.3} cpu {:.3}",
        cpu_seconds() - cpu
    );
    Ok(())
}

/// `pace HOST:PORT CONNECTIONS SECONDS [RATE]`, its arguments checked.
fn pace_main(addr: &str, conns: &str, secs: &str, rate: &str, usage: &str) -> ExitCode {
    let (Ok(conns), Ok(secs), Ok(rate)) = (
        conns.parse::<usize>(),
        secs.parse::<u64>(),
        rate.parse::<u64>(),
    ) else {
        eprintln!("CONNECTIONS, SECONDS and RATE must be whole numbers; {usage}");
        return ExitCode::from(2);
    };
    if conns == 0 || conns > 4096 || rate == 0 || rate > 10_000_000 || secs == 0 {
        eprintln!("CONNECTIONS must be 1 to 4096, RATE 1 to 10000000, SECONDS at least 1; {usage}");
        return ExitCode::from(2);
    }
    exit_status(pace(addr, conns, Duration::from_secs(secs), rate))
}

/// Sleeps in `epoll_pwait2` for at most `timeout`, then returns how many
/// events it filled.
fn wait(ep: i32, events: &mut [libc::epoll_event], timeout: Duration) -> io::Result<usize> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: the events buffer and the timespec outlive the call.
    let n = unsafe {
        libc::syscall(
            libc::SYS_epoll_pwait2,
            ep,
            events.as_mut_ptr(),
            events.len() as libc::c_int,
            &ts as *const libc::timespec,
            std::ptr::null::<libc::sigset_t>(),
            0usize,
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOSYS) {
            return Err(io::Error::other(
                "this kernel has no epoll_pwait2, which pace needs",
            ));
        }
        return check(-1).map(|_| 0);
    }
    Ok(n as usize)
}

fn pace(addr: &str, conns: usize, length: Duration, rate: u64) -> io::Result<()> {
    let request = http_get(addr, "/");
    let answer_len = answer_length(addr, &request)?;
    // SAFETY: plain system calls on descriptors this function owns or borrows.
    let ep = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) } as isize)? as i32;
    let mut socks = Vec::with_capacity(conns);
    for i in 0..conns {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLET) as u32,
            u64: i as u64,
        };
        check(
            unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, s.as_raw_fd(), &mut ev) } as isize,
        )?;
        socks.push(s);
    }
    let fds: Vec<i32> = socks.iter().map(AsRawFd::as_raw_fd).collect();
    // The connections with no answer owed, in the order they became so.
    let mut free: std::collections::VecDeque<usize> = (0..conns).collect();
    let mut owed = vec![0usize; conns];
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut buf = vec![0u8; 65536];
    let warm_up = Duration::from_secs(1);
    let total = warm_up + length;
    let expected = (rate as u128 * length.as_nanos() / 1_000_000_000) as usize;
    let mut lags: Vec<u64> = Vec::with_capacity(expected + 1);
    let start = Instant::now();
    // The i-th request falls due i / rate seconds after the start, computed
    // whole each time so that no rounding adds up.
    let due =
        |i: u64| Duration::from_nanos((u128::from(i) * 1_000_000_000 / u128::from(rate)) as u64);
    let mut i = 0u64;
    loop {
        let now = start.elapsed();
        while due(i) <= now && due(i) < total {
            let Some(c) = free.pop_front() else { break };
            let left = start.elapsed();
            send(fds[c], &request)?;
            owed[c] = answer_len;
            if due(i) >= warm_up {
                lags.push((left - due(i)).as_nanos() as u64);
            }
            i += 1;
        }
        if due(i) >= total {
            break;
        }
        // Until the next is due, or, with one overdue and every connection
        // busy, until an answer comes in.
        let timeout = if due(i) <= start.elapsed() {
            Duration::from_millis(100)
        } else {
            due(i).saturating_sub(start.elapsed())
        };
        let n = wait(ep, &mut events, timeout)?;
        for ev in &events[..n] {
            let c = ev.u64 as usize;
            loop {
                // SAFETY: the buffer outlives the call.
                let got =
                    check(unsafe { libc::recv(fds[c], buf.as_mut_ptr().cast(), buf.len(), 0) })?;
                if got == 0 {
                    break;
                }
                if got > owed[c] {
                    return Err(io::Error::other(
                        "an answer longer than the first; pace needs a fixed answer",
                    ));
                }
                owed[c] -= got;
                if owed[c] == 0 {
                    free.push_back(c);
                }
            }
        }
    }
    if lags.is_empty() {
        return Err(io::Error::other("no request fell due after the warm-up"));
    }
    lags.sort_unstable();
    let at = |q: f64| lags[((lags.len() as f64 * q) as usize).min(lags.len() - 1)] as f64 / 1e3;
    println!(
        "pace requests {} lag_p50_us {:.1} lag_p99_us {:.1} lag_max_us {:.1}",
        lags.len(),
        at(0.50),
        at(0.99),
        *lags.last().unwrap() as f64 / 1e3
    );
    Ok(())
}

/// What `sleep` sends on each connection, and how long its answer is.
struct Exchange {
    /// Written once on each connection before the first (the upgrade).
    opening: Option<Vec<u8>>,
    message: Vec<u8>,
    answer_len: usize,
}

fn sleep_main(addr: &str, conns: &str, secs: &str, rest: &[String], usage: &str) -> ExitCode {
    let (Ok(conns), Ok(secs)) = (conns.parse::<usize>(), secs.parse::<u64>()) else {
        eprintln!("CONNECTIONS and SECONDS must be whole numbers; {usage}");
        return ExitCode::from(2);
    };
    let rate = rest.first().and_then(|r| r.parse::<u64>().ok());
    let exchange = match &rest.get(1..).unwrap_or_default() {
        [kind, path] if kind == "http" => answer_length(addr, &http_get(addr, path)).map(|len| Exchange {
            opening: None,
            message: http_get(addr, path),
            answer_len: len,
        }),
        [kind, path, message] if kind == "ws" && message.len() <= 125 => Ok(Exchange {
            opening: Some(format!(
                "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\n\
                 Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                 Sec-WebSocket-Version: 13\r\n\r\n"
            )
            .into_bytes()),
            message: text_frame(message.as_bytes()),
            answer_len: 2 + message.len(),
        }),
        _ => {
            eprintln!("{usage} (a ws MESSAGE of at most 125 bytes)");
            return ExitCode::from(2);
        }
    };
    let Some(rate) = rate.filter(|&r| (1..=1_000_000).contains(&r)) else {
        eprintln!("RATE must be 1 to 1000000; {usage}");
        return ExitCode::from(2);
    };
    if conns == 0 || conns > 4096 || secs == 0 {
        eprintln!("CONNECTIONS must be 1 to 4096, SECONDS at least 1; {usage}");
        return ExitCode::from(2);
    }
    exit_status(exchange.and_then(|x| sleep(addr, conns, secs, rate, &x)))
}

fn http_get(addr: &str, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes()
}

/// A masked text frame of `message` (at most 125 bytes).
fn text_frame(message: &[u8]) -> Vec<u8> {
    let key = [0x37, 0xfa, 0x21, 0x3d];
    let mut out = vec![0x81, 0x80 | message.len() as u8];
    out.extend_from_slice(&key);
    out.extend(message.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    out
}

fn sleep(addr: &str, conns: usize, secs: u64, rate: u64, x: &Exchange) -> io::Result<()> {
    let mut socks = Vec::with_capacity(conns);
    let mut buf = vec![0u8; 65536];
    for _ in 0..conns {
        let mut s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        if let Some(opening) = &x.opening {
            s.write_all(opening)?;
            let mut got = 0;
            while !buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf[got..])? {
                    0 => return Err(io::Error::other("the server closed during the upgrade")),
                    n => got += n,
                }
            }
            if !buf.starts_with(b"HTTP/1.1 101") {
                return Err(io::Error::other("the server did not take the upgrade"));
            }
        }
        socks.push(s);
    }
    if x.answer_len > buf.len() {
        return Err(io::Error::other("an answer longer than 64 KiB"));
    }
    let asked = rate * secs;
    let period = 1_000_000_000 / rate;
    let clock = |t: &mut libc::timespec| {
        // SAFETY: clock_gettime fills the timespec it is given.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, t) };
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    };
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    let start = clock(&mut ts) + 1_000_000;
    let first_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() + 1);
    let (mut sent, mut answered) = (0u64, 0u64);
    let mut stopped = None;
    'each: for i in 0..asked {
        let due = start + i * period;
        let at = libc::timespec {
            tv_sec: (due / 1_000_000_000) as libc::time_t,
            tv_nsec: (due % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: the timespec outlives the call; an interrupted sleep is
        // begun again for the same absolute time.
        while unsafe {
            libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &at, std::ptr::null_mut())
        } == libc::EINTR
        {}
        let s = &mut socks[(i % conns as u64) as usize];
        if let Err(e) = send(s.as_raw_fd(), &x.message) {
            stopped = Some(e);
            break;
        }
        sent += 1;
        let mut got = 0;
        while got < x.answer_len {
            match s.read(&mut buf[got..x.answer_len]) {
                Ok(0) => {
                    stopped = Some(io::Error::other("the server closed a connection"));
                    break 'each;
                }
                Ok(n) => got += n,
                Err(e) => {
                    stopped = Some(e);
                    break 'each;
                }
            }
        }
        answered += 1;
    }
    let seconds = (clock(&mut ts).saturating_sub(start)) as f64 / 1e9;
    println!(
        "{{\"asked\": {asked}, \"sent\": {sent}, \"answered\": {answered}, \"seconds\": {seconds:.3}, \"first_ms\": {first_ms}}}"
    );
    match stopped {
        Some(e) => Err(io::Error::other(format!(
            "stopped after {answered} of {asked} answers: {e}"
        ))),
        None => Ok(()),
    }
}
