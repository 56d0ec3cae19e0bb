//! The contract's answers to an HTTP timeline, and the judging of a run
//! against them, request by request.

use crate::layer::drive::Run;
use crate::layer::exchange::{nanos, transcript, Call, HttpTimeline, Observed};
use std::net::IpAddr;

use crate::layer::model::{
    address_key, client_key, expected, forwarded_entries, problem_body_errors, Expected, Keyed,
};
use crate::layer::Policy;
use crate::models::Algorithm;
use crate::text::times;

/// What the contract answers to each request: the key and the answer.
pub fn contract(algorithm: Algorithm, t: &HttpTimeline) -> Vec<(Keyed, Expected)> {
    let rule = t.setup.key_rule(crate::layer::Report::stderr());
    let algorithm = t.setup.rule(algorithm);
    let mut model = algorithm.model(crate::layer::drive::limiter_config(
        &t.setup.policy,
        algorithm,
    ));
    t.calls
        .iter()
        .map(|c| {
            let keyed = model_key(&rule, c);
            let decision = model.decide(&keyed.key, c.at);
            let mut answer = expected(&t.setup.policy, &decision);
            if answer.reaches_inner {
                // The inner service's own answer, passed on.
                let asked = c
                    .other
                    .iter()
                    .find(|(n, _)| n == crate::layer::model::INNER_ANSWER)
                    .map(|(_, v)| v.as_str());
                let (status, retry_after) = crate::layer::model::inner_answer(asked);
                answer.status = status;
                answer.retry_after = retry_after.map(str::to_string);
            }
            (keyed, answer)
        })
        .collect()
}

/// The contract's key for a request.
fn model_key(rule: &crate::layer::KeyRule, c: &Call) -> Keyed {
    let api: Vec<&[u8]> = c.api_keys.iter().map(Vec::as_slice).collect();
    let xff: Vec<&[u8]> = c.forwarded.iter().map(Vec::as_slice).collect();
    client_key(rule, &api, &xff, c.peer)
}

/// `ip:203.0.113.7 200 r=1` / `api:k1 429 t=2`.
pub(super) fn short(key: &str, e: &Expected) -> String {
    let (r, t) = parse_ratelimit(&e.ratelimit);
    match t {
        Some(t) => format!("{key} {} t={t}", e.status),
        None => format!("{key} {} r={r}", e.status),
    }
}

fn parse_ratelimit(value: &str) -> (String, Option<String>) {
    let params: Vec<&str> = value.rsplit(';').collect();
    let get = |p: &str| {
        params
            .iter()
            .find_map(|x| x.strip_prefix(p))
            .map(str::to_string)
    };
    (get("r=").unwrap_or_default(), get("t="))
}

/// The model's transcript: what the reference and the snapshot must show.
pub(super) fn model_transcript(algorithm: Algorithm, t: &HttpTimeline) -> String {
    let answers: Vec<Observed> = contract(algorithm, t)
        .into_iter()
        .zip(&t.calls)
        .map(|((keyed, e), c)| {
            let mut headers = Vec::new();
            if let Some(r) = &e.retry_after {
                headers.push(("retry-after".to_string(), r.clone().into_bytes()));
            }
            headers.push(("ratelimit".to_string(), e.ratelimit.clone().into_bytes()));
            headers.push((
                "ratelimit-policy".to_string(),
                e.ratelimit_policy.clone().into_bytes(),
            ));
            Observed {
                status: e.status,
                headers,
                body: Vec::new(),
                inner_calls: usize::from(e.reaches_inner),
                inner_request_changed: false,
                checks: vec![(keyed.key, c.at)],
            }
        })
        .collect();
    transcript(t, &answers)
}

/// What two implementations must agree on: key, status, the rate-limit
/// headers, the content type and the problem body's fields.
pub(super) fn seen(o: &Observed) -> String {
    let mut out = format!("key {}  →  {}", o.keys(), o.summary());
    if o.status == 429 {
        if let Ok(Some(ct)) = o.header("content-type") {
            out.push_str(&format!("  Content-Type: {}", String::from_utf8_lossy(ct)));
        }
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&o.body) {
            for f in ["type", "status", "violated-policies"] {
                out.push_str(&format!(
                    "  {f}: {}",
                    v.get(f).map(|x| x.to_string()).unwrap_or_default()
                ));
            }
        }
    }
    out
}

/// The first request, up to the `upto`th (0-based), for which the limiter
/// was asked for another key than the contract's, said first: the key it
/// was counted under and where in the request that came from, the
/// contract's key and why, and which other requests the wrong key joins
/// with it or splits from it. Every answer after a wrong key follows from
/// it, so a failure names it before any of them. Also gives the request's
/// index.
pub(super) fn wrong_key(
    t: &HttpTimeline,
    want: &[(Keyed, Expected)],
    answers: &[Observed],
    upto: usize,
) -> Option<(usize, String)> {
    let asked = |j: usize| match answers.get(j).map(|o| o.checks.as_slice()) {
        Some([(key, _)]) => Some(key.as_str()),
        _ => None,
    };
    let last = upto.min(want.len().min(answers.len()).checked_sub(1)?);
    let k = (0..=last).find(|&k| asked(k).is_some_and(|a| a != want[k].0.key))?;
    let (c, got, right) = (&t.calls[k], asked(k)?, &want[k].0);
    let mut text = format!(
        "request #{} ({c:?}) was counted under the wrong key: the limiter was asked for {got:?} \
         ({}); the contract counts it under {:?} ({}).",
        k + 1,
        origin(t, c, got),
        right.key,
        right.why
    );
    for j in (0..=last).filter(|&j| j != k) {
        let (theirs, contracts) = (asked(j), want[j].0.key.as_str());
        if theirs == Some(got) && contracts != right.key {
            text.push_str(&format!(
                " Request #{} was counted under {got:?} too, {}: two clients counted as one.",
                j + 1,
                if contracts == got {
                    "its own key".to_string()
                } else {
                    format!("where the contract counts it under {contracts:?}")
                }
            ));
            break;
        }
        if contracts == right.key && theirs.is_some_and(|th| th != got) {
            text.push_str(&format!(
                " The contract counts request #{} under {:?} too; the limiter was asked for {:?} \
                 there: one client counted as two.",
                j + 1,
                right.key,
                theirs.unwrap_or_default()
            ));
            break;
        }
    }
    Some((k, text))
}

/// Where in request `c` a key comes from, in words: its API key, an
/// address of its `X-Forwarded-For` (by place), its peer, or a header the
/// contract never reads.
fn origin(t: &HttpTimeline, c: &Call, key: &str) -> String {
    if key == crate::layer::UNKNOWN_CLIENT {
        return "the key of requests without a peer address".into();
    }
    if let Some(value) = key.strip_prefix("api:") {
        if c.api_keys
            .iter()
            .any(|k| String::from_utf8_lossy(k) == value)
        {
            return match &t.setup.api_key_header {
                Some(name) => format!("the value of its {name} header"),
                None => format!(
                    "the value of its {} header, which this layer is not told to read",
                    crate::layer::drive::DECOY_API_KEY_HEADER
                ),
            };
        }
        if let Some(name) = &t.setup.api_key_header {
            if value == "decoy" {
                return format!(
                    "the value of its {} header, which this layer is not told to read (its API \
                     key header is {name})",
                    crate::layer::drive::DECOY_API_KEY_HEADER
                );
            }
        }
    }
    let keyed = |ip: IpAddr| address_key(ip) == key;
    if c.peer.is_some_and(keyed) {
        return "the peer's address, the connection's".into();
    }
    let entries: Vec<Option<IpAddr>> = c
        .forwarded
        .iter()
        .flat_map(|line| forwarded_entries(line))
        .collect();
    if let Some(p) = entries.iter().position(|e| e.is_some_and(keyed)) {
        let n = entries.len();
        return match p {
            _ if n == 1 => "the one X-Forwarded-For address".into(),
            0 => "the leftmost X-Forwarded-For address, which the client itself may write".into(),
            _ if p == n - 1 => "the rightmost X-Forwarded-For address".into(),
            _ => format!("X-Forwarded-For's address #{} of {n}, from the left", p + 1),
        };
    }
    for (name, value) in &c.other {
        let value = value.strip_prefix("for=").unwrap_or(value);
        if value.parse::<IpAddr>().is_ok_and(keyed) {
            return format!("its {name} header, which the contract never reads");
        }
    }
    "neither an address of this request nor its API key".into()
}

/// Judges a run against the contract, request by request.
pub fn judge(algorithm: Algorithm, t: &HttpTimeline, got: &Run) -> Result<(), String> {
    let want = contract(algorithm, t);
    let missing = want.iter().any(|(keyed, _)| keyed.missing_peer);
    for (i, ((keyed, e), c)) in want.iter().zip(&t.calls).enumerate() {
        let o = &got.answers[i];
        let problem = match wrong_key(t, &want, &got.answers, i) {
            Some((_, wrong)) => Some(wrong),
            None => differs(&t.setup.policy, &keyed.key, c.at, e, o)
                .map(|problem| format!("request #{} ({c:?}): {problem}", i + 1)),
        };
        if let Some(problem) = problem {
            return Err(format!(
                "{problem}\n\nyour transcript up to there:\n{}\nthe contract's:\n{}",
                transcript(&t.clone_upto(i), &got.answers),
                model_transcript(algorithm, &t.clone_upto(i))
            ));
        }
    }
    let reports = usize::from(missing);
    if got.reported.len() != reports {
        return Err(format!(
            "the layer reported {:?}; over these requests the contract reports {}",
            got.reported,
            if missing {
                "[NoPeerAddress] once"
            } else {
                "nothing"
            }
        ));
    }
    if got.unready_calls > 0 {
        return Err(unready(got.unready_calls));
    }
    Ok(())
}

/// What is wrong with one answer, if anything.
fn differs(policy: &Policy, key: &str, at: u64, e: &Expected, o: &Observed) -> Option<String> {
    let asked: Vec<(&str, u64)> = o.checks.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    if asked != [(key, at)] {
        return Some(format!(
            "the limiter was asked {}; the contract asks it once, for key {key:?} at {} (the \
             clock's time)",
            if asked.is_empty() {
                "nothing".to_string()
            } else {
                asked
                    .iter()
                    .map(|(k, n)| format!("{k:?} at {}", nanos(*n)))
                    .collect::<Vec<_>>()
                    .join(", then ")
            },
            nanos(at)
        ));
    }
    if o.status != e.status {
        return Some(format!(
            "the status was {}; the contract says {}",
            o.status, e.status
        ));
    }
    let header = |name: &str, want: Option<&str>| -> Option<String> {
        match o.header(name) {
            Err(e) => Some(e),
            Ok(got) => {
                let got = got.map(|v| String::from_utf8_lossy(v).into_owned());
                (got.as_deref() != want).then(|| match (got, want) {
                    (None, Some(w)) => {
                        format!("there was no {name} header; the contract sends `{name}: {w}`")
                    }
                    (Some(g), None) => format!(
                        "`{name}: {g}` was sent; the contract sends no {name} on a {} response",
                        o.status
                    ),
                    (Some(g), Some(w)) => {
                        format!("`{name}: {g}` was sent; the contract says `{name}: {w}`")
                    }
                    (None, None) => unreachable!(),
                })
            }
        }
    };
    if let Some(p) = header("ratelimit-policy", Some(&e.ratelimit_policy))
        .or_else(|| header("ratelimit", Some(&e.ratelimit)))
        .or_else(|| header("retry-after", e.retry_after.as_deref()))
    {
        return Some(p);
    }
    let inner = usize::from(e.reaches_inner);
    if o.inner_calls != inner {
        return Some(match (o.inner_calls, inner) {
            (0, _) => "the inner service was not called for it; the contract calls it once".into(),
            (n, 0) => format!(
                "the inner service was called {} for it; the contract never calls it for a \
                 denied request",
                times(n)
            ),
            (n, _) => format!(
                "the inner service was called {} for it; the contract calls it once",
                times(n)
            ),
        });
    }
    if o.inner_request_changed {
        return Some(
            "the request reached the inner service changed: its `ConnectInfo<SocketAddr>`, \
             method, URI or header lines were not the ones it came with. The handlers behind \
             the layer read them (the peer's address, `X-Forwarded-For`, …): read the request; \
             leave it as it is."
                .into(),
        );
    }
    if e.reaches_inner {
        for (name, _) in crate::layer::model::INNER_HEADERS {
            let sent: Vec<&[u8]> = crate::layer::model::INNER_HEADERS
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v.as_bytes())
                .collect();
            let kept: Vec<&[u8]> = o
                .headers
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v.as_slice())
                .collect();
            if kept != sent {
                let shown = |lines: &[&[u8]]| {
                    lines
                        .iter()
                        .map(|l| String::from_utf8_lossy(l).into_owned())
                        .collect::<Vec<_>>()
                };
                return Some(format!(
                    "the inner service sent `{name}` as {:?} and the client got {:?}: an allowed \
                     request gets the inner service's response as it was (every line of every \
                     header), plus the layer's two rate-limit headers",
                    shown(&sent),
                    shown(&kept)
                ));
            }
        }
        if o.body != crate::layer::drive::INNER_BODY.as_bytes() {
            return Some("the inner service's body was not passed on as it was".into());
        }
    } else {
        if let Some(p) = header("content-type", Some("application/problem+json")) {
            return Some(p);
        }
        if let Some(p) = problem_body_errors(policy, &o.body) {
            return Some(format!("the 429's problem body is wrong: {p}"));
        }
    }
    None
}

/// The inner service was called `n` times without being made ready first:
/// both ways a layer gets there, since either prints the same.
pub(crate) fn unready(n: usize) -> String {
    format!(
        "the inner service was called {} without a `poll_ready` of its own first. Either the \
         layer's `poll_ready` does not delegate to the inner service, or `call` calls another \
         instance than the one `poll_ready` made ready: a clone of it has not been polled (take \
         the ready one with `std::mem::replace`, leaving the clone in its place). Tower's \
         contract: call a service only after it said it was ready.",
        times(n)
    )
}
