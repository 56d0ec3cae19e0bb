//! `cargo run -- bench N`: the learner's limiter of lesson N next to the
//! reference (and governor, for the token bucket and GCRA), on the benchmark
//! workloads, in an optimised build: ns per decision, side by side.
//!
//! Every contender gets the same configuration: a steady stream of one
//! request per nanosecond that is always allowed, the hot path they share.
//! Each workload is timed for about half a second after a short warm-up.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ratelimit_kata_bench::{governor_bucket, keys, layer, versus, Contender};

/// ns per decision of `contender` on `keys`, taken round robin, with `now`
/// advancing one nanosecond per request.
fn time(contender: &dyn Contender, keys: &[String]) -> f64 {
    let mut now = 1_000_000u64;
    for key in keys.iter().cycle().take(200_000.max(keys.len())) {
        now += 1;
        black_box(contender.decide(key, now));
    }
    let started = Instant::now();
    let mut decisions = 0u64;
    while started.elapsed() < Duration::from_millis(500) {
        for key in keys.iter().cycle().take(10_000) {
            now += 1;
            black_box(contender.decide(black_box(key), now));
        }
        decisions += 10_000;
    }
    started.elapsed().as_nanos() as f64 / decisions as f64
}

/// The row of the going-further solution `name` (`solutions/lesson_NN_<name>.rs`).
fn going_further(name: &str) -> String {
    if name == "further" {
        "going further".into()
    } else {
        format!("further: {name}")
    }
}

/// ns per request through `svc`, on one thread.
fn time_layer(svc: &mut layer::Svc) -> f64 {
    let rt = layer::runtime();
    for _ in 0..20_000 {
        black_box(layer::once(&rt, svc));
    }
    let started = Instant::now();
    let mut requests = 0u64;
    while started.elapsed() < Duration::from_millis(500) {
        for _ in 0..1_000 {
            black_box(layer::once(&rt, svc));
        }
        requests += 1_000;
    }
    started.elapsed().as_nanos() as f64 / requests as f64
}

/// Lesson 07: the learner's layer, the reference's and tower_governor's on
/// the same service, and the service alone.
fn layers(lesson: &ratelimit_kata_bench::LayerLesson) {
    let mut contenders: Vec<(String, layer::Svc)> = Vec::new();
    match std::panic::catch_unwind(lesson.learner) {
        Ok(Ok(svc)) => contenders.push(("yours".into(), svc)),
        Ok(Err(e)) => {
            eprintln!(
                "your RateLimitLayer::new refused the benchmark's policy ({e}): nothing to measure"
            );
            std::process::exit(1);
        }
        Err(_) => {
            eprintln!(
                "your RateLimitLayer::new panicked (the message is above): nothing to measure"
            );
            std::process::exit(1);
        }
    }
    contenders.push((
        "reference".into(),
        (lesson.reference)().expect("the reference accepts it"),
    ));
    for (name, build) in lesson.further {
        contenders.push((going_further(name), build().expect("it accepts the policy")));
    }
    contenders.push(("tower_governor".into(), layer::tower_governor(false)));
    contenders.push(("no layer".into(), layer::bare()));
    println!(
        "lesson {:02} ({}): ns per request through each layer on the same service, optimised build, one thread.\n\
         The requests come from 10,000 clients in turn, each far under its policy of 1,000 a second (lesson\n\
         06's reference GCRA behind yours and the reference's, governor's behind tower_governor's), so every\n\
         one is allowed; each is keyed by its peer address and answered by a service that returns a fixed 200\n\
         with its Content-Type. \"added\" is what the layer costs over that service alone: keying, the\n\
         limiter, the clock and, for yours and the reference, the two rate-limit headers (tower_governor\n\
         sends none by default).\n",
        lesson.number, lesson.title
    );
    let mut bare = None;
    let mut rows = Vec::new();
    for (name, mut svc) in contenders {
        let timed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| time_layer(&mut svc)));
        match timed {
            Ok(ns) => {
                if name == "no layer" {
                    bare = Some(ns);
                }
                rows.push((name, ns));
            }
            Err(_) => {
                println!("{name}: panicked (the message is above)");
                std::process::exit(1);
            }
        }
    }
    let bare = bare.unwrap_or(0.0);
    println!("{:<16}{:>14}{:>14}", "", "per request", "added");
    for (name, ns) in rows {
        println!(
            "{name:<16}{:>14}{:>14}",
            format!("{ns:.0}"),
            format!("{:.0}", ns - bare)
        );
    }
    println!("\n(each layer reads a real clock and keys by the peer address; numbers vary by a few percent.)");
}

fn main() {
    if let Some(lesson) = versus::LAYER {
        layers(&lesson);
        return;
    }
    let Some(lesson) = versus::LESSON else {
        eprintln!("no lesson to measure: run `cargo run -- bench N` from the kata's folder");
        std::process::exit(2);
    };
    let (limit, period) = match lesson.algorithm {
        "TokenBucket" => (1_000, Duration::from_nanos(1)),
        // In a steady stream the weighted count sits at exactly L·W: one more makes room.
        "SlidingCounter" => (1_001, Duration::from_nanos(1_000)),
        _ => (1_000, Duration::from_nanos(1_000)),
    };
    let mut contenders: Vec<(String, Box<dyn Contender>)> = Vec::new();
    match std::panic::catch_unwind(|| (lesson.learner)(limit, period)) {
        Ok(Ok(l)) => contenders.push(("yours".into(), l)),
        Ok(Err(e)) => {
            eprintln!("your new({limit}, {period:?}) returned Err({e:?}): nothing to measure");
            std::process::exit(1);
        }
        Err(_) => {
            eprintln!(
                "your new({limit}, {period:?}) panicked (the message is above): nothing to measure"
            );
            std::process::exit(1);
        }
    }
    contenders.push((
        "reference".into(),
        (lesson.reference)(limit, period).expect("the reference accepts it"),
    ));
    for (name, build) in lesson.further {
        contenders.push((
            going_further(name),
            build(limit, period).expect("it accepts the reference's configuration"),
        ));
    }
    if lesson.algorithm == "TokenBucket" {
        contenders.push(("governor 0.10".into(), governor_bucket()));
    }
    let workloads = [("1 hot key", keys(1)), ("10k keys", keys(10_000))];
    println!(
        "lesson {:02} ({}): ns per decision, optimised build, {}\n",
        lesson.number,
        lesson.title,
        if lesson.shared {
            "one thread"
        } else {
            "one thread, behind a Mutex as the tests drive it"
        }
    );
    print!("{:<14}", "");
    for (name, _) in &workloads {
        print!("{name:>14}");
    }
    println!();
    for (name, contender) in &contenders {
        print!("{name:<14}");
        for (_, keys) in &workloads {
            let timed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                time(contender.as_ref(), keys)
            }));
            match timed {
                Ok(ns) => print!("{:>14}", format!("{ns:.1}")),
                Err(_) => {
                    println!("  panicked (the message is above)");
                    std::process::exit(1);
                }
            }
        }
        println!();
    }
    println!(
        "\n(`governor` reads its own clock; the others are given `now`. Numbers vary from run to run by a few percent.)"
    );
}
