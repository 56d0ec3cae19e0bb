//! Lesson 07's checks. `kata::lesson!()` defines the lesson from
//! `lessons/lessons.toml` with the standard checks of its kind (`http-layer`);
//! this file adds its examples. Run: `cargo test --test lesson_07` (your
//! file) or with `KATA_SUBJECT=reference` (the reference solution).

use kata::trial::{Named, Trials};

kata::lesson!();

/// A setup and requests in the notation failures print; the answers as
/// `KEY STATUS r=REMAINING` or `KEY 429 t=RETRY_AFTER_SECONDS`. The limiter
/// behind the layer is a fixed window of `q` requests per `w` seconds, or
/// the rule `rule=` names (a sliding window counter's wait can be longer
/// than its window: the client is told the limiter's wait as it is).
const EXAMPLES: &[Named<(&str, &str)>] = &[
    ("quota_then_429", ("name=\"api\" q=2 w=1: @0s from 203.0.113.7; @0s from 203.0.113.7; @0s from 203.0.113.7", "ip:203.0.113.7 200 r=1; ip:203.0.113.7 200 r=0; ip:203.0.113.7 429 t=1")),
    ("retry_after_is_whole_seconds_rounded_up", ("name=\"api\" q=1 w=3: @0s from 192.0.2.1; @0.5s from 192.0.2.1; @2s from 192.0.2.1; @2.999999999s from 192.0.2.1", "ip:192.0.2.1 200 r=0; ip:192.0.2.1 429 t=3; ip:192.0.2.1 429 t=1; ip:192.0.2.1 429 t=1")),
    ("retry_after_is_the_limiter_s_wait_even_past_the_window", ("name=\"api\" q=1 w=60 rule=SlidingCounter: @0s from 192.0.2.1; @0s from 192.0.2.1", "ip:192.0.2.1 200 r=0; ip:192.0.2.1 429 t=61")),
    ("forwarded_for_from_a_direct_client_is_ignored", ("name=\"api\" q=1 w=10 trust=10.0.0.0/8: @0s from 203.0.113.7 xff \"1.1.1.1\"; @0s from 203.0.113.7 xff \"2.2.2.2\"", "ip:203.0.113.7 200 r=0; ip:203.0.113.7 429 t=10")),
    ("behind_a_trusted_proxy_the_rightmost_untrusted_address", ("name=\"api\" q=1 w=10 trust=10.0.0.0/8: @0s from 10.0.0.1 xff \"1.1.1.1, 203.0.113.7\"; @0s from 10.0.0.1 xff \"2.2.2.2, 203.0.113.7, 10.0.0.2\"", "ip:203.0.113.7 200 r=0; ip:203.0.113.7 429 t=10")),
    ("no_trusted_proxies_no_forwarded_for", ("name=\"api\" q=1 w=10: @0s from 10.0.0.1 xff \"203.0.113.7\"", "ip:10.0.0.1 200 r=0")),
    ("an_api_key_before_the_address", ("name=\"api\" q=1 w=10 api=x-api-key: @0s from 192.0.2.1 key \"k1\"; @0s from 192.0.2.2 key \"k1\"; @0s from 192.0.2.1", "api:k1 200 r=0; api:k1 429 t=10; ip:192.0.2.1 200 r=0")),
    ("ipv6_clients_by_their_64", ("name=\"api\" q=1 w=10: @0s from 2001:db8:1:2::1; @0s from 2001:db8:1:2::2; @0s from ::ffff:192.0.2.1", "ip:2001:db8:1:2::/64 200 r=0; ip:2001:db8:1:2::/64 429 t=10; ip:192.0.2.1 200 r=0")),
    ("an_api_key_header_sent_twice_is_no_api_key", ("name=\"api\" q=1 w=10 api=x-api-key: @0s from 192.0.2.1 key \"k1\" key \"k1\"; @0s from 192.0.2.1 key \"k1\"", "ip:192.0.2.1 200 r=0; api:k1 200 r=0")),
    ("an_api_key_is_never_trimmed", ("name=\"api\" q=1 w=10 api=x-api-key: @0s from 192.0.2.1 key \" k1\"; @0s from 192.0.2.2 key \"k1\"", "ip:192.0.2.1 200 r=0; api:k1 200 r=0")),
    ("an_entry_that_is_no_address_stops_the_walk", ("name=\"api\" q=1 w=10 trust=10.0.0.0/8: @0s from 10.0.0.1 xff \"203.0.113.7, unknown, 10.0.0.2\"", "ip:10.0.0.2 200 r=0")),
];

fn examples(t: &mut Trials) {
    t.examples(EXAMPLES, |(timeline, answers)| {
        lesson().example(timeline, answers);
    });
}
