//! Judging a subject's answers to a script: each against the model's, and
//! the first that differs said with its reasons and the drawing up to it.

use super::draw::{answer, draw};
use super::drive::{Answer, Limiter};
use super::gen::Script;

/// Runs `script` through `l`: every answer must be the model's. On the
/// first that is not, an error with the request, both answers, the
/// contract's reasons and the drawing up to there.
pub fn follow(l: &dyn Limiter, script: &Script) -> Result<Vec<Answer>, String> {
    let mut model = script.model();
    let mut answers = Vec::new();
    let single = script.single;
    for (i, r) in script.requests.iter().enumerate() {
        let keys = r.keys();
        let why = model.explain(&keys, r.cost, r.at, r.peek);
        let got = if r.peek {
            l.peek(&keys, r.cost, r.now())
        } else {
            l.check(&keys, r.cost, r.now())
        };
        let want = model.answer(&keys, r.cost, r.at, r.peek);
        answers.push(got.clone());
        if got != want {
            let upto = Script {
                single,
                on_redis: script.on_redis,
                limits: script.limits.clone(),
                requests: script.requests[..=i].to_vec(),
            };
            return Err(format!(
                "request #{} answers differently: {}\n  yours:    {}\n  contract: {}\n  why: \
                 {why}.{}\n\n{}",
                i + 1,
                r.describe(single),
                answer(&got),
                answer(&want),
                if r.peek {
                    " A peek answers what the same check would."
                } else {
                    ""
                },
                draw(&upto, &answers)
            ));
        }
    }
    Ok(answers)
}

/// Every answer of `l` to `script`, right or wrong.
pub fn answers(l: &dyn Limiter, script: &Script) -> Vec<Answer> {
    script
        .requests
        .iter()
        .map(|r| {
            if r.peek {
                l.peek(&r.keys(), r.cost, r.now())
            } else {
                l.check(&r.keys(), r.cost, r.now())
            }
        })
        .collect()
}
