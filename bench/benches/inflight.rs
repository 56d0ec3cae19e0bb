//! `cargo bench -p ratelimit-kata-bench --bench inflight`: ns per request
//! through lesson 12's concurrency limit and shedder and through tower's,
//! on the same service, and through the service alone.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ratelimit_kata_bench::{inflight, layer};

fn per_request(c: &mut Criterion) {
    let rt = layer::runtime();
    let mut group = c.benchmark_group("inflight");
    for (name, mut svc) in inflight::contenders() {
        assert_eq!(inflight::once(&rt, &mut svc), 200, "{name} must answer");
        group.bench_function(name, |b| {
            b.iter(|| black_box(inflight::once(&rt, &mut svc)))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = per_request
}
criterion_main!(benches);
