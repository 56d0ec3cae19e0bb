//! The layer in a real axum server on a loopback port.

use std::time::Duration;

use super::HttpLesson;
use crate::watchdog::watched;

impl HttpLesson {
    /// The layer in an axum server on a loopback port, with connection
    /// info; a real HTTP client fires concurrent requests of one client at
    /// a frozen clock: exactly the quota is admitted, and the answers
    /// cross the wire intact.
    pub fn end_to_end_over_loopback(&self) {
        let ctx = self.ctx();
        let outcome = watched(
            Duration::from_secs(30),
            |_| String::new(),
            move || crate::layer::serve::concurrent_burst(ctx.tested, ctx.algorithm),
        );
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("{} over a real socket: {e}", self.whose()),
            Err(stop) => panic!("{} over a real socket: {}", self.whose(), stop.text()),
        }
    }
}
