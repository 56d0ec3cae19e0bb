//! The class as a terminal table, as a self-contained page for a projector,
//! and as the points of each learner. Every text that came from a report is
//! made printable (terminal) or escaped (page): reports come from learners.

use std::fmt::Write as _;

use super::{
    common_failures, lesson, milestones_reached, printable, refused, stuck, tallies, Class, Learner,
};
use kata_runner::runner::Entry;

/// A learner's mark for a lesson: `+` passed, `!` does not compile, `.` not
/// started, `x` failing, or, failing with some of its milestones reached (as
/// the points count them), how many.
fn mark(learner: &Learner, entry: &Entry) -> char {
    let state = lesson(learner.latest(), entry.number).map(|l| l.state.as_str());
    match state {
        Some("passed") => '+',
        Some("does_not_compile") => '!',
        Some("failing") | Some("timed_out") => {
            let reached = learner
                .points(std::slice::from_ref(entry))
                .iter()
                .filter(|p| p.milestone.is_some() && p.reached)
                .count();
            match reached {
                1..=9 => char::from_digit(reached as u32, 10).unwrap_or('x'),
                _ => 'x',
            }
        }
        _ => '.',
    }
}

/// `3/27 points`
fn score(lessons: &[Entry], learner: &Learner) -> String {
    let (reached, of) = kata_runner::points::score(&learner.points(lessons));
    format!("{reached}/{of} points")
}

/// `1: 4, 2: 1, 3: 0`: how many learners reached each milestone of a lesson.
fn reached_line(entry: &Entry, class: &Class) -> String {
    milestones_reached(entry, &class.learners)
        .iter()
        .map(|(k, _, count)| format!("{k}: {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The class as a terminal table.
pub fn table(lessons: &[Entry], class: &Class) -> String {
    let learners = &class.learners;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "class of {}",
        kata::text::count(learners.len(), "learner")
    );
    if let Some(how) = &class.how {
        let _ = writeln!(out, "checkouts: {}", printable(how));
    }
    let _ = writeln!(out);
    let width = lessons
        .iter()
        .map(|l| l.title.chars().count())
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "  {:<2}  {:<width$}  {:>6}  {:>7}  {:>11}  milestones reached (by how many)",
        "#", "lesson", "passed", "failing", "not started"
    );
    for (entry, t) in lessons.iter().zip(tallies(lessons, learners)) {
        let line = format!(
            "  {:02}  {:<width$}  {:>6}  {:>7}  {:>11}  {}",
            entry.number,
            entry.title,
            t.passed,
            t.failing,
            t.not_started,
            reached_line(entry, class)
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(
        out,
        "\nwhere each learner stands (+ passed, x failing, or failing with that many \
         milestones reached, ! does not compile, . not started)\n"
    );
    let names: Vec<String> = learners.iter().map(|l| printable(&l.name)).collect();
    let name_width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    for (learner, name) in learners.iter().zip(&names) {
        let marks: String = lessons.iter().map(|e| mark(learner, e)).collect();
        let _ = writeln!(
            out,
            "  {name:<name_width$}  {marks}  {}",
            score(lessons, learner)
        );
    }
    let common = common_failures(learners);
    if !common.is_empty() {
        let _ = writeln!(out, "\nchecks that fail most often\n");
        for (lesson, check, who) in common.iter().take(10) {
            let _ = writeln!(
                out,
                "  {:>2} × lesson {lesson:02} {}: {}",
                who.len(),
                printable(check),
                printable(&who.join(", "))
            );
        }
    }
    let stuck = stuck(learners);
    if !stuck.is_empty() {
        let _ = writeln!(out, "\nwho may be stuck\n");
        for (who, lesson, why) in &stuck {
            let _ = writeln!(out, "  {} on lesson {lesson:02}: {why}", printable(who));
        }
    }
    let refused = refused(learners);
    if !refused.is_empty() {
        let _ = writeln!(out, "\nwhat the sandbox refused, as the failures say\n");
        for (who, lesson, what, said) in &refused {
            let _ = writeln!(
                out,
                "  {} on lesson {lesson:02}, {what}: {}",
                printable(who),
                printable(said)
            );
        }
    }
    if !class.not_run.is_empty() {
        let _ = writeln!(out, "\ncheckouts not run\n");
        for (who, why) in &class.not_run {
            let _ = writeln!(out, "  {}: {}", printable(who), printable(why));
        }
    }
    out
}

/// Every learner's points, milestone by milestone of the catalog, `lessons`:
/// what CI prints for one (`cargo run -- points report.json`).
pub fn points_tables(lessons: &[Entry], class: &Class) -> String {
    class
        .learners
        .iter()
        .map(|l| kata_runner::points::table(lessons, &l.name, l.latest()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The class as one self-contained HTML page, for a projector.
pub fn html(lessons: &[Entry], class: &Class) -> String {
    let learners = &class.learners;
    let mut page = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>ratelimit kata: the class</title>\n<style>\n\
         body{font:18px/1.4 system-ui,sans-serif;margin:2em;color:#222;background:#fff}\n\
         h1{font-size:1.6em}h2{font-size:1.2em;margin-top:1.6em}\n\
         table{border-collapse:collapse}td,th{padding:.3em .7em;text-align:left}\n\
         th{border-bottom:2px solid #999}\n\
         .bar{display:flex;width:24em;height:1.3em;border:1px solid #999}\n\
         .bar span{display:block;height:100%}\n\
         .passed{background:#3a9d5d;color:#fff}.failing{background:#d9534f;color:#fff}\n\
         .broken{background:#8e44ad;color:#fff}.not_started{background:#ddd;color:#555}\n\
         td.cell{text-align:center;font-weight:bold;min-width:2.2em}\n\
         .legend span{padding:.1em .5em;margin-right:.6em}\n\
         </style></head><body>\n<h1>ratelimit kata: the class</h1>\n",
    );
    let _ = writeln!(
        page,
        "<p>{}</p>",
        kata::text::count(learners.len(), "learner")
    );
    if let Some(how) = &class.how {
        let _ = writeln!(page, "<p>Checkouts: {}.</p>", escape(how));
    }
    let _ = writeln!(page, "<h2>Per lesson</h2>\n<table><tr><th>#</th><th>lesson</th><th>passed</th><th>failing</th><th>not started</th><th></th></tr>");
    let total = learners.len().max(1);
    for (entry, t) in lessons.iter().zip(tallies(lessons, learners)) {
        let pct = |n: usize| 100.0 * n as f64 / total as f64;
        let _ = writeln!(
            page,
            "<tr><td>{:02}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><div class=\"bar\"><span class=\"passed\" style=\"width:{:.1}%\"></span><span class=\"failing\" style=\"width:{:.1}%\"></span><span class=\"not_started\" style=\"width:{:.1}%\"></span></div></td></tr>",
            entry.number,
            escape(&entry.title),
            t.passed,
            t.failing,
            t.not_started,
            pct(t.passed),
            pct(t.failing),
            pct(t.not_started)
        );
    }
    page.push_str("</table>\n");
    let mut rows = String::new();
    for entry in lessons {
        for (k, title, count) in milestones_reached(entry, learners) {
            let _ = writeln!(
                rows,
                "<tr><td>{:02}.{k}</td><td>{}</td><td>{count} of {}</td></tr>",
                entry.number,
                escape(&title),
                learners.len()
            );
        }
    }
    if !rows.is_empty() {
        let _ = write!(page, "<h2>Milestones</h2>\n<table><tr><th>#</th><th>milestone</th><th>reached by</th></tr>\n{rows}</table>\n");
    }
    page.push_str("<h2>Each learner</h2>\n<p class=\"legend\"><span class=\"passed\">passed</span><span class=\"failing\">failing (a digit: the milestones reached)</span><span class=\"broken\">does not compile</span><span class=\"not_started\">not started</span></p>\n<table><tr><th>learner</th>");
    for entry in lessons {
        let _ = write!(page, "<th>{:02}</th>", entry.number);
    }
    page.push_str("<th>points</th></tr>\n");
    for learner in learners {
        let _ = write!(page, "<tr><td>{}</td>", escape(&learner.name));
        for entry in lessons {
            let l = lesson(learner.latest(), entry.number);
            let state = l.map_or("not_started", |l| l.state.as_str());
            let (class_name, shown) = match mark(learner, entry) {
                '+' => ("passed", "✓".to_string()),
                '!' => ("broken", "!".to_string()),
                '.' => ("not_started", "·".to_string()),
                'x' => ("failing", l.map_or(0, |l| l.failed).to_string()),
                digit => ("failing", format!("{digit}★")),
            };
            let title = l
                .and_then(|l| l.first_failure.as_ref().or(l.compiler_error.as_ref()))
                .map(|t| escape(t))
                .unwrap_or_else(|| escape(&state.replace('_', " ")));
            let _ = write!(
                page,
                "<td class=\"cell {class_name}\" title=\"{title}\">{shown}</td>"
            );
        }
        let (reached, of) = kata_runner::points::score(&learner.points(lessons));
        let _ = writeln!(page, "<td>{reached}/{of}</td></tr>");
    }
    page.push_str("</table>\n");
    let common = common_failures(learners);
    if !common.is_empty() {
        page.push_str("<h2>Checks that fail most often</h2>\n<table><tr><th>learners</th><th>lesson</th><th>check</th><th>who</th></tr>\n");
        for (lesson, check, who) in common.iter().take(10) {
            let _ = writeln!(
                page,
                "<tr><td>{}</td><td>{lesson:02}</td><td><code>{}</code></td><td>{}</td></tr>",
                who.len(),
                escape(check),
                escape(&who.join(", "))
            );
        }
        page.push_str("</table>\n");
    }
    let list = |page: &mut String, heading: &str, items: Vec<String>| {
        if !items.is_empty() {
            let _ = writeln!(page, "<h2>{heading}</h2>\n<ul>");
            for item in items {
                let _ = writeln!(page, "<li>{item}</li>");
            }
            page.push_str("</ul>\n");
        }
    };
    list(
        &mut page,
        "Who may be stuck",
        stuck(learners)
            .iter()
            .map(|(who, lesson, why)| {
                format!(
                    "<b>{}</b> on lesson {lesson:02}: {}",
                    escape(who),
                    escape(why)
                )
            })
            .collect(),
    );
    list(
        &mut page,
        "What the sandbox refused, as the failures say",
        refused(learners)
            .iter()
            .map(|(who, lesson, what, said)| {
                format!(
                    "<b>{}</b> on lesson {lesson:02}, {what}: <code>{}</code>",
                    escape(who),
                    escape(said)
                )
            })
            .collect(),
    );
    list(
        &mut page,
        "Checkouts not run",
        class
            .not_run
            .iter()
            .map(|(who, why)| format!("<b>{}</b>: {}", escape(who), escape(why)))
            .collect(),
    );
    page.push_str("</body></html>\n");
    page
}
