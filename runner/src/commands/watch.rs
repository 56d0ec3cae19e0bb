//! `cargo run -- watch [N]`: a lesson's tests again each time its file is
//! saved.

use std::io::{BufRead, IsTerminal};
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use kata_runner::runner::{Entry, State};
use kata_runner::staged::Reach;
use notify::Watcher;

use super::{find, summarize, survey, Done};

/// What wakes the watcher up.
enum Wake {
    Saved,
    Enter,
    Quit,
}

pub fn watch(root: &Path, lessons: &[Entry], number: Option<u32>, all: bool) -> Done {
    let entry = match number {
        Some(n) => find(lessons, n)?.clone(),
        None => {
            let states = survey(root, lessons);
            match lessons
                .iter()
                .zip(&states)
                .find(|(_, (s, _))| *s != State::Passed)
            {
                Some((entry, _)) => entry.clone(),
                None => {
                    println!("Every lesson passes: nothing to watch.");
                    return Ok(ExitCode::SUCCESS);
                }
            }
        }
    };
    let (tx, rx) = mpsc::channel();
    let file = entry.file(root);
    let saved = tx.clone();
    let watched_name = file.file_name().map(|n| n.to_os_string());
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            let ours = event.paths.iter().any(|p| {
                p.file_name().map(|n| n.to_os_string()) == watched_name
                    || p.ends_with(".kata-watch-probe")
            });
            if ours && (event.kind.is_modify() || event.kind.is_create()) {
                let _ = saved.send(Wake::Saved);
            }
        }
    })
    .ok();
    let dir = root.join("lessons");
    let watching = watcher
        .as_mut()
        .is_some_and(|w| w.watch(&dir, notify::RecursiveMode::NonRecursive).is_ok());
    // Probe: do file events arrive here at all? (Not on some network file systems.)
    let events_arrive = watching && {
        let probe = dir.join(".kata-watch-probe");
        let _ = std::fs::write(&probe, "probe");
        let arrived = matches!(rx.recv_timeout(Duration::from_secs(2)), Ok(Wake::Saved));
        let _ = std::fs::remove_file(&probe);
        while rx.try_recv().is_ok() {}
        arrived
    };
    let keys = tx;
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let wake = match line {
                Ok(l) if l.trim() == "q" => Wake::Quit,
                Ok(_) => Wake::Enter,
                Err(_) => Wake::Quit,
            };
            let quit = matches!(wake, Wake::Quit);
            if keys.send(wake).is_err() || quit {
                return;
            }
        }
        let _ = keys.send(Wake::Quit);
    });
    if events_arrive {
        println!(
            "watching lessons/{}.rs: the tests run again each time you save it (Enter re-runs, q then Enter quits)",
            entry.name
        );
    } else {
        println!(
            "file events do not arrive here (a network file system?): press Enter to re-run the tests of lesson {:02}, q then Enter to quit",
            entry.number
        );
    }
    let reach = Reach { all, upto: None };
    let mut last = summarize(root, &entry, false, reach);
    loop {
        match rx.recv() {
            Ok(Wake::Saved) | Ok(Wake::Enter) => {
                // A save often arrives as several events: take them as one
                // run, and quit after it if q came meanwhile.
                std::thread::sleep(Duration::from_millis(150));
                let quit = rx.try_iter().any(|wake| matches!(wake, Wake::Quit));
                redraw(&entry);
                last = summarize(root, &entry, false, reach);
                if quit {
                    return Ok(last);
                }
            }
            Ok(Wake::Quit) | Err(_) => return Ok(last),
        }
    }
}

/// Before each run of watch mode: on a terminal the screen is cleared, so
/// the newest run is the only one shown; elsewhere runs are separated.
fn redraw(entry: &Entry) {
    if std::io::stdout().is_terminal() {
        print!("\x1b[2J\x1b[H");
        println!(
            "watching lessons/{}.rs (Enter re-runs, q then Enter quits)\n",
            entry.name
        );
    } else {
        println!("\n----");
    }
}
