//! What a lesson 11 subject is to the checks: the functions `variant!`
//! wraps a compiled file into ([`ClientVariant`]), over std and over loom.

use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::http::{HeaderMap, Request, Response};

use super::sim::Client;
use super::{BudgetPolicy, ClientError, ClientPolicy, ManualClock, PolicyError, Timestamp};
use crate::kind::Compiled;

/// What the checks ask of a budget, over std or over loom.
pub trait Budget: Send + Sync {
    fn deposit(&self, now: Timestamp);
    fn withdraw(&self, now: Timestamp) -> bool;
    fn give_back(&self, taken_at: Timestamp, now: Timestamp);
}

/// A budget as the checks hold it.
pub type BoxedBudget = Box<dyn Budget>;

/// One compiled lesson 11 file, as `variant!` wraps it.
#[derive(Clone, Copy)]
pub struct ClientVariant {
    pub file: &'static str,
    pub source: &'static str,
    /// The file's `server_wait`.
    pub server_wait: fn(&HeaderMap, SystemTime) -> Option<Duration>,
    /// Its `RetryLayer` over the checks' clock, around `inner`.
    pub build: fn(ClientPolicy, ManualClock, Client) -> Result<Client, PolicyError>,
    /// Its `RetryBudget`, over std and over loom.
    pub budget: fn(BudgetPolicy) -> Result<BoxedBudget, PolicyError>,
    pub budget_loom: fn(BudgetPolicy) -> Result<BoxedBudget, PolicyError>,
}

impl Compiled for ClientVariant {
    fn file(&self) -> &'static str {
        self.file
    }

    fn source(&self) -> &'static str {
        self.source
    }
}

/// The layer `layer` around `inner`, boxed as the checks hold a client
/// (what `variant!` builds a subject's client with).
pub fn layered<L>(layer: &L, inner: Client) -> Client
where
    L: tower::Layer<Client>,
    L::Service: tower::Service<Request<Bytes>, Response = Response<Bytes>, Error = ClientError>
        + Clone
        + Send
        + 'static,
    <L::Service as tower::Service<Request<Bytes>>>::Future: Send + 'static,
{
    Client::new(layer.layer(inner))
}
