//! Checks as data: a lesson's test binary is a list of [`Trial`]s, each a
//! name in the module of its group and a closure that panics when the
//! check fails, and [`main`] runs them as libtest would.
//!
//! A kind returns its trials from a plain function (`http::trials`), built
//! with [`Trials`]: `t.group(group::CONFIG, |t| { t.test("zero_keys", …); })`
//! names the check `config::zero_keys`, the name the runner, the milestones
//! of `lessons/lessons.toml` and the gallery's "caught by" know. The groups
//! are the catalog's ([`kata_catalog::groups`]), so a check's kind and tier
//! travel with it instead of being read back from its name.
//!
//! [`main`] keeps `cargo test --test lesson_NN`'s look (but that the
//! quickest tiers of checks start first, see [`Tier`]), its filters
//! (`--exact`, `--skip`, `--ignored`, `--include-ignored`, `--list`), its
//! output capture (`--nocapture`, `--show-output`), `--test-threads`, and
//! its exit codes (0, and 101 when a check failed); and when `KATA_RESULTS`
//! names a file, it also writes each result there as a JSON line (see
//! [`run`]), which the runner and the self-check read.

mod args;
mod capture;
mod run;

pub use capture::{eprint, name, println, spawn, Output};
pub use kata_catalog::groups::{self as group, Check, Group, Tier};
pub use run::main;

/// How a check reaches the lesson it runs on: a function (or a closure
/// that copies) called when the check runs, so that listing the checks
/// builds nothing.
pub trait Get<L: ?Sized + 'static>: Fn() -> &'static L + Copy + Send + Sync + 'static {}

impl<L: ?Sized + 'static, F: Fn() -> &'static L + Copy + Send + Sync + 'static> Get<L> for F {}

/// A check's name and what it runs (or a table's row and its label).
pub type Named<T> = (&'static str, T);

/// One check: its full name (`fixed_window::race::new_key`), its group,
/// whether it runs by default, and what it runs.
pub struct Trial {
    pub name: String,
    /// The group of the group module it sits in; `None` for a
    /// check outside every group (a baseline's agreement).
    pub group: Option<Group>,
    /// Why it does not run by default, when it does not (`#[ignore]`).
    pub ignored: Option<&'static str>,
    run: Box<dyn FnOnce() + Send + 'static>,
}

impl Trial {
    /// Its kind of check: its group's, or a property outside every group.
    pub fn check(&self) -> Check {
        self.group.map_or(Check::Property, |g| g.check)
    }

    /// Its tier: its group's, or the properties' outside every group.
    pub fn tier(&self) -> Tier {
        self.group.map_or(Tier::Properties, |g| g.tier)
    }
}

impl std::fmt::Debug for Trial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trial")
            .field("name", &self.name)
            .field("group", &self.group.map(|g| g.module))
            .field("ignored", &self.ignored)
            .finish()
    }
}

/// A list of trials being built, and the module path new ones go in.
#[derive(Debug, Default)]
pub struct Trials {
    trials: Vec<Trial>,
    path: Vec<String>,
    group: Option<Group>,
}

impl Trials {
    pub fn new() -> Trials {
        Trials::default()
    }

    /// A check named `name` in the current module.
    pub fn test(&mut self, name: &str, run: impl FnOnce() + Send + 'static) -> &mut Trials {
        self.push(name, None, Box::new(run))
    }

    /// A test that does not run by default (`--ignored` runs it), for
    /// `reason`: a comparison the runner asks for, a process a check starts.
    pub fn ignored(
        &mut self,
        name: &str,
        reason: &'static str,
        run: impl FnOnce() + Send + 'static,
    ) -> &mut Trials {
        self.push(name, Some(reason), Box::new(run))
    }

    /// A lesson's examples, from its test file: `examples::case_NN_label`.
    pub fn examples<T: Copy + Send + Sync + 'static>(
        &mut self,
        cases: &'static [(&'static str, T)],
        run: impl Fn(T) + Copy + Send + 'static,
    ) -> &mut Trials {
        self.group(group::EXAMPLES, |t| {
            t.numbered(cases.iter().copied(), run);
        })
    }

    /// A table of cases, `name::case_NN_label`.
    pub fn cases<T: Send + 'static>(
        &mut self,
        name: &str,
        cases: impl IntoIterator<Item = (&'static str, T)>,
        run: impl Fn(T) + Copy + Send + 'static,
    ) -> &mut Trials {
        self.module(name, |t| {
            t.numbered(cases, run);
        })
    }

    /// One check per case, as rstest names them: `case_NN_label`, numbered
    /// from 1 and padded to the digits of the number of cases.
    fn numbered<T: Send + 'static>(
        &mut self,
        cases: impl IntoIterator<Item = (&'static str, T)>,
        run: impl Fn(T) + Copy + Send + 'static,
    ) -> &mut Trials {
        let cases: Vec<(&str, T)> = cases.into_iter().collect();
        let width = cases.len().to_string().len();
        for (i, (label, case)) in cases.into_iter().enumerate() {
            self.test(&format!("case_{:0width$}_{label}", i + 1), move || {
                run(case)
            });
        }
        self
    }

    /// The checks `build` adds, in the module of `group`.
    pub fn group(&mut self, group: Group, build: impl FnOnce(&mut Trials)) -> &mut Trials {
        let outer = self.group.replace(group);
        self.module(group.module, build);
        self.group = outer;
        self
    }

    /// The checks `build` adds, in a module of another name: a rule's
    /// (`gcra::config::…`), or another kind's checks run again
    /// (`layer::…`). A module named like a group is refused: use
    /// [`Trials::group`].
    pub fn module(&mut self, module: &str, build: impl FnOnce(&mut Trials)) -> &mut Trials {
        self.path.push(module.to_string());
        build(self);
        self.path.pop();
        self
    }

    /// Adds `more`'s trials in the current module: another kind's checks
    /// run again (`layer::source::…`).
    pub fn nest(&mut self, more: Trials) -> &mut Trials {
        for trial in more.trials {
            let outer = std::mem::replace(&mut self.group, trial.group);
            self.push(&trial.name, trial.ignored, trial.run);
            self.group = outer;
        }
        self
    }

    /// The trials built, in the order they were added.
    pub fn into_vec(self) -> Vec<Trial> {
        self.trials
    }

    fn push(
        &mut self,
        name: &str,
        ignored: Option<&'static str>,
        run: Box<dyn FnOnce() + Send + 'static>,
    ) -> &mut Trials {
        let mut full = self.path.join("::");
        if !full.is_empty() {
            full.push_str("::");
        }
        full.push_str(name);
        assert!(
            !self.trials.iter().any(|t| t.name == full),
            "two checks named {full}"
        );
        assert_eq!(
            kata_catalog::groups::group_of(&full).copied(),
            self.group,
            "{full}: a module named like a group must be made by `group`"
        );
        self.trials.push(Trial {
            name: full,
            group: self.group,
            ignored,
            run,
        });
        self
    }
}

#[cfg(test)]
mod tests;
