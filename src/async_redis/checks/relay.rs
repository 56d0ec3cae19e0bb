//! A relay on loopback in front of a `redis-server` that counts the
//! connections opened through it and the commands sent, and can hold
//! Redis's replies back: while they are held, the commands that reach it
//! are those the client sent without waiting for an answer (pipelined).

use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::infra::proxy::read_command;

#[derive(Default)]
struct Counts {
    connections: usize,
    /// Commands that touch data (`EVALSHA`, `GET`, …; not `CLIENT`,
    /// `HELLO` or `SCRIPT`).
    commands: usize,
    holding: bool,
    stopped: bool,
    sockets: Vec<TcpStream>,
}

struct Shared {
    counts: Mutex<Counts>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub struct Relay {
    shared: Arc<Shared>,
    port: u16,
}

/// How often the accepting thread looks for a stop.
const POLL: Duration = Duration::from_millis(5);

impl Relay {
    /// Listens on a free loopback port in front of `upstream`.
    pub fn start(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port for the relay");
        let port = listener.local_addr().expect("a bound port").port();
        listener
            .set_nonblocking(true)
            .expect("a listener can be made non-blocking");
        let shared = Arc::new(Shared {
            counts: Mutex::new(Counts::default()),
            changed: Condvar::new(),
        });
        let accepting = shared.clone();
        crate::trial::spawn(move || {
            // Bounded by the relay's life: `Drop` stops it.
            while !accepting.lock().stopped {
                match listener.accept() {
                    Ok((client, _)) => relay(client, upstream, &accepting),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(POLL)
                    }
                    Err(_) => return,
                }
            }
        });
        Relay { shared, port }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Connections opened through the relay so far.
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    /// Data commands sent through the relay so far.
    pub fn commands(&self) -> usize {
        self.shared.lock().commands
    }

    /// Holds every reply back until [`Relay::release`].
    pub fn hold(&self) {
        self.shared.lock().holding = true;
    }

    pub fn release(&self) {
        self.shared.lock().holding = false;
        self.shared.changed.notify_all();
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let mut counts = self.shared.lock();
        counts.stopped = true;
        counts.holding = false;
        for s in counts.sockets.drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
        drop(counts);
        self.shared.changed.notify_all();
    }
}

/// Relays one connection: commands to Redis as they come, counted;
/// replies back unless held.
fn relay(client: TcpStream, upstream: SocketAddr, shared: &Arc<Shared>) {
    let _ = client.set_nonblocking(false);
    let Ok(server) = TcpStream::connect(upstream) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let (Ok(mut to_server), Ok(mut to_client), Ok(from_server)) =
        (server.try_clone(), client.try_clone(), server.try_clone())
    else {
        return;
    };
    {
        let mut counts = shared.lock();
        counts.connections += 1;
        counts.sockets.extend(
            [client.try_clone(), server.try_clone()]
                .into_iter()
                .flatten(),
        );
    }
    let up = shared.clone();
    crate::trial::spawn(move || {
        let mut from_client = BufReader::new(client);
        while let Ok(command) = read_command(&mut from_client) {
            if !command.free() {
                up.lock().commands += 1;
                up.changed.notify_all();
            }
            if to_server.write_all(&command.raw).is_err() {
                break;
            }
        }
        let _ = to_server.shutdown(Shutdown::Both);
    });
    let down = shared.clone();
    crate::trial::spawn(move || {
        let mut from_server = from_server;
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n @ 1..) = from_server.read(&mut buf) {
            let mut counts = down.lock();
            while counts.holding && !counts.stopped {
                counts = down.changed.wait(counts).unwrap_or_else(|e| e.into_inner());
            }
            drop(counts);
            if to_client.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to_client.shutdown(Shutdown::Both);
    });
}
