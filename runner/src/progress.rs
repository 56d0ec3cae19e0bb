//! What the commands show on standard error while they work: a spinner on
//! a terminal, nothing elsewhere (a pipe, a file, CI's log).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::ProgressBar;

/// A spinner saying `message`, hidden unless standard error is a terminal.
pub fn spinner(message: String) -> ProgressBar {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::hidden()
    };
    bar.set_message(message);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}
