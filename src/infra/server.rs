//! A real `redis-server`, started by the harness on a free loopback port with
//! no persistence, and always stopped: when the [`RedisServer`] is dropped
//! (a test that panics drops it too) and, on Linux, when the test process
//! ends in any way ([`crate::watchdog::spawn_tied`]).

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The program to run: `KATA_REDIS_SERVER`, or `redis-server` on `PATH`.
pub fn program() -> String {
    std::env::var("KATA_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into())
}

/// What to do when there is no `redis-server` to run.
pub const INSTALL: &str = "Lesson 08 runs a real redis-server (7.x), and there is none on PATH. \
Install it: `sudo apt-get install redis-server` (Debian, Ubuntu), `brew install redis` (macOS), \
or point KATA_REDIS_SERVER at a redis-server binary (from a container image, say: \
`docker create --name r redis:7 && docker cp r:/usr/local/bin/redis-server .`). The tests start \
and stop their own server; nothing needs to be running.";

/// The shared server's process, for the exit handler.
static SHARED_PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// How long a server may take to say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// One `redis-server` process of the harness's.
pub struct RedisServer {
    port: u16,
    dir: PathBuf,
    /// Arguments besides the harness's own (a cluster node's).
    extra: Vec<String>,
    child: Mutex<Option<Child>>,
}

/// A port free now, below Linux's range for outgoing connections (32768
/// on): no connection of a parallel test can take it while the server is
/// restarted on it.
pub(crate) fn free_port() -> std::io::Result<u16> {
    let seed = u64::from(std::process::id()) * 7919 + next_id() * 104_729;
    for i in 0..2_000u64 {
        let port = 20_000 + ((seed + i * 7_127) % 12_000) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl RedisServer {
    /// A new server of its own, on a port no one else uses.
    pub fn start() -> Result<RedisServer, String> {
        // With no persistence the server writes no file: its folder is the
        // system's temporary one, and nothing is left behind.
        RedisServer::start_with(&std::env::temp_dir(), &[])
    }

    /// A new server of its own started with `extra` arguments besides the
    /// harness's, in the folder `dir` (where a cluster node keeps its
    /// `nodes.conf`; the caller removes it).
    pub fn start_with(dir: &std::path::Path, extra: &[&str]) -> Result<RedisServer, String> {
        let mut last = String::new();
        // A free port can be taken between the probe and the server's bind.
        for _ in 0..5 {
            let port = free_port().map_err(|e| format!("no free loopback port: {e}"))?;
            let server = RedisServer {
                port,
                dir: dir.to_path_buf(),
                extra: extra.iter().map(|a| a.to_string()).collect(),
                child: Mutex::new(None),
            };
            match server.launch() {
                Ok(()) => return Ok(server),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// The server every check of this test binary shares (each check keeps
    /// to keys of its own prefix). Panics with the install sentence when
    /// there is no `redis-server`.
    pub fn shared() -> &'static RedisServer {
        static SHARED: OnceLock<Result<RedisServer, String>> = OnceLock::new();
        match SHARED.get_or_init(|| {
            let server = RedisServer::start()?;
            // A static is never dropped: the server is killed when the
            // process exits (and, on Linux, however it ends).
            if let Some(child) = server
                .child
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
            {
                SHARED_PID.store(child.id(), std::sync::atomic::Ordering::SeqCst);
                extern "C" fn kill_shared() {
                    let pid = SHARED_PID.load(std::sync::atomic::Ordering::SeqCst);
                    if pid != 0 {
                        // SAFETY: kill(2) on the shared server's pid.
                        unsafe {
                            libc::kill(pid as libc::pid_t, libc::SIGKILL);
                        }
                    }
                }
                // SAFETY: registers a function with no captures.
                unsafe {
                    libc::atexit(kill_shared);
                }
            }
            Ok(server)
        }) {
            Ok(server) => server,
            Err(e) => panic!("{e}"),
        }
    }

    fn launch(&self) -> Result<(), String> {
        let mut command = Command::new(program());
        command
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .args(["--daemonize", "no", "--loglevel", "notice", "--logfile", ""])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            // Where a server that refuses its configuration says why.
            .stderr(Stdio::piped());
        let mut child = match crate::watchdog::spawn_tied(command) {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(INSTALL.to_string()),
            Err(e) => return Err(format!("{} did not start: {e}", program())),
        };
        // Ready when it says so; its log is read to the end so that it
        // never blocks on a full pipe.
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (tx, rx) = mpsc::channel();
        let said = crate::trial::spawn(move || {
            BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
                .filter(|l| !l.trim().is_empty())
                .take(20)
                .collect::<Vec<_>>()
                .join("\n")
        });
        crate::trial::spawn(move || {
            let mut log = Vec::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains("Ready to accept connections") {
                    let _ = tx.send(Ok(()));
                } else if line.contains("# ") || line.contains("Could not") {
                    log.push(line);
                }
            }
            let _ = tx.send(Err(log.join("\n")));
        });
        let ready = rx.recv_timeout(READY_WITHIN);
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
        match ready {
            Ok(Ok(())) => {
                // And it answers.
                let pong: Result<String, _> = crate::infra::client(&self.url())
                    .and_then(|c| c.get_connection_with_timeout(READY_WITHIN))
                    .and_then(|mut c| redis::cmd("PING").query(&mut c));
                match pong {
                    Ok(p) if p == "PONG" => Ok(()),
                    other => {
                        self.kill();
                        Err(format!(
                            "redis-server on port {} did not answer PING: {other:?}",
                            self.port
                        ))
                    }
                }
            }
            Ok(Err(log)) => {
                self.kill();
                let said = said.join().unwrap_or_default();
                Err(format!(
                    "redis-server on port {} stopped at start:\n{log}{}{said}",
                    self.port,
                    if log.is_empty() || said.is_empty() {
                        ""
                    } else {
                        "\n"
                    }
                ))
            }
            Err(_) => {
                self.kill();
                Err(format!(
                    "redis-server on port {} did not say it was ready within {} s",
                    self.port,
                    READY_WITHIN.as_secs()
                ))
            }
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A connection of the harness's own, straight to the server.
    pub fn admin(&self) -> redis::Connection {
        crate::infra::client(&self.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
            .unwrap_or_else(|e| {
                panic!(
                    "the harness cannot reach its redis-server on port {}: {e}",
                    self.port
                )
            })
    }

    fn signal(&self, signal: i32) {
        if let Some(child) = self
            .child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            // SAFETY: kill(2) on our own child's pid.
            unsafe {
                libc::kill(child.id() as libc::pid_t, signal);
            }
        }
    }

    /// Stops the process where it is (SIGSTOP): connections stay open and
    /// nothing answers.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    /// Whether the process is running (not killed, not exited).
    pub fn is_running(&self) -> bool {
        self.child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|c| c.id())
    }

    /// Kills the process and waits for it: connections are refused.
    pub fn kill(&self) {
        if let Some(mut child) = self.child.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A new process on the same port, empty (no persistence).
    pub fn restart(&self) -> Result<(), String> {
        self.kill();
        let mut last = String::new();
        for _ in 0..5 {
            match self.launch() {
                Ok(()) => return Ok(()),
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.resume();
        self.kill();
    }
}

/// A number no other call in this process got.
pub fn next_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A loopback port where connections are never completed: a listener with a
/// backlog of 0 whose queue the harness has filled, so that the kernel drops
/// every new SYN and a connect waits until it gives up (a host gone from
/// the network, or a firewall that drops). Dropped, it closes.
pub struct Unreachable {
    _listener: TcpListener,
    _held: Vec<std::net::TcpStream>,
    port: u16,
}

impl Unreachable {
    pub fn new() -> Unreachable {
        use std::os::fd::FromRawFd;
        // SAFETY: a new socket of our own, bound, listened on, then owned by
        // the TcpListener.
        let listener = unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            assert!(fd >= 0, "a socket");
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            assert_eq!(
                libc::bind(fd, &addr as *const _ as *const libc::sockaddr, len),
                0,
                "bind"
            );
            assert_eq!(libc::listen(fd, 0), 0, "listen");
            TcpListener::from_raw_fd(fd)
        };
        let port = listener.local_addr().expect("bound").port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let held = (0..8)
            .map_while(|_| {
                std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)).ok()
            })
            .collect();
        Unreachable {
            _listener: listener,
            _held: held,
            port,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Default for Unreachable {
    fn default() -> Self {
        Unreachable::new()
    }
}
