//! Real servers that the end-to-end tests start as plain processes, as
//! the user, on 127.0.0.1 ports of their own, never as system services:
//! where to find them, a directory for their files, free ports, waiting
//! until they listen, and the certificates made the way their users make
//! them (with the openssl command).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a server may take to start listening.
pub const STARTUP: Duration = Duration::from_secs(10);

/// Where to find `name`: on PATH, or in /usr/sbin (not on every user's
/// PATH, and where Debian puts servers). `None`, with a note, where it is
/// missing: a failure under CI only, which installs `package`
/// (.ci/run).
pub fn tool(name: &str, package: &str) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    let found = on_path
        .into_iter()
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        let why = format!("{name} is not installed: apt-get install {package}");
        assert!(std::env::var_os("CI").is_none(), "{why}");
        eprintln!("note: a check against {name} skipped: {why}");
    }
    found
}

/// A directory of the test's own under the system's temporary directory.
pub fn fresh_dir(prefix: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("metron-{prefix}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Ports that were free a moment ago: bound on 127.0.0.1:0, then released.
pub fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: Vec<TcpListener> = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    std::array::from_fn(|i| listeners[i].local_addr().unwrap().port())
}

/// Waits, at most [`STARTUP`], until the server accepts connections on
/// every port; says why when it exits instead, or never does (`last_words`
/// reads its log).
pub fn wait_listening(
    child: &mut Child,
    ports: &[u16],
    last_words: impl Fn() -> String,
) -> Result<(), String> {
    let start = Instant::now();
    while start.elapsed() < STARTUP {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("it exited ({status}): {}", last_words()));
        }
        let up = ports.iter().all(|&p| {
            TcpStream::connect_timeout(&([127, 0, 0, 1], p).into(), Duration::from_secs(1)).is_ok()
        });
        if up {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("not listening after {STARTUP:?}: {}", last_words()))
}

/// The text of a log a server writes a request's line to when it has
/// finished with it, which may be just after the client saw the response:
/// read once it stops growing (waiting at most 3 s).
pub fn settled_log(path: &Path) -> String {
    let read = || std::fs::read_to_string(path).unwrap_or_default();
    let start = Instant::now();
    let mut text = read();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let now = read();
        if now.len() == text.len() || start.elapsed() > Duration::from_secs(3) {
            return now;
        }
        text = now;
    }
}

/// A server process: killed, and its directory removed, when dropped.
pub struct Process {
    pub child: Child,
    pub dir: PathBuf,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts a server with its files in `dir` on `N` free ports: `command`
/// builds its command line (and writes any configuration into `dir`).
/// Ports are found free and released before the server binds them, so
/// another process may take one meanwhile: then new ones are tried.
pub fn start<const N: usize>(
    dir: PathBuf,
    command: impl Fn(&Path, [u16; N]) -> Command,
    last_words: impl Fn(&Path) -> String,
) -> (Process, [u16; N]) {
    let mut why = String::new();
    for _ in 0..5 {
        let ports = free_ports::<N>();
        let mut child = command(&dir, ports)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        match wait_listening(&mut child, &ports, || last_words(&dir)) {
            Ok(()) => return (Process { child, dir }, ports),
            Err(e) => why = e,
        }
        let _ = child.kill();
        let _ = child.wait();
        if !why.contains("in use") {
            break;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    panic!("the server did not start: {why}");
}

/// nghttpd, nghttp2's HTTP/2 server: it speaks HTTP/2 only.
pub struct Nghttpd {
    _process: Process,
    pub port: u16,
}

impl Nghttpd {
    /// nghttpd on a port of its own: over TLS with `tls` (a certificate
    /// and its key), else cleartext HTTP/2 with prior knowledge. `None`
    /// where it is not installed (see [`tool`]).
    pub fn start(tls: Option<(&Path, &Path)>) -> Option<Nghttpd> {
        let nghttpd = tool("nghttpd", "nghttp2-server")?;
        let dir = fresh_dir("nghttpd");
        std::fs::write(dir.join("index.html"), "hello\n").unwrap();
        let (process, [port]) = start(
            dir,
            |dir, [port]| {
                let mut cmd = Command::new(&nghttpd);
                cmd.arg("--address=127.0.0.1").arg("--htdocs").arg(dir);
                cmd.arg(port.to_string());
                match tls {
                    Some((cert, key)) => cmd.arg(key).arg(cert),
                    None => cmd.arg("--no-tls"),
                };
                cmd
            },
            |_| "(nghttpd keeps no log)".to_string(),
        );
        Some(Nghttpd {
            _process: process,
            port,
        })
    }
}

/// Whether the openssl command is there to make certificates as users
/// make them: a failure under CI only (.ci/run installs it).
pub fn openssl_ready() -> bool {
    tool("openssl", "openssl").is_some()
}

/// Runs `openssl ARGS` in `dir`; panics with its error output if it fails.
pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A self-signed certificate made the usual way, `openssl req -x509`,
/// which marks it as an authority (CA:TRUE): `NAME.pem` and `NAME-key.pem`
/// in `dir`, for the subject alternative names `san`
/// (`DNS:localhost,IP:127.0.0.1`).
pub fn self_signed(dir: &Path, name: &str, cn: &str, san: &str) -> (PathBuf, PathBuf) {
    let (cert, key) = (format!("{name}.pem"), format!("{name}-key.pem"));
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={cn}"),
            "-addext",
            &format!("subjectAltName={san}"),
            "-keyout",
            &key,
            "-out",
            &cert,
        ],
    );
    (dir.join(cert), dir.join(key))
}
