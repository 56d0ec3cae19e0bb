//! What the file under test may use (its sync primitives, its inputs), and
//! the loom scenarios run against its loom build.

use super::Lesson;

impl Lesson {
    /// Fails, naming the line, if the file under test takes sync primitives from
    /// anywhere but `super::sync`.
    pub fn uses_only_the_sync_facade(&self) {
        let v = self.tested();
        if let Err(e) = crate::source::check_sync_imports(&v.path(), v.source) {
            panic!("{e}");
        }
    }

    /// Fails, naming the line and the reason, if the file under test uses a
    /// real clock, per-thread state, sleeps, threads or randomness (its
    /// answers may depend only on its configuration and its calls), or an
    /// atomic ordering std rejects.
    pub fn uses_only_its_inputs(&self) {
        let v = self.tested();
        for check in [crate::source::check_inputs, crate::source::check_orderings] {
            if let Err(e) = check(&v.path(), v.source) {
                panic!("{e}");
            }
        }
    }

    /// Runs one loom scenario against the subject's loom build.
    pub fn loom(&self, scenario: crate::scenarios::Scenario) {
        self.uses_only_the_sync_facade();
        let v = self.tested();
        let build = v
            .build_loom
            .expect("loom scenarios need a lesson of kind shared-limiter");
        if let Err(e) = crate::scenarios::explore(self.facts.algorithm, build, scenario) {
            panic!("{} ({}): {e}", self.subject(), v.path());
        }
    }
}
