//! Validation under load: a bounded stream of requests of one client to a
//! loopback URL at a steady rate, and a verdict from the answers, second by
//! second, against the policy the server announces (`RateLimit-Policy`).
//! What `cargo run -- load` runs (the runner's tests run it against the demo
//! server, and against a server that limits nothing).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// At most this many requests per second, and this many seconds.
pub const MOST_RATE: u32 = 1_000;
pub const MOST_SECONDS: u32 = 60;

/// What to send.
#[derive(Clone, Debug)]
pub struct Load {
    /// One URL, or one service's app servers: each request goes to the
    /// next in turn.
    pub urls: Vec<String>,
    /// Requests per second, evenly spaced.
    pub rate: u32,
    pub seconds: u32,
}

impl Load {
    /// Refuses, with a sentence, a URL that is not `http://` on a loopback
    /// address, and a rate or duration of 0 or past the bounds.
    pub fn new(url: &str, rate: u32, seconds: u32) -> Result<Load, String> {
        let uri: axum::http::Uri = url
            .parse()
            .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        if uri.scheme_str() != Some("http") {
            return Err(format!("{url:?}: only http:// URLs are loaded"));
        }
        let host = uri
            .host()
            .unwrap_or("")
            .trim_matches(|c| c == '[' || c == ']');
        let loopback = host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if !loopback {
            return Err(format!(
                "{url:?}: the load is only sent to a loopback address (127.0.0.1, ::1 or \
                 localhost), never to a server someone else runs"
            ));
        }
        if rate == 0 || rate > MOST_RATE {
            return Err(format!("a rate of {rate} per second: use 1 to {MOST_RATE}"));
        }
        if seconds == 0 || seconds > MOST_SECONDS {
            return Err(format!(
                "a duration of {seconds} s: use 1 to {MOST_SECONDS}"
            ));
        }
        Ok(Load {
            urls: vec![url.to_string()],
            rate,
            seconds,
        })
    }

    /// One client's requests spread over several URLs in turn, each
    /// checked as [`Load::new`] checks one.
    pub fn spread(urls: &[String], rate: u32, seconds: u32) -> Result<Load, String> {
        let Some(first) = urls.first() else {
            return Err("no URL to load: give one, or --targets URL,URL,…".into());
        };
        let mut load = Load::new(first, rate, seconds)?;
        for url in &urls[1..] {
            load.urls
                .push(Load::new(url, rate, seconds)?.urls.remove(0));
        }
        Ok(load)
    }

    /// Where the load goes, for people.
    pub fn to(&self) -> String {
        match self.urls.as_slice() {
            [one] => one.clone(),
            many => format!("{} app servers in turn ({})", many.len(), many.join(", ")),
        }
    }
}

/// The requests of one second of the run.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Second {
    pub sent: u64,
    pub admitted: u64,
    pub denied: u64,
    /// Neither 2xx nor 429, or no answer.
    pub other: u64,
}

/// The policy a server announced: `q` requests per `w` seconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Announced {
    pub name: String,
    pub quota: u64,
    pub window: u64,
}

/// A run's answers and what they say.
#[derive(Clone, Debug)]
pub struct Report {
    pub load: Load,
    pub seconds: Vec<Second>,
    /// The same answers by URL, in the order of `load.urls`.
    pub targets: Vec<Second>,
    pub policy: Option<Announced>,
    /// Set when a response could not be had at all.
    pub errors: Vec<String>,
}

/// Reads `"name";q=5;w=10` (the first policy of the header).
pub fn parse_policy(header: &str) -> Option<Announced> {
    let first = header.split(',').next()?.trim();
    let mut parts = first.split(';');
    let name = parts.next()?.trim().trim_matches('"').to_string();
    let (mut quota, mut window) = (None, None);
    for p in parts {
        match p.trim().split_once('=') {
            Some(("q", v)) => quota = v.parse().ok(),
            Some(("w", v)) => window = v.parse().ok(),
            _ => {}
        }
    }
    Some(Announced {
        name,
        quota: quota?,
        window: window.filter(|w| *w > 0)?,
    })
}

/// Sends the load, one request every `1/rate` s, each on its own task, and
/// files each answer under the second it was sent in.
pub async fn run(load: &Load) -> Report {
    let client: Client<_, Body> = Client::builder(TokioExecutor::new()).build_http();
    let total = u64::from(load.rate) * u64::from(load.seconds);
    let every = Duration::from_secs(1) / load.rate;
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for n in 0..total {
        ticks.tick().await;
        let second = started.elapsed().as_secs().min(u64::from(load.seconds) - 1) as usize;
        let client = client.clone();
        let target = n as usize % load.urls.len();
        let url = load.urls[target].clone();
        set.spawn(async move {
            let req = Request::get(url.as_str()).body(Body::empty());
            let answer = match req {
                Ok(req) => {
                    match tokio::time::timeout(Duration::from_secs(10), client.request(req)).await {
                        Ok(Ok(res)) => {
                            let status = res.status().as_u16();
                            let policy = res
                                .headers()
                                .get("ratelimit-policy")
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_string);
                            let _ = res.into_body().collect().await;
                            Ok((status, policy))
                        }
                        Ok(Err(e)) => Err(format!("the request failed: {e}")),
                        Err(_) => Err("no answer within 10 s".to_string()),
                    }
                }
                Err(e) => Err(format!("no request: {e}")),
            };
            (second, target, answer)
        });
    }
    let mut seconds = vec![Second::default(); load.seconds as usize];
    let mut targets = vec![Second::default(); load.urls.len()];
    let mut policy = None;
    let mut errors = Vec::new();
    while let Some(done) = set.join_next().await {
        let Ok((second, target, answer)) = done else {
            continue;
        };
        let s = &mut seconds[second];
        s.sent += 1;
        targets[target].sent += 1;
        match answer {
            Ok((status, announced)) => {
                let (s, t) = (s, &mut targets[target]);
                match status {
                    200..=299 => (s.admitted += 1, t.admitted += 1),
                    429 => (s.denied += 1, t.denied += 1),
                    _ => (s.other += 1, t.other += 1),
                };
                if policy.is_none() {
                    policy = announced.as_deref().and_then(parse_policy);
                }
            }
            Err(e) => {
                s.other += 1;
                targets[target].other += 1;
                if errors.len() < 3 {
                    errors.push(e);
                }
            }
        }
    }
    Report {
        load: load.clone(),
        seconds,
        targets,
        policy,
        errors,
    }
}

impl Report {
    /// The requests admitted in seconds `[from, to)`.
    fn admitted(&self, from: usize, to: usize) -> u64 {
        self.seconds[from..to].iter().map(|s| s.admitted).sum()
    }

    fn sent(&self, from: usize, to: usize) -> u64 {
        self.seconds[from..to].iter().map(|s| s.sent).sum()
    }

    /// The verdict: `Ok` with a sentence, or `Err` naming the first span of
    /// seconds where the answers break the policy. A limiter of `q` per `w`
    /// seconds (a fixed window, a sliding one or a bucket) admits at most
    /// `q·(⌈t/w⌉ + 1)` requests of one client in any `t` seconds, and, to a
    /// client that keeps asking, at least `q·(⌊t/w⌋ − 1)`: this checks every
    /// span of whole seconds against both.
    pub fn verdict(&self) -> Result<String, String> {
        let Some(p) = &self.policy else {
            return Err(
                "no response carried a RateLimit-Policy header (`\"name\";q=…;w=…`), so there \
                 is no policy to compare with: is a rate limit in front of this URL?"
                    .into(),
            );
        };
        let n = self.seconds.len();
        let others: u64 = self.seconds.iter().map(|s| s.other).sum();
        if others > 0 {
            return Err(format!(
                "{others} requests got neither 2xx nor 429{}",
                self.errors
                    .first()
                    .map_or(String::new(), |e| format!(" (first: {e})"))
            ));
        }
        for len in 1..=n {
            for from in 0..=n - len {
                let t = len as u64;
                let got = self.admitted(from, from + len);
                let most = p.quota * (t.div_ceil(p.window) + 1);
                if got > most {
                    return Err(format!(
                        "seconds {}–{}: {got} admitted, but a policy of {} per {} s admits at \
                         most {most} in {t} s: the limit lets too much through",
                        from + 1,
                        from + len,
                        p.quota,
                        p.window
                    ));
                }
                let least =
                    (p.quota * (t / p.window).saturating_sub(1)).min(self.sent(from, from + len));
                if got < least {
                    return Err(format!(
                        "seconds {}–{}: {got} admitted of {} sent, but a policy of {} per {} s \
                         admits at least {least} in {t} s to a client that keeps asking: the \
                         limit denies too much",
                        from + 1,
                        from + len,
                        self.sent(from, from + len),
                        p.quota,
                        p.window
                    ));
                }
            }
        }
        Ok(format!(
            "every span of seconds within the policy \"{}\" ({} per {} s)",
            p.name, p.quota, p.window
        ))
    }

    /// The table, one line per second, and the verdict.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} requests per second to {} for {} s",
            self.load.rate,
            self.load.to(),
            self.load.seconds
        );
        match &self.policy {
            Some(p) => {
                let _ = writeln!(
                    out,
                    "the server's policy \"{}\": {} per {} s",
                    p.name, p.quota, p.window
                );
            }
            None => {
                let _ = writeln!(out, "the server announced no policy");
            }
        }
        let _ = writeln!(
            out,
            "{:>6} {:>6} {:>9} {:>7} {:>6} {:>16} {:>22}",
            "second",
            "sent",
            "admitted",
            "denied",
            "other",
            "admitted so far",
            "the policy allows, up to"
        );
        let mut so_far = 0;
        for (i, s) in self.seconds.iter().enumerate() {
            so_far += s.admitted;
            let allows = self.policy.as_ref().map_or("?".to_string(), |p| {
                (p.quota * ((i as u64 + 1).div_ceil(p.window) + 1)).to_string()
            });
            let _ = writeln!(
                out,
                "{:>6} {:>6} {:>9} {:>7} {:>6} {:>16} {:>22}",
                i + 1,
                s.sent,
                s.admitted,
                s.denied,
                s.other,
                so_far,
                allows
            );
        }
        if self.targets.len() > 1 {
            for (i, (url, t)) in self.load.urls.iter().zip(&self.targets).enumerate() {
                let _ = writeln!(
                    out,
                    "app server {} ({url}): {} sent, {} admitted, {} denied, {} other",
                    i + 1,
                    t.sent,
                    t.admitted,
                    t.denied,
                    t.other
                );
            }
        }
        let _ = match self.verdict() {
            Ok(v) => writeln!(out, "verdict: PASS: {v}"),
            Err(e) => writeln!(out, "verdict: FAIL: {e}"),
        };
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(policy: Option<(u64, u64)>, admitted: &[u64], sent: u64) -> Report {
        Report {
            load: Load::new("http://127.0.0.1:1/", sent as u32, admitted.len() as u32).unwrap(),
            seconds: admitted
                .iter()
                .map(|a| Second {
                    sent,
                    admitted: *a,
                    denied: sent - a,
                    other: 0,
                })
                .collect(),
            targets: vec![],
            policy: policy.map(|(quota, window)| Announced {
                name: "p".into(),
                quota,
                window,
            }),
            errors: vec![],
        }
    }

    #[test]
    fn the_policy_header_is_read() {
        assert_eq!(
            parse_policy("\"demo\";q=5;w=10"),
            Some(Announced {
                name: "demo".into(),
                quota: 5,
                window: 10
            })
        );
        assert_eq!(parse_policy("\"x\";q=5"), None);
        assert_eq!(parse_policy("\"x\";q=5;w=0"), None);
    }

    #[test]
    fn verdicts() {
        // 5 per 10 s, one client asking 20 times a second.
        assert!(report(Some((5, 10)), &[5, 0, 0, 0], 20).verdict().is_ok());
        // A window boundary in the run: 5 and 5.
        assert!(report(Some((5, 10)), &[5, 0, 5, 0], 20).verdict().is_ok());
        // No limit at all.
        let e = report(Some((5, 10)), &[20, 20, 20], 20)
            .verdict()
            .unwrap_err();
        assert!(e.contains("too much through"), "{e}");
        // Nothing admitted for 30 s.
        let e = report(Some((5, 10)), &[0; 30], 20).verdict().unwrap_err();
        assert!(e.contains("denies too much"), "{e}");
        assert!(report(None, &[1], 1).verdict().is_err());
    }

    #[test]
    fn only_loopback_is_loaded() {
        assert!(Load::new("http://127.0.0.1:3000/", 10, 2).is_ok());
        assert!(Load::new("http://[::1]:3000/", 10, 2).is_ok());
        assert!(Load::new("http://localhost:3000/x", 10, 2).is_ok());
        assert!(Load::new("http://example.com/", 10, 2)
            .unwrap_err()
            .contains("loopback"));
        assert!(Load::new("https://127.0.0.1/", 10, 2).is_err());
        assert!(Load::new("http://127.0.0.1/", 0, 2).is_err());
        assert!(Load::new("http://127.0.0.1/", 10, 61).is_err());
        let urls = [
            "http://127.0.0.1:1/".to_string(),
            "http://example.com/".to_string(),
        ];
        assert!(Load::spread(&urls, 10, 2).unwrap_err().contains("loopback"));
        assert!(Load::spread(&urls[..1], 10, 2).is_ok());
        assert!(Load::spread(&[], 10, 2).is_err());
    }
}
