//! A proxy on loopback between limiter instances and the real server, that
//! decides the order in which the instances' commands reach Redis.
//!
//! Each instance (each "app server") connects to a port of its own. While a
//! run is scheduled, every command an instance sends is held; when every
//! instance has either a command waiting or has returned from its calls,
//! the controller picks whose command goes next, forwards it, and hands the
//! reply back. Re-running a scenario with every sequence of picks explores
//! every order of the instances' commands: a decision split into several
//! commands (read, then write) is raced the way loom races threads, and a
//! Lua script, one command, cannot be. Outside a scheduled run the proxy
//! forwards at once. Commands that touch no data (`CLIENT`, `HELLO`,
//! `SCRIPT`, `PING`, …) are never held.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One command as a client sent it.
#[derive(Clone, Debug)]
pub struct Command {
    pub raw: Vec<u8>,
    pub args: Vec<Vec<u8>>,
}

impl Command {
    /// The command's name, upper case (`EVALSHA`).
    pub fn name(&self) -> String {
        self.args
            .first()
            .map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
            .unwrap_or_default()
    }

    /// Touches no data: never held, never a step of a schedule.
    pub(crate) fn free(&self) -> bool {
        matches!(
            self.name().as_str(),
            "CLIENT"
                | "HELLO"
                | "SELECT"
                | "PING"
                | "AUTH"
                | "ECHO"
                | "SCRIPT"
                | "INFO"
                | "READONLY"
                | "COMMAND"
                | "QUIT"
        )
    }

    /// The command as a person reads it: its name and arguments, long ones
    /// cut, a script's body shown by its first line.
    pub fn text(&self) -> String {
        let name = self.name();
        let mut parts = vec![name.clone()];
        for (i, a) in self.args.iter().enumerate().skip(1) {
            let s = String::from_utf8_lossy(a);
            let s = if name == "EVAL" && i == 1 {
                format!("<script: {}>", s.lines().next().unwrap_or("").trim())
            } else if name == "EVALSHA" && i == 1 {
                format!("{}…", &s[..s.len().min(8)])
            } else {
                s.into_owned()
            };
            let s = if s.chars().count() > 48 {
                format!("{}…", s.chars().take(47).collect::<String>())
            } else {
                s
            };
            parts.push(if s.contains(' ') || s.is_empty() {
                format!("{s:?}")
            } else {
                s
            });
        }
        parts.join(" ")
    }

    /// The keys a script was given (`EVAL`/`EVALSHA script numkeys k…`), or
    /// `None` for any other command.
    pub fn script_keys(&self) -> Option<Vec<String>> {
        let name = self.name();
        if !matches!(
            name.as_str(),
            "EVAL" | "EVALSHA" | "EVAL_RO" | "EVALSHA_RO" | "FCALL"
        ) {
            return None;
        }
        let n: usize = String::from_utf8_lossy(self.args.get(2)?).parse().ok()?;
        Some(
            self.args
                .iter()
                .skip(3)
                .take(n)
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect(),
        )
    }
}

/// One step of a schedule: a command forwarded and its reply.
#[derive(Clone, Debug)]
pub struct Step {
    pub client: usize,
    pub command: Command,
    pub reply: String,
}

struct Conn {
    client: usize,
    /// Commands taken from the queue and not yet answered: while there is
    /// one, a later command of the connection queues behind it.
    busy: std::sync::atomic::AtomicUsize,
    to_client: Mutex<TcpStream>,
    upstream: Mutex<Option<(TcpStream, BufReader<TcpStream>)>>,
}

impl Conn {
    /// Forwards one command and hands its reply back; the reply, shortened.
    fn forward(&self, command: &Command) -> String {
        let mut up = self.upstream.lock().unwrap_or_else(|e| e.into_inner());
        let Some((writer, reader)) = up.as_mut() else {
            return "(connection closed)".into();
        };
        let reply = writer
            .write_all(&command.raw)
            .and_then(|()| read_reply(reader));
        match reply {
            Ok((raw, text)) => {
                let _ = self
                    .to_client
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .write_all(&raw);
                text
            }
            Err(e) => {
                drop(up);
                self.cut();
                format!("(no reply: {e})")
            }
        }
    }

    /// Closes both sides, as a network that failed would.
    fn cut(&self) {
        let _ = self
            .to_client
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .shutdown(Shutdown::Both);
        if let Some((w, _)) = self
            .upstream
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = w.shutdown(Shutdown::Both);
        }
    }
}

#[derive(Default)]
struct State {
    scheduled: bool,
    /// After a cut every command is refused: the app server is gone.
    dead: bool,
    pending: Vec<VecDeque<(Arc<Conn>, Command)>>,
    done: Vec<bool>,
    conns: Vec<Arc<Conn>>,
    /// Every command any client sent, in arrival order.
    log: Vec<(usize, Command)>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    upstream: SocketAddr,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The proxy: one port per client.
pub struct Proxy {
    shared: Arc<Shared>,
    ports: Vec<u16>,
}

impl Proxy {
    /// Listens on a loopback port per client, in front of `upstream`.
    pub fn start(upstream: SocketAddr, clients: usize) -> Proxy {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pending: (0..clients).map(|_| VecDeque::new()).collect(),
                done: vec![true; clients],
                ..State::default()
            }),
            changed: Condvar::new(),
            upstream,
        });
        let ports = (0..clients)
            .map(|client| {
                let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port is free");
                let port = listener.local_addr().expect("bound").port();
                let shared = shared.clone();
                std::thread::Builder::new()
                    .name(format!("kata-proxy-{client}"))
                    .spawn(move || accept(listener, client, shared))
                    .expect("a thread starts");
                port
            })
            .collect();
        Proxy { shared, ports }
    }

    /// The URL client `client` connects to.
    pub fn url(&self, client: usize) -> String {
        format!("redis://127.0.0.1:{}/", self.ports[client])
    }

    /// Every command seen so far, with the client that sent it.
    pub fn log(&self) -> Vec<(usize, Command)> {
        self.shared.lock().log.clone()
    }

    pub fn clear_log(&self) {
        self.shared.lock().log.clear();
    }

    /// Runs one closure per client on threads of their own, releasing their
    /// data commands one at a time: `choose` picks, among the clients with a
    /// command waiting, the index of the one to go next (it is asked even
    /// when there is one). With `cut_after`,
    /// every connection is cut once that many commands were forwarded, and
    /// later ones are refused. Returns what each closure returned (`None` if
    /// it panicked, with the panic's text) and the steps, or a sentence when a
    /// client neither sent a command nor returned within `limit`.
    #[allow(clippy::type_complexity)]
    pub fn run<R: Send + 'static>(
        &self,
        clients: Vec<Box<dyn FnOnce() -> R + Send>>,
        choose: &mut dyn FnMut(&[usize]) -> usize,
        cut_after: Option<usize>,
        limit: Duration,
    ) -> Result<(Vec<Result<R, String>>, Vec<Step>), (String, Vec<Step>)> {
        let n = clients.len();
        {
            let mut st = self.shared.lock();
            st.scheduled = true;
            st.dead = false;
            st.pending = (0..n).map(|_| VecDeque::new()).collect();
            st.done = vec![false; n];
        }
        let (tx, rx) = std::sync::mpsc::channel();
        for (i, f) in clients.into_iter().enumerate() {
            let (tx, shared) = (tx.clone(), self.shared.clone());
            std::thread::Builder::new()
                .name(format!("kata-app-server-{i}"))
                .spawn(move || {
                    let result =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
                            crate::watchdog::take_panic().unwrap_or_else(|| panic_text(&p))
                        });
                    let _ = tx.send((i, result));
                    shared.lock().done[i] = true;
                    shared.changed.notify_all();
                })
                .expect("a thread starts");
        }
        let mut steps = Vec::new();
        let deadline_each = limit;
        let outcome = loop {
            let mut st = self.shared.lock();
            let started = Instant::now();
            // Wait until every client has a command waiting or is done.
            loop {
                let settled = (0..n).all(|i| st.done[i] || !st.pending[i].is_empty());
                if settled {
                    break;
                }
                let left = deadline_each.saturating_sub(started.elapsed());
                if left.is_zero() {
                    break;
                }
                st = self
                    .shared
                    .changed
                    .wait_timeout(st, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            if st.done.iter().all(|d| *d) {
                break Ok(());
            }
            let stuck: Vec<usize> = (0..n)
                .filter(|&i| !st.done[i] && st.pending[i].is_empty())
                .collect();
            if !stuck.is_empty() {
                break Err(format!(
                    "app server {} neither sent Redis a command nor returned from check within {} s: \
                     it waits on something that is not Redis (a lock another call holds, a loop \
                     that never ends)",
                    stuck[0] + 1,
                    limit.as_secs()
                ));
            }
            // Free commands go at once, in their connection's order.
            if let Some(i) = (0..n).find(|&i| st.pending[i].front().is_some_and(|(_, c)| c.free()))
            {
                let (conn, command) = st.pending[i].pop_front().expect("found above");
                conn.busy.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(st);
                conn.forward(&command);
                conn.busy.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                continue;
            }
            let ready: Vec<usize> = (0..n).filter(|&i| !st.pending[i].is_empty()).collect();
            let pick = choose(&ready).min(ready.len() - 1);
            let client = ready[pick];
            let (conn, command) = st.pending[client].pop_front().expect("ready");
            conn.busy.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(st);
            let reply = conn.forward(&command);
            conn.busy.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            steps.push(Step {
                client,
                command,
                reply,
            });
            if cut_after == Some(steps.len()) {
                let mut st = self.shared.lock();
                st.dead = true;
                for c in st.conns.drain(..) {
                    c.cut();
                }
                for q in st.pending.iter_mut() {
                    q.clear();
                }
            }
        };
        // Whatever happened, no client stays blocked on the proxy.
        let mut st = self.shared.lock();
        st.scheduled = false;
        if outcome.is_err() {
            st.dead = true;
            for c in st.conns.drain(..) {
                c.cut();
            }
        }
        for q in st.pending.iter_mut() {
            for (conn, command) in q.drain(..) {
                conn.forward(&command);
            }
        }
        st.dead = false;
        drop(st);
        if let Err(e) = outcome {
            return Err((e, steps));
        }
        let mut results: Vec<Option<Result<R, String>>> = (0..n).map(|_| None).collect();
        for _ in 0..n {
            let (i, r) = rx.recv().expect("every client thread sends its result");
            results[i] = Some(r);
        }
        Ok((
            results
                .into_iter()
                .map(|r| r.expect("each sent once"))
                .collect(),
            steps,
        ))
    }

    /// Closes every connection (between scenarios, so that old instances'
    /// connections never carry a new run's commands).
    pub fn close_all(&self) {
        let mut st = self.shared.lock();
        for c in st.conns.drain(..) {
            c.cut();
        }
    }
}

/// A panic's message, as its payload holds it.
pub(crate) fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into())
}

fn accept(listener: TcpListener, client: usize, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let _ = stream.set_nodelay(true);
        if shared.lock().dead {
            let _ = stream.shutdown(Shutdown::Both);
            continue;
        }
        let upstream = match TcpStream::connect(shared.upstream) {
            Ok(u) => u,
            Err(_) => {
                let _ = stream.shutdown(Shutdown::Both);
                continue;
            }
        };
        let _ = upstream.set_nodelay(true);
        let (Ok(to_client), Ok(up_reader)) = (stream.try_clone(), upstream.try_clone()) else {
            continue;
        };
        let conn = Arc::new(Conn {
            client,
            busy: std::sync::atomic::AtomicUsize::new(0),
            to_client: Mutex::new(to_client),
            upstream: Mutex::new(Some((upstream, BufReader::new(up_reader)))),
        });
        shared.lock().conns.push(conn.clone());
        let shared = shared.clone();
        crate::trial::spawn(move || serve(BufReader::new(stream), conn, shared));
    }
}

/// Reads one connection's commands: forwarded at once, or held while a run
/// is scheduled.
fn serve(mut from_client: BufReader<TcpStream>, conn: Arc<Conn>, shared: Arc<Shared>) {
    while let Ok(command) = read_command(&mut from_client) {
        let mut st = shared.lock();
        st.log.push((conn.client, command.clone()));
        if st.dead {
            drop(st);
            conn.cut();
            return;
        }
        let busy = conn.busy.load(std::sync::atomic::Ordering::SeqCst) > 0;
        let queued = busy
            || st
                .pending
                .get(conn.client)
                .is_some_and(|q| q.iter().any(|(c, _)| Arc::ptr_eq(c, &conn)));
        if st.scheduled && (!command.free() || queued) {
            st.pending[conn.client].push_back((conn.clone(), command));
            drop(st);
            shared.changed.notify_all();
        } else {
            drop(st);
            conn.forward(&command);
        }
    }
    conn.cut();
    shared.changed.notify_all();
}

fn line(r: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    if r.read_until(b'\n', &mut buf)? == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(buf)
}

fn number(l: &[u8]) -> io::Result<i64> {
    std::str::from_utf8(&l[1..])
        .ok()
        .and_then(|s| s.trim_end().parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not a RESP length"))
}

/// One client command: a RESP array of bulk strings (or an inline command).
pub(crate) fn read_command(r: &mut impl BufRead) -> io::Result<Command> {
    let first = line(r)?;
    let mut raw = first.clone();
    if first.first() != Some(&b'*') {
        let args = first
            .split(|b| b.is_ascii_whitespace())
            .filter(|a| !a.is_empty())
            .map(|a| a.to_vec())
            .collect();
        return Ok(Command { raw, args });
    }
    let n = number(&first)?;
    let mut args = Vec::new();
    for _ in 0..n.max(0) {
        let head = line(r)?;
        raw.extend_from_slice(&head);
        let len = number(&head)?.max(0) as usize;
        let mut body = vec![0; len + 2];
        r.read_exact(&mut body)?;
        raw.extend_from_slice(&body);
        body.truncate(len);
        args.push(body);
    }
    Ok(Command { raw, args })
}

/// One reply, whole (raw bytes), and a short text of it.
fn read_reply(r: &mut impl BufRead) -> io::Result<(Vec<u8>, String)> {
    let head = line(r)?;
    let mut raw = head.clone();
    let body = || String::from_utf8_lossy(&head[1..]).trim_end().to_string();
    let text = match head.first() {
        Some(b'+') => body(),
        Some(b'-') => format!("error {}", body()),
        Some(b':') | Some(b',') | Some(b'#') | Some(b'(') => body(),
        Some(b'_') => "nil".into(),
        Some(b'$') | Some(b'=') | Some(b'!') => {
            let len = number(&head)?;
            if len < 0 {
                "nil".into()
            } else {
                let mut data = vec![0; len as usize + 2];
                r.read_exact(&mut data)?;
                raw.extend_from_slice(&data);
                data.truncate(len as usize);
                format!("{:?}", String::from_utf8_lossy(&data))
            }
        }
        Some(b'*') | Some(b'~') | Some(b'>') | Some(b'%') => {
            let n = number(&head)?;
            let n = if head[0] == b'%' { n * 2 } else { n };
            if n < 0 {
                "nil".into()
            } else {
                let mut items = Vec::new();
                for _ in 0..n {
                    let (more, t) = read_reply(r)?;
                    raw.extend_from_slice(&more);
                    items.push(t);
                }
                format!("[{}]", items.join(", "))
            }
        }
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a RESP reply",
            ))
        }
    };
    Ok((raw, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_replies_are_read_whole() {
        let mut r = io::Cursor::new(b"*2\r\n$3\r\nGET\r\n$4\r\nk{a}\r\n".to_vec());
        let c = read_command(&mut r).unwrap();
        assert_eq!(c.name(), "GET");
        assert_eq!(c.text(), "GET k{a}");
        let mut r = io::Cursor::new(b"*3\r\n:1\r\n$-1\r\n*1\r\n$2\r\nok\r\n+tail".to_vec());
        let (raw, text) = read_reply(&mut r).unwrap();
        assert_eq!(text, "[1, nil, [\"ok\"]]");
        assert_eq!(raw.len(), 25);
        let c = Command {
            raw: vec![],
            args: ["EVALSHA", "abc", "2", "x", "y", "5"]
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .collect(),
        };
        assert_eq!(c.script_keys(), Some(vec!["x".into(), "y".into()]));
    }
}
