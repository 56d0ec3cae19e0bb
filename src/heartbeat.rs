//! Whether async code blocks the thread its runtime runs on. The code runs
//! on a current-thread tokio runtime beside a heartbeat, a task that wakes
//! every [`TICK`] and notes how long it was kept waiting: a call that
//! awaits (a socket read, a timer) lets it beat; a call that blocks (a
//! blocking socket, `std::thread::sleep`, a `std::sync::Mutex` held by
//! another thread) stops every task of the runtime, the heartbeat with
//! them, for as long as it blocks. What an axum server wearing a blocking
//! limiter does on every request, with no sign but its slowness.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the heartbeat means to beat.
pub const TICK: Duration = Duration::from_millis(5);

/// What the heartbeat saw while the code ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Beats {
    /// How many times it beat.
    pub beats: u64,
    /// The longest time between two beats (or from the start to the first,
    /// or from the last to the end): how long the thread was kept from it.
    pub longest_gap: Duration,
}

impl Beats {
    /// Whether the thread was held for at least `at_least` at a stretch:
    /// far past what a busy machine's scheduler delays a ready task by.
    pub fn held_for(&self, at_least: Duration) -> bool {
        self.longest_gap >= at_least
    }
}

/// Runs `code` to its end on a current-thread runtime (timers and I/O
/// enabled) beside a heartbeat; returns its output and the beats. A `code`
/// that blocks forever blocks this call: run it on a watched thread.
pub fn beside_heartbeat<F: Future>(code: F) -> Result<(F::Output, Beats), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
    let seen = Arc::new(Mutex::new((0u64, Duration::ZERO, Instant::now())));
    let output = runtime.block_on(async {
        let beating = Arc::clone(&seen);
        let heart = tokio::spawn(async move {
            loop {
                {
                    let mut seen = beating.lock().unwrap_or_else(|e| e.into_inner());
                    let now = Instant::now();
                    seen.1 = seen.1.max(now - seen.2);
                    seen.2 = now;
                    seen.0 += 1;
                }
                tokio::time::sleep(TICK).await;
            }
        });
        // The heartbeat beats once before the code starts.
        tokio::task::yield_now().await;
        let output = code.await;
        heart.abort();
        output
    });
    let seen = *seen.lock().unwrap_or_else(|e| e.into_inner());
    Ok((
        output,
        Beats {
            beats: seen.0,
            longest_gap: seen.1.max(seen.2.elapsed()),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::server::RedisServer;

    /// Long past any scheduling delay, short of the 1 s the calls wait.
    const HELD: Duration = Duration::from_millis(500);
    const WAIT: Duration = Duration::from_secs(1);

    /// A GET on a paused Redis, with a read timeout of `WAIT`: blocking, it
    /// holds the heartbeat for the whole wait; awaited on the async API, it
    /// waits as long and the heartbeat goes on.
    #[test]
    fn a_blocking_call_stops_the_heartbeat_an_awaited_one_does_not() {
        let server = RedisServer::start().unwrap_or_else(|e| panic!("{e}"));
        let client = crate::redis::client(&server.url()).unwrap();
        let mut blocking = client.get_connection().unwrap();
        blocking.set_read_timeout(Some(WAIT)).unwrap();

        server.pause();
        let started = Instant::now();
        let (answer, held) = beside_heartbeat(async {
            redis::cmd("GET")
                .arg("k")
                .query::<Option<String>>(&mut blocking)
        })
        .unwrap();
        server.resume();
        assert!(answer.is_err(), "a paused server answered: {answer:?}");
        assert!(started.elapsed() >= WAIT);
        assert!(held.held_for(HELD), "{held:?}");

        let ((answer, waited), beating) = beside_heartbeat(async {
            let mut awaited = client.get_multiplexed_async_connection().await.unwrap();
            // The connection's own limit, past the wait: the timer below ends it.
            awaited.set_response_timeout(2 * WAIT);
            server.pause();
            let started = Instant::now();
            let answer = tokio::time::timeout(
                WAIT,
                redis::cmd("GET")
                    .arg("k")
                    .query_async::<Option<String>>(&mut awaited),
            )
            .await;
            (answer, started.elapsed())
        })
        .unwrap();
        server.resume();
        assert!(answer.is_err(), "a paused server answered: {answer:?}");
        assert!(waited >= WAIT);
        assert!(!beating.held_for(HELD), "{beating:?}");
        assert!(beating.beats > 10, "{beating:?}");
    }
}
