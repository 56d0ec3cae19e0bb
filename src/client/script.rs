//! Lesson 11's scripts: the calls a caller makes and what the server
//! answers when, as data (the generators make them, the sim server and
//! the driver play them, the drawings name their calls).

use axum::body::Bytes;
use axum::http::{HeaderValue, Method, Request};

use super::{ClientPolicy, Timestamp};

/// The header that tells the server which call a request is (the client
/// copies it to every attempt, as it copies every header).
pub const REQUEST_ID: &str = "x-kata-request";

/// A call the caller makes: when, through which client, what, and when it
/// gives up on it (drops its future), if it does.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Call {
    pub at: Timestamp,
    pub client: usize,
    pub method: Method,
    /// `a` or `b`: the server's partition (`http://a/`).
    pub host: char,
    pub idempotency_key: bool,
    /// A status the server always answers this request with (a 4xx).
    pub answer_with: Option<u16>,
    pub drop_at: Option<Timestamp>,
}

impl Call {
    pub fn request(&self, id: usize) -> Request<Bytes> {
        let mut req = Request::new(Bytes::from_static(b"{}"));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = format!("http://{}/items/{id}", self.host)
            .parse()
            .expect("a valid URI");
        let h = req.headers_mut();
        h.insert(REQUEST_ID, HeaderValue::from(id));
        if self.idempotency_key {
            h.insert(super::IDEMPOTENCY_KEY, HeaderValue::from(1000 + id));
        }
        req
    }

    pub fn describe(&self) -> String {
        format!(
            "{} http://{}/{}{}",
            self.method,
            self.host,
            if self.idempotency_key {
                " with an Idempotency-Key"
            } else {
                ""
            },
            self.answer_with
                .map(|s| format!(" (the server answers it {s})"))
                .unwrap_or_default()
        )
    }
}

/// How a `Retry-After` is written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Wait {
    Secs(u64),
    /// An HTTP-date this many seconds after the answer's second.
    Date(u64),
    /// Not a number nor a date.
    Garbage,
}

/// What the server answers during a phase.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Reply {
    /// 429, with a `Retry-After` and a `RateLimit` field of `r=0;t=…`, each
    /// if given; the field also lists a policy with quota left (`r=5;t=1`)
    /// and, if `also` is given, a second exhausted one (`r=0;t=also`).
    Limited {
        retry_after: Option<Wait>,
        t: Option<u64>,
        also: Option<u64>,
    },
    /// 503 during an outage, with a `Retry-After` if given.
    Unavailable { retry_after: Option<Wait> },
    /// Another status (500, 502, 504, 408, 501, …).
    Status(u16),
    /// No answer: the connection is refused.
    NoAnswer,
}

/// A stretch of time during which the server answers one way.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Phase {
    pub host: char,
    pub from: Timestamp,
    pub until: Timestamp,
    pub reply: Reply,
}

/// A whole scenario: the clients' policy, the calls, and the server.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Script {
    pub policy: ClientPolicy,
    pub clients: usize,
    pub calls: Vec<Call>,
    pub phases: Vec<Phase>,
    /// A limit the server keeps per host outside the phases, as lesson
    /// 07's layer with a token bucket: `(quota, window in seconds)`. Its
    /// fields list a second, daily policy after it, which never binds.
    pub limit: Option<(u64, u64)>,
    /// How long the server takes to answer: an attempt's answer comes that
    /// long after it was sent.
    pub latency: std::time::Duration,
}
