//! ns per decision for every contender, on the same keys: one hot key; 10,000
//! and 1,000,000 keys round-robin; two threads on one key and on 10,000. Run with
//! `scripts/bench.sh`, which also prints the summary table.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use ratelimit_kata_bench::{contenders, keys, Contender};

/// Every contender must do the work of an allowed request: a denied one is
/// cheaper (no write), and would flatter it.
fn all_allowed(group: &str, name: &str, denied: u64) {
    assert_eq!(
        denied, 0,
        "{group}/{name}: {denied} decisions were denied; every contender must be measured allowing"
    );
}

fn one_hot_key(c: &mut Criterion) {
    let mut group = c.benchmark_group("hot-key");
    let key = keys(1).remove(0);
    for (name, limiter) in contenders() {
        let (mut now, mut denied) = (0u64, 0u64);
        group.bench_function(name, |b| {
            b.iter(|| {
                now += 1;
                let allowed = limiter.decide(black_box(&key), now);
                denied += u64::from(!allowed);
                black_box(allowed)
            })
        });
        all_allowed("hot-key", name, denied);
    }
    group.finish();
}

fn round_robin(c: &mut Criterion, group_name: &str, count: usize) {
    let mut group = c.benchmark_group(group_name);
    let keys = keys(count);
    for (name, limiter) in contenders() {
        // Every key exists before measuring: this measures decisions on known
        // keys, not insertions.
        for (i, key) in keys.iter().enumerate() {
            limiter.decide(key, i as u64);
        }
        let (mut i, mut now, mut denied) = (0usize, count as u64, 0u64);
        group.bench_function(name, |b| {
            b.iter(|| {
                let key = &keys[i];
                i = if i + 1 == keys.len() { 0 } else { i + 1 };
                now += 1;
                let allowed = limiter.decide(black_box(key), now);
                denied += u64::from(!allowed);
                black_box(allowed)
            })
        });
        all_allowed(group_name, name, denied);
    }
    group.finish();
}

fn ten_thousand_keys(c: &mut Criterion) {
    round_robin(c, "keys-10k", 10_000);
}

fn a_million_keys(c: &mut Criterion) {
    round_robin(c, "keys-1m", 1_000_000);
}

/// Two threads deciding for one key at once, each pinned to its own core
/// where the OS allows it. Reported: wall time per decision of both together.
fn two_threads_one_key(c: &mut Criterion) {
    two_threads(c, "two-threads", 1);
}

/// Two threads over the same 10,000 keys round-robin, half a round apart:
/// concurrent requests of different clients, as a server sees them.
fn two_threads_ten_thousand_keys(c: &mut Criterion) {
    two_threads(c, "two-threads-10k", 10_000);
}

fn two_threads(c: &mut Criterion, group_name: &str, count: usize) {
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let mut group = c.benchmark_group(group_name);
    let keys = Arc::new(keys(count));
    for (name, limiter) in contenders() {
        for (i, key) in keys.iter().enumerate() {
            limiter.decide(key, i as u64);
        }
        let limiter: Arc<dyn Contender> = Arc::from(limiter);
        // The instants go on from batch to batch: a limiter is never asked
        // about an instant it has already passed.
        let (mut base, mut denied) = (count as u64, 0u64);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let per_thread = iters / 2 + 1;
                let first = base;
                base += 2 * per_thread;
                let start = Arc::new(Barrier::new(3));
                let threads: Vec<_> = (0..2u64)
                    .map(|t| {
                        let (limiter, keys, start) = (limiter.clone(), keys.clone(), start.clone());
                        let core = cores.get(t as usize).copied();
                        std::thread::spawn(move || {
                            let pinned = core.is_some_and(core_affinity::set_for_current);
                            let mut k = t as usize * keys.len() / 2;
                            start.wait();
                            let begun = Instant::now();
                            let mut denied = 0u64;
                            for i in 0..per_thread {
                                let key = &keys[k];
                                k = if k + 1 == keys.len() { 0 } else { k + 1 };
                                let allowed = limiter.decide(key, first + i * 2 + t);
                                denied += u64::from(!allowed);
                                black_box(allowed);
                            }
                            (begun.elapsed(), pinned, denied)
                        })
                    })
                    .collect();
                start.wait();
                let results: Vec<(Duration, bool, u64)> = threads
                    .into_iter()
                    .map(|t| t.join().expect("a bench thread"))
                    .collect();
                if !results.iter().all(|(_, pinned, _)| *pinned) {
                    eprintln!(
                        "{group_name}/{name}: the OS did not pin both threads to separate cores"
                    );
                }
                denied += results.iter().map(|(_, _, d)| d).sum::<u64>();
                results.iter().map(|(d, _, _)| *d).max().unwrap_or_default()
            })
        });
        all_allowed(group_name, name, denied);
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    targets = one_hot_key, ten_thousand_keys, a_million_keys, two_threads_one_key,
        two_threads_ten_thousand_keys
}
criterion_main!(benches);
