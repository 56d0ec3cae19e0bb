//! Wrong layers the harness's own tests run lesson 07's checks on: each
//! keeps the contract in every respect but one (its headers and bodies are
//! the model's), so that a test sees what a learner with that one mistake
//! would see.

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, StatusCode};
use tower::{Layer, Service};

use super::Ctx;
use crate::decision::{Decision, RateLimiter};
use crate::layer::drive::{Driven, Echo, HttpVariant, Layered, Parts, TestLimiter};
use crate::layer::exchange::HttpTimeline;
use crate::layer::model::{address_key, client_key, expected, forwarded_entries};
use crate::layer::{
    Clock, KeyRule, LayerError, ManualClock, Policy, PolicyError, PROBLEM_TITLE, PROBLEM_TYPE,
    UNKNOWN_CLIENT,
};
use crate::models::Algorithm;
use crate::subject::Subject;

/// The one thing a wrong layer gets wrong.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Flaw {
    /// Nothing: the contract, the reference of the checks run on the others.
    None,
    /// Behind a trusted proxy, the client is the leftmost `X-Forwarded-For`
    /// entry (the peer when it is not an address), as
    /// `mistakes/lesson_07/leftmost_forwarded_for.diff` has it.
    Leftmost,
    /// The inner service is called for a denied request too (its answer
    /// thrown away).
    InnerCalledWhenDenied,
}

/// `Ctx` of a check run on the wrong layer with `flaw`, over a fixed
/// window, with the contract's layer as the reference.
pub(super) fn ctx(flaw: Flaw) -> Ctx {
    let variant = |flaw: Flaw| HttpVariant {
        file: match flaw {
            Flaw::None => "wrong_layers.rs (the contract)",
            Flaw::Leftmost => "wrong_layers.rs (leftmost)",
            Flaw::InnerCalledWhenDenied => "wrong_layers.rs (inner called when denied)",
        },
        source: "",
        build: match flaw {
            Flaw::None => build_contract,
            Flaw::Leftmost => build_leftmost,
            Flaw::InnerCalledWhenDenied => build_inner_called_when_denied,
        },
        router: no_router,
        over_any_limiter: || true,
    };
    Ctx {
        algorithm: Algorithm::FixedWindow,
        subject: Subject::Mistake("wrong layer"),
        tested: variant(flaw),
        reference: variant(Flaw::None),
    }
}

pub(super) fn timeline(text: &str) -> HttpTimeline {
    crate::layer::exchange::parse(text).expect("a valid timeline")
}

fn build_contract(parts: Parts) -> Result<Box<dyn Layered>, PolicyError> {
    build(parts, Flaw::None)
}

fn build_leftmost(parts: Parts) -> Result<Box<dyn Layered>, PolicyError> {
    build(parts, Flaw::Leftmost)
}

fn build_inner_called_when_denied(parts: Parts) -> Result<Box<dyn Layered>, PolicyError> {
    build(parts, Flaw::InnerCalledWhenDenied)
}

fn no_router(
    router: axum::Router,
    _: TestLimiter,
    _: Policy,
    _: KeyRule,
    _: ManualClock,
) -> Result<axum::Router, PolicyError> {
    Ok(router)
}

fn build(parts: Parts, flaw: Flaw) -> Result<Box<dyn Layered>, PolicyError> {
    parts.policy.validate()?;
    let layer = Wrong {
        flaw,
        limiter: Arc::new(parts.limiter),
        policy: parts.policy,
        keys: Arc::new(parts.keys),
        clock: parts.clock,
        reported: Arc::default(),
    };
    Ok(Driven::boxed(layer, parts.inner))
}

#[derive(Clone)]
struct Wrong {
    flaw: Flaw,
    limiter: Arc<TestLimiter>,
    policy: Policy,
    keys: Arc<KeyRule>,
    clock: ManualClock,
    reported: Arc<AtomicBool>,
}

impl Wrong {
    fn key(&self, req: &Request<Body>) -> String {
        let lines = |name: &str| -> Vec<&[u8]> {
            req.headers()
                .get_all(name)
                .iter()
                .map(HeaderValue::as_bytes)
                .collect()
        };
        let api = match &self.keys.api_key_header {
            Some(name) => lines(name.as_str()),
            None => Vec::new(),
        };
        let forwarded = lines("x-forwarded-for");
        let peer = req
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(a)| a.ip());
        let keyed = client_key(&self.keys, &api, &forwarded, peer);
        if keyed.missing_peer && !self.reported.swap(true, Ordering::Relaxed) {
            self.keys.report.error(&LayerError::NoPeerAddress);
        }
        match (self.flaw, peer) {
            (Flaw::Leftmost, Some(peer))
                if keyed.key != UNKNOWN_CLIENT
                    && !keyed.key.starts_with("api:")
                    && !self.keys.trusted_proxies.is_empty()
                    && self.keys.trusts(peer) =>
            {
                let first: Option<IpAddr> = forwarded
                    .iter()
                    .flat_map(|line| forwarded_entries(line))
                    .next()
                    .flatten();
                address_key(first.unwrap_or(peer))
            }
            _ => keyed.key,
        }
    }
}

impl Layer<Echo> for Wrong {
    type Service = WrongService;

    fn layer(&self, inner: Echo) -> WrongService {
        WrongService {
            layer: self.clone(),
            inner,
        }
    }
}

#[derive(Clone)]
struct WrongService {
    layer: Wrong,
    inner: Echo,
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl Service<Request<Body>> for WrongService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Answer {
        let key = self.layer.key(&req);
        let decision = self.layer.limiter.check(&key, self.layer.clock.now());
        let e = expected(&self.layer.policy, &decision);
        let value = |v: &str| HeaderValue::from_str(v).expect("printable ASCII");
        let (ratelimit, policy) = (value(&e.ratelimit), value(&e.ratelimit_policy));
        match decision {
            Decision::Allowed { .. } => {
                let answer = self.inner.call(req);
                Box::pin(async move {
                    let mut response = answer.await?;
                    let headers = response.headers_mut();
                    headers.insert("ratelimit", ratelimit);
                    headers.insert("ratelimit-policy", policy);
                    Ok(response)
                })
            }
            Decision::Denied { .. } => {
                if self.layer.flaw == Flaw::InnerCalledWhenDenied {
                    drop(self.inner.call(req));
                }
                let body = serde_json::json!({
                    "type": PROBLEM_TYPE,
                    "title": PROBLEM_TITLE,
                    "status": 429,
                    "detail": "Too many requests.",
                    "violated-policies": [self.layer.policy.name],
                });
                let mut response = Response::new(Body::from(body.to_string()));
                *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
                let headers = response.headers_mut();
                let retry_after = e.retry_after.expect("a 429 has a Retry-After");
                headers.insert("retry-after", value(&retry_after));
                headers.insert("ratelimit", ratelimit);
                headers.insert("ratelimit-policy", policy);
                headers.insert("content-type", value("application/problem+json"));
                Box::pin(std::future::ready(Ok(response)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::checks::properties::{
        falsify, falsify_forged_keys, inner_calls, with_model, with_reference, Check,
    };
    use crate::layer::checks::verdict::judge;
    use crate::layer::drive::run;
    use crate::layer::gen;

    /// Two clients behind one trusted proxy, each with a forged address
    /// in front: the contract counts both under the client's address,
    /// the leftmost layer under each forged one.
    const FORGED_IN_FRONT: &str = "name=\"api\" q=1 w=10 trust=10.0.0.0/8: \
        @0s from 10.0.0.1 xff \"1.1.1.1, 203.0.113.7\"; @0s from 10.0.0.1 xff \"2.2.2.2, 203.0.113.7\"";

    /// A client behind the proxy whose forged entry is another client's
    /// address, then that client directly: the second request's own key is
    /// right, and only the first's explains its 429.
    const FORGED_AS_ANOTHER: &str = "name=\"api\" q=1 w=10 trust=10.0.0.0/8: \
        @0s from 10.0.0.1 xff \"203.0.113.7, 198.51.100.1\"; @0s from 203.0.113.7";

    /// The first line of a failure names the request counted under the
    /// wrong key, the key it was counted under and where that came from,
    /// and the contract's key, before anything that follows from it.
    fn names_the_key_first(text: &str, request: &str, wrong: &str, from: &str, right: &str) {
        let first = text.lines().next().unwrap_or("");
        assert!(first.starts_with(request), "{text}");
        assert!(first.contains("counted under the wrong key"), "{text}");
        for word in [wrong, from, right] {
            assert!(
                first.contains(word),
                "{word:?} missing from the first line:\n{text}"
            );
        }
        for consequence in ["inner service", "429", "status"] {
            if let Some(at) = text.find(consequence) {
                assert!(at > first.len(), "{consequence:?} comes first:\n{text}");
            }
        }
    }

    #[test]
    fn a_wrong_key_is_named_before_the_inner_calls_it_caused() {
        let ctx = ctx(Flaw::Leftmost);
        let text = inner_calls(ctx, &timeline(FORGED_IN_FRONT)).unwrap_err();
        names_the_key_first(
            &text,
            "request #1 (",
            "\"ip:1.1.1.1\"",
            "leftmost",
            "\"ip:203.0.113.7\"",
        );
        assert!(text.contains("request #2"), "{text}");
        let text = inner_calls(ctx, &timeline(FORGED_AS_ANOTHER)).unwrap_err();
        names_the_key_first(
            &text,
            "request #1 (",
            "\"ip:203.0.113.7\"",
            "leftmost",
            "\"ip:198.51.100.1\"",
        );
        assert!(text.contains("request #2"), "{text}");
    }

    #[test]
    fn a_wrong_key_is_named_first_against_the_model_and_the_reference() {
        let ctx = ctx(Flaw::Leftmost);
        for text in [FORGED_IN_FRONT, FORGED_AS_ANOTHER] {
            let t = timeline(text);
            let got = run(ctx.tested, ctx.algorithm, &t).unwrap();
            for text in [
                judge(ctx.algorithm, &t, &got).unwrap_err(),
                with_reference(ctx, &t).unwrap_err(),
            ] {
                let wrong = if text.contains("1.1.1.1") {
                    "\"ip:1.1.1.1\""
                } else {
                    "\"ip:203.0.113.7\""
                };
                names_the_key_first(&text, "request #1 (", wrong, "leftmost", "the contract");
            }
        }
    }

    /// Where the keys are right, the inner calls are what fails, said
    /// once in words.
    /// A count agrees with its noun: "called once", not "called 1 time(s)".
    #[test]
    fn the_model_counts_inner_calls_in_words() {
        let ctx = ctx(Flaw::InnerCalledWhenDenied);
        let t = timeline("name=\"api\" q=1 w=10: @0s from 203.0.113.7; @0s from 203.0.113.7");
        let got = run(ctx.tested, ctx.algorithm, &t).unwrap();
        let text = judge(ctx.algorithm, &t, &got).unwrap_err();
        assert!(
            text.starts_with(
                "request #2 (@0s from 203.0.113.7): the inner service was called once for it; \
                 the contract never calls it for a denied request"
            ),
            "{text}"
        );
    }

    #[test]
    fn inner_calls_for_a_denied_request_are_named() {
        let ctx = ctx(Flaw::InnerCalledWhenDenied);
        let t = timeline("name=\"api\" q=1 w=10: @0s from 203.0.113.7; @0s from 203.0.113.7");
        let text = inner_calls(ctx, &t).unwrap_err();
        assert!(text.starts_with("request #2 ("), "{text}");
        assert!(
            text.contains("the inner service was called once for it"),
            "{text}"
        );
        assert!(!text.contains("counted under"), "{text}");
    }

    /// Each wrong layer is the contract wherever its flaw does not show:
    /// what the checks say of it is about its flaw alone.
    #[test]
    fn a_wrong_layer_is_right_where_its_flaw_does_not_show() {
        let plain = timeline(
            "name=\"api\" q=1 w=10 trust=10.0.0.0/8 api=x-api-key: @0s from 203.0.113.7; \
             @0s from 10.0.0.1 xff \"198.51.100.1\" via clone; @1s from none via layer; \
             @2s from 192.0.2.1 key \"k1\"",
        );
        for flaw in [Flaw::None, Flaw::Leftmost, Flaw::InnerCalledWhenDenied] {
            let ctx = ctx(flaw);
            let got = run(ctx.tested, ctx.algorithm, &plain).unwrap();
            assert_eq!(judge(ctx.algorithm, &plain, &got), Ok(()), "{flaw:?}");
        }
    }

    /// A failure's timeline reads at a glance: each `X-Forwarded-For` chain
    /// shrunk to a few plain entries, with no tab and no zone id unless
    /// they are the point (for a leftmost layer they never are).
    fn plain_chains(t: &HttpTimeline) -> Result<(), String> {
        for c in &t.calls {
            let entries: usize = c
                .forwarded
                .iter()
                .map(|l| l.split(|b| *b == b',').count())
                .sum();
            let text: Vec<u8> = c.forwarded.concat();
            if entries > 3 || text.contains(&b'\t') || text.contains(&b'%') {
                return Err(format!("{entries} entries in {c:?}"));
            }
        }
        Ok(())
    }

    #[test]
    fn a_failure_shrinks_to_a_short_plain_chain() {
        let ctx = ctx(Flaw::Leftmost);
        let checks: [(&str, Check, usize); 3] = [
            ("agrees with the model", with_model, 14),
            ("agrees with the reference", with_reference, 14),
            (
                "calls the inner service once per allowed request",
                inner_calls,
                10,
            ),
        ];
        for (name, check, most) in checks {
            let (reason, t) = falsify(ctx, 256, gen::timelines(most), check).expect(name);
            if let Err(e) = plain_chains(&t) {
                panic!("{name}: {e}\n\n{t:?}\n\n{reason}");
            }
        }
        let (reason, case) = falsify_forged_keys(ctx).expect("keys cannot be forged");
        if let Err(e) = plain_chains(&case.forged) {
            panic!(
                "keys cannot be forged: {e}\n\n{:?}\n\n{reason}",
                case.forged
            );
        }
    }
}
