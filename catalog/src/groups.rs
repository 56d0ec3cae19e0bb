//! The groups a lesson's checks are sorted into, one list that the harness
//! and the runner both read: each check sits in the module of its group
//! (the harness's `Trials::group` takes one of these constants and puts it
//! there; a lesson's own examples are `examples`), and its group says what
//! kind of check it is ([`Check`]) and in which tier it runs ([`Tier`]).

/// What kind of check a test is.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Check {
    Example,
    Config,
    Property,
    Snapshot,
    Loom,
    /// A real server on a loopback port and a real client (lesson 07 on).
    EndToEnd,
    /// App servers' Redis commands in every order (lesson 08).
    Race,
    /// A Redis server paused, killed, restarted or cut off (lesson 08).
    Fault,
    /// A source check (`source::…`): what the file may use and how its
    /// types are bounded; not behavioural.
    Source,
}

/// The tiers a lesson's checks run in, one after the other, the quickest
/// and most telling first: a learner whose key function is wrong hears it
/// from an example in a second, not after the million-key flood.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Tier {
    /// Examples, configuration, drawings and source checks: milliseconds each.
    Quick,
    Properties,
    /// Loom's interleavings and the Redis app servers' orders.
    Races,
    /// Floods, many keys, faults, end to end: the `slow` group, and the
    /// faults and end-to-end checks.
    Slow,
}

/// One group: the module its checks sit in, their kind and their tier.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Group {
    pub module: &'static str,
    pub check: Check,
    pub tier: Tier,
}

/// A lesson's own examples (its test file's).
pub const EXAMPLES: Group = group("examples", Check::Example, Tier::Quick);
pub const CONFIG: Group = group("config", Check::Config, Tier::Quick);
pub const PROPERTY: Group = group("property", Check::Property, Tier::Properties);
/// Properties over a quarter of a million calls: run last.
pub const SLOW: Group = group("slow", Check::Property, Tier::Slow);
pub const SNAPSHOT: Group = group("snapshot", Check::Snapshot, Tier::Quick);
pub const LOOM: Group = group("loom", Check::Loom, Tier::Races);
pub const RACE: Group = group("race", Check::Race, Tier::Races);
pub const FAULT: Group = group("fault", Check::Fault, Tier::Slow);
pub const END_TO_END: Group = group("end_to_end", Check::EndToEnd, Tier::Slow);
pub const SOURCE: Group = group("source", Check::Source, Tier::Quick);
/// A controller against a simulated server, step by step (lesson 12).
pub const SIMULATION: Group = group("simulation", Check::Property, Tier::Properties);

/// Every group. A lesson that runs the shared checks once per rule nests
/// them in a module per rule (`gcra::config::every_pair_of_faults`).
pub const GROUPS: [Group; 11] = [
    EXAMPLES, CONFIG, PROPERTY, SLOW, SNAPSHOT, LOOM, RACE, FAULT, END_TO_END, SOURCE, SIMULATION,
];

const fn group(module: &'static str, check: Check, tier: Tier) -> Group {
    Group {
        module,
        check,
        tier,
    }
}

/// The group of a test, from its name (`gcra::config::every_pair_of_faults`):
/// the first of its modules that is a group's. A test in no group (the
/// baseline's) has none.
pub fn group_of(test: &str) -> Option<&'static Group> {
    let modules = test.rsplit_once("::").map_or("", |(modules, _)| modules);
    modules
        .split("::")
        .find_map(|part| GROUPS.iter().find(|g| g.module == part))
}

impl Check {
    /// A test's kind of check (see [`group_of`]); a property when it is in
    /// no group.
    pub fn of(test: &str) -> Check {
        group_of(test).map_or(Check::Property, |g| g.check)
    }

    pub fn name(self) -> &'static str {
        match self {
            Check::Example => "example",
            Check::Config => "config",
            Check::Property => "property",
            Check::Snapshot => "snapshot",
            Check::Loom => "loom",
            Check::EndToEnd => "end-to-end",
            Check::Race => "race",
            Check::Fault => "fault",
            Check::Source => "source",
        }
    }

    /// Whether the test exercises the limiter's behaviour (every kind but the
    /// source check, which a stub passes by design).
    pub fn behavioural(self) -> bool {
        self != Check::Source
    }

    /// Whether a check of this kind takes milliseconds: where the first
    /// failure is enough (a mistake in the self-check), these run first.
    pub fn quick(self) -> bool {
        GROUPS
            .iter()
            .any(|g| g.check == self && g.tier == Tier::Quick)
    }
}

impl Tier {
    pub const ALL: [Tier; 4] = [Tier::Quick, Tier::Properties, Tier::Races, Tier::Slow];

    /// A test's tier: a check in a `slow` module is slow whatever its kind;
    /// otherwise its group's tier, and a test in no group is a property.
    pub fn of(test: &str) -> Tier {
        let modules = test.rsplit_once("::").map_or("", |(modules, _)| modules);
        if modules.split("::").any(|m| m == "slow") {
            return Tier::Slow;
        }
        group_of(test).map_or(Tier::Properties, |g| g.tier)
    }

    /// Its name in a lesson binary's results (`KATA_RESULTS`).
    pub fn name(self) -> &'static str {
        match self {
            Tier::Quick => "quick",
            Tier::Properties => "properties",
            Tier::Races => "races",
            Tier::Slow => "slow",
        }
    }

    /// What learners call it.
    pub fn label(self) -> &'static str {
        match self {
            Tier::Quick => "quick checks (examples, configuration, drawings)",
            Tier::Properties => "properties",
            Tier::Races => "races",
            Tier::Slow => "slow checks (floods, many keys, faults, end to end)",
        }
    }

    /// Its name in a sentence: "a quick check", "a property".
    pub fn one(self) -> &'static str {
        match self {
            Tier::Quick => "a quick check",
            Tier::Properties => "a property",
            Tier::Races => "a race",
            Tier::Slow => "a slow check",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_s_group_is_the_first_of_its_modules_that_is_one() {
        assert_eq!(Check::of("config::every_pair_of_faults"), Check::Config);
        assert_eq!(Check::of("gcra::loom::two_threads"), Check::Loom);
        assert_eq!(Check::of("examples::case_01_a"), Check::Example);
        assert_eq!(Check::of("agrees_with_baseline"), Check::Property);
        assert_eq!(Check::of("slow::keeps_many_keys_apart"), Check::Property);
        assert_eq!(Tier::of("slow::keeps_many_keys_apart"), Tier::Slow);
        assert_eq!(Tier::of("cluster::slow::failover"), Tier::Slow);
        assert_eq!(Tier::of("fault::paused"), Tier::Slow);
        assert_eq!(Tier::of("race::orders"), Tier::Races);
        assert_eq!(Tier::of("snapshot::first_look"), Tier::Quick);
        assert_eq!(Tier::of("agrees_with_baseline"), Tier::Properties);
        assert_eq!(
            Check::of("config::constructor::case_02_zero_limit"),
            Check::Config
        );
        assert_eq!(Check::of("end_to_end::over_loopback"), Check::EndToEnd);
        assert_eq!(Check::of("fault::server_paused"), Check::Fault);
        assert!(!Check::of("token_bucket::source::uses_only_the_sync_facade").behavioural());
        // A test named like a group is not in it: only modules count.
        assert_eq!(Check::of("property::loom_like_name"), Check::Property);
        assert_eq!(Check::of("loom"), Check::Property);
    }

    #[test]
    fn the_groups_and_their_names() {
        for g in GROUPS {
            assert_eq!(group_of(&format!("{}::x", g.module)), Some(&g));
        }
        assert_eq!(group_of("slo::x"), None);
        assert_eq!(group_of("properties::x"), None);
        assert!(Check::Source.quick() && Check::Snapshot.quick());
        assert!(!Check::Property.quick() && !Check::Loom.quick());
        assert!(!Check::Source.behavioural() && Check::Fault.behavioural());
    }
}
