//! What a lesson 12 subject is to the checks: the functions `variant!`
//! wraps a compiled file into ([`InflightVariant`]), over std and over
//! loom.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{Request, Response};
use tower::util::BoxCloneService;

use super::{
    Admit, AimdPolicy, DelayPolicy, GradientPolicy, InnerError, ManualClock, PolicyError, Priority,
    Sample, ShedPolicy, Timestamp,
};
use crate::kind::Compiled;

/// A service as the checks hold it: the inner service, or a learner's
/// layer around it, boxed.
pub type Service = BoxCloneService<Request<Body>, Response<Body>, InnerError>;

/// A permit as the checks hold it: given back when dropped.
pub type HeldPermit = Box<dyn Send>;

/// What the checks ask of a learner's `Permits`, over std or over loom.
pub trait Permits: Send + Sync {
    fn try_acquire(&self, priority: Priority) -> Option<HeldPermit>;
    fn poll_acquire(&self, priority: Priority, cx: &mut Context<'_>) -> Poll<HeldPermit>;
    fn in_flight(&self) -> usize;
    fn set_limit(&self, limit: usize);
    /// A clone, which shares the permits.
    fn clone_box(&self) -> Box<dyn Permits>;
}

/// What the checks ask of a delay queue.
pub trait Queue: Send {
    fn admit(&self, now: Timestamp) -> Admit;
}

/// What the checks ask of a controller.
pub trait Controller: Send {
    fn limit(&self) -> usize;
    fn on_sample(&mut self, sample: Sample);
}

pub type Built<T> = Result<T, PolicyError>;

/// One compiled lesson 12 file, as `variant!` wraps it.
#[derive(Clone, Copy)]
pub struct InflightVariant {
    pub file: &'static str,
    pub source: &'static str,
    /// Its `Permits::new(limit, reserved)`, over std and over loom.
    pub permits: fn(usize, usize) -> Built<Box<dyn Permits>>,
    pub permits_loom: fn(usize, usize) -> Built<Box<dyn Permits>>,
    /// Its `ConcurrencyLimitLayer::new(limit)` around the service.
    pub concurrency: fn(usize, Service) -> Built<Service>,
    /// Its `ShedLayer::new(policy)` around the service.
    pub shed: fn(ShedPolicy, Service) -> Built<Service>,
    /// Its `DelayLayer::new(policy, clock)` around the service.
    pub delay: fn(DelayPolicy, ManualClock, Service) -> Built<Service>,
    /// Its `DelayQueue::new(policy)`.
    pub queue: fn(DelayPolicy) -> Built<Box<dyn Queue>>,
    pub aimd: fn(AimdPolicy) -> Built<Box<dyn Controller>>,
    pub gradient: fn(GradientPolicy) -> Built<Box<dyn Controller>>,
}

impl Compiled for InflightVariant {
    fn file(&self) -> &'static str {
        self.file
    }

    fn source(&self) -> &'static str {
        self.source
    }
}

/// A file's permits, with what the checks call of them (what `variant!`
/// passes, over std and over loom).
pub fn permits<T: Clone + Send + Sync + 'static>(
    inner: T,
    try_acquire: fn(&T, Priority) -> Option<HeldPermit>,
    poll_acquire: fn(&T, Priority, &mut Context<'_>) -> Poll<HeldPermit>,
    in_flight: fn(&T) -> usize,
    set_limit: fn(&T, usize),
) -> Box<dyn Permits> {
    Box::new(Adapted {
        inner,
        calls: (try_acquire, poll_acquire, in_flight, set_limit),
    })
}

type PermitCalls<T> = (
    fn(&T, Priority) -> Option<HeldPermit>,
    fn(&T, Priority, &mut Context<'_>) -> Poll<HeldPermit>,
    fn(&T) -> usize,
    fn(&T, usize),
);

struct Adapted<T, C> {
    inner: T,
    calls: C,
}

impl<T: Clone + Send + Sync + 'static> Permits for Adapted<T, PermitCalls<T>> {
    fn try_acquire(&self, priority: Priority) -> Option<HeldPermit> {
        (self.calls.0)(&self.inner, priority)
    }

    fn poll_acquire(&self, priority: Priority, cx: &mut Context<'_>) -> Poll<HeldPermit> {
        (self.calls.1)(&self.inner, priority, cx)
    }

    fn in_flight(&self) -> usize {
        (self.calls.2)(&self.inner)
    }

    fn set_limit(&self, limit: usize) {
        (self.calls.3)(&self.inner, limit)
    }

    fn clone_box(&self) -> Box<dyn Permits> {
        Box::new(Adapted {
            inner: self.inner.clone(),
            calls: self.calls,
        })
    }
}

/// A file's delay queue, as the checks call it.
pub fn queue<T: Send + 'static>(inner: T, admit: fn(&T, Timestamp) -> Admit) -> Box<dyn Queue> {
    Box::new(Adapted {
        inner,
        calls: admit,
    })
}

impl<T: Send> Queue for Adapted<T, fn(&T, Timestamp) -> Admit> {
    fn admit(&self, now: Timestamp) -> Admit {
        (self.calls)(&self.inner, now)
    }
}

type ControllerCalls<T> = (fn(&T) -> usize, fn(&mut T, Sample));

/// A file's controller, as the checks call it.
pub fn controller<T: Send + 'static>(
    inner: T,
    limit: fn(&T) -> usize,
    on_sample: fn(&mut T, Sample),
) -> Box<dyn Controller> {
    Box::new(Adapted {
        inner,
        calls: (limit, on_sample),
    })
}

impl<T: Send> Controller for Adapted<T, ControllerCalls<T>> {
    fn limit(&self) -> usize {
        (self.calls.0)(&self.inner)
    }

    fn on_sample(&mut self, sample: Sample) {
        (self.calls.1)(&mut self.inner, sample)
    }
}

/// The layer `layer` around `inner` twice (`layer` called twice), boxed as
/// one service whose clones take turns: every other clone goes through each
/// of the two. A layer whose `layer` made permits or a queue of its own
/// would have two, and let twice as many through.
pub fn layered<L>(layer: &L, inner: Service) -> Service
where
    L: tower::Layer<Service>,
    L::Service: tower::Service<Request<Body>, Response = Response<Body>, Error = InnerError>
        + Clone
        + Send
        + 'static,
    <L::Service as tower::Service<Request<Body>>>::Future: Send + 'static,
{
    let first = Service::new(layer.layer(inner.clone()));
    let second = Service::new(layer.layer(inner));
    Service::new(Turns {
        services: [first, second],
        turn: Arc::default(),
        mine: 0,
    })
}

struct Turns {
    services: [Service; 2],
    turn: Arc<AtomicUsize>,
    mine: usize,
}

impl Clone for Turns {
    fn clone(&self) -> Self {
        Turns {
            services: self.services.clone(),
            turn: self.turn.clone(),
            mine: self.turn.fetch_add(1, Ordering::Relaxed) % 2,
        }
    }
}

impl tower::Service<Request<Body>> for Turns {
    type Response = Response<Body>;
    type Error = InnerError;
    type Future = <Service as tower::Service<Request<Body>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), InnerError>> {
        self.services[self.mine].poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        self.services[self.mine].call(request)
    }
}
