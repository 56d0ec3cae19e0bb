//! `serve` and `load`: the demo server of a fixture kata's layer, validated
//! by a load and read through its `/metrics`.

use std::path::Path;
use std::process::{Command, Stdio};

use super::fixture::{self, layer_kata, stack_kata};
use super::{runner, serial};

/// Stops a served demo (the runner, and through it cargo and the server)
/// however the test ends.
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 GET over a plain socket: the status line and the body.
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("the server accepts");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).expect("an answer");
    text
}

/// A counter's value in Prometheus's text, whatever the order of its labels.
fn counter(text: &str, name: &str, labels: &[&str]) -> u64 {
    text.lines()
        .filter(|l| l.starts_with(name) && labels.iter().all(|label| l.contains(label)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

/// Starts `serve` with `args` on a fixture kata; returns it, still
/// running, and what it printed up to "Stop with Ctrl-C".
fn start_serving(kata: &Path, args: &[&str]) -> (Served, String) {
    let target = fixture::target();
    // The build's and the server's messages, shown if no URL comes.
    let errors = kata.join("serve.err");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratelimit-kata"))
        .arg("serve")
        .args(args)
        .arg("--root")
        .arg(kata)
        .env("CARGO_TARGET_DIR", &target)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&errors).expect("a file for the server's errors"))
        .spawn()
        .expect("the runner starts");
    let out = child.stdout.take().expect("piped");
    let served = Served(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    let mut seen = String::new();
    while !seen.contains("Stop with Ctrl-C") {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = rx.recv_timeout(left).unwrap_or_else(|_| {
            panic!(
                "`serve` printed no URL; it printed:\n{seen}\n{}",
                std::fs::read_to_string(&errors).unwrap_or_default()
            )
        });
        seen.push_str(&line);
        seen.push('\n');
    }
    (served, seen)
}

/// Lesson 10's stack as two app server processes on one Redis: a load
/// spread over both passes as one limit, and their `/metrics` together
/// count what the load saw, none of it by the fallback.
#[test]
fn the_stack_serves_as_app_server_processes_with_one_limit() {
    let _one = serial();
    let (served, seen) = start_serving(stack_kata(), &["--reference", "--servers", "2"]);
    let urls: Vec<String> = seen
        .lines()
        .filter(|l| l.trim_start().starts_with("app server "))
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect();
    assert_eq!(urls.len(), 2, "two app servers, each with its URL:\n{seen}");
    assert_ne!(urls[0], urls[1], "{seen}");
    assert!(
        seen.contains("--targets"),
        "it says how to load it:\n{seen}"
    );
    let targets = urls.join(",");
    let load = runner(&[
        "load",
        "--targets",
        &targets,
        "--rate",
        "40",
        "--seconds",
        "2",
    ]);
    assert_eq!(load.code, 0, "{}{}", load.out, load.err);
    assert!(load.out.contains("2 app servers in turn"), "{}", load.out);
    assert!(load.out.contains("verdict: PASS"), "{}", load.out);
    let admitted: u64 = load
        .out
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.len() == 7 && cols[0].parse::<u32>().is_ok())
                .then(|| cols[2].parse::<u64>().ok())?
        })
        .sum();
    // 5 per 10 s, shared: the two app servers together, not 5 each.
    assert!((5..=6).contains(&admitted), "{}", load.out);
    for (i, url) in urls.iter().enumerate() {
        assert!(
            load.out
                .contains(&format!("app server {} ({url}): 40 sent", i + 1)),
            "each app server got every other request:\n{}",
            load.out
        );
    }
    let mut allowed = 0;
    for url in &urls {
        let addr = url.trim_start_matches("http://").trim_end_matches('/');
        let metrics = http_get(addr, "/metrics");
        assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
        allowed += counter(
            &metrics,
            "ratelimit_decisions_total",
            &["outcome=\"allowed\""],
        );
        assert_eq!(
            counter(&metrics, "ratelimit_fallback_decisions_total", &[]),
            0,
            "Redis answered every request: {metrics}"
        );
    }
    assert_eq!(
        allowed, admitted,
        "the app servers' metrics count what the load saw"
    );
    drop(served);
}

#[test]
fn load_validates_the_demo_server_and_its_metrics() {
    let _one = serial();
    let (served, seen) = start_serving(layer_kata(), &["--port", "0"]);
    // The URL, from the server's first line (the build comes first).
    let addr = seen
        .lines()
        .find(|l| l.contains("Serving"))
        .and_then(|l| l.split("http://").nth(1))
        .and_then(|rest| rest.split('/').next())
        .map(str::to_string);
    let addr = addr.unwrap_or_else(|| panic!("no URL in what `serve` printed:\n{seen}"));
    assert!(
        seen.contains("/metrics"),
        "the demo names its /metrics:\n{seen}"
    );

    // 40 requests a second of one client for 2 s, against 5 per 10 s.
    let url = format!("http://{addr}/");
    let load = runner(&["load", &url, "--rate", "40", "--seconds", "2"]);
    assert_eq!(load.code, 0, "{}{}", load.out, load.err);
    assert!(
        load.out
            .contains("the server's policy \"demo\": 5 per 10 s"),
        "{}",
        load.out
    );
    assert!(load.out.contains("verdict: PASS"), "{}", load.out);
    let column = |i: usize| -> u64 {
        load.out
            .lines()
            .filter_map(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                (cols.len() == 7 && cols[0].parse::<u32>().is_ok())
                    .then(|| cols[i].parse::<u64>().ok())?
            })
            .sum()
    };
    let (sent, admitted, denied) = (column(1), column(2), column(3));
    assert_eq!(sent, 80, "{}", load.out);
    // 5 within the demo's first window (10, should the run stall past it).
    assert!((5..=10).contains(&admitted), "{}", load.out);

    // The limiter's metrics counted the same requests as the load saw.
    let metrics = http_get(&addr, "/metrics");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    let policy = "policy=\"demo\"";
    let allowed = "outcome=\"allowed\"";
    let refused = "outcome=\"denied\"";
    assert_eq!(
        counter(&metrics, "ratelimit_decisions_total", &[policy, allowed]),
        admitted,
        "{metrics}"
    );
    assert_eq!(
        counter(&metrics, "ratelimit_decisions_total", &[policy, refused]),
        denied,
        "{metrics}"
    );
    assert!(
        metrics.contains("ratelimit_keys{policy=\"demo\"}"),
        "{metrics}"
    );
    assert!(
        !metrics.contains("127.0.0.1\""),
        "no label carries a client: {metrics}"
    );
    drop(served);

    // A server that lets everything through under the same policy fails.
    let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let open_addr = open.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in open.incoming() {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ = s.write_all(
                    b"HTTP/1.1 200 OK\r\nRateLimit-Policy: \"demo\";q=5;w=10\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                );
            });
        }
    });
    let open_url = format!("http://{open_addr}/");
    let load = runner(&["load", &open_url, "--rate", "20", "--seconds", "1"]);
    assert_eq!(load.code, 1, "{}{}", load.out, load.err);
    assert!(load.out.contains("verdict: FAIL"), "{}", load.out);
    assert!(load.out.contains("too much through"), "{}", load.out);

    // Never a server elsewhere; never an unbounded load.
    let elsewhere = runner(&["load", "http://192.0.2.1/"]);
    assert_eq!(elsewhere.code, 2, "{}", elsewhere.err);
    assert!(elsewhere.err.contains("loopback"), "{}", elsewhere.err);
    let endless = runner(&["load", &url, "--seconds", "3600"]);
    assert_eq!(endless.code, 2, "{}", endless.err);
}
