//! What the runner asks of a lesson's kind without naming it, by the name
//! the catalog gives the kind's module (`kata_catalog::Kind::module`):
//! `KINDS` in `src/lib.rs` lists the kinds once, each with what is asked of
//! it (`comparison`), so that a kind that lacks it does not compile. A kind
//! of the catalog missing from the list fails this module's test.

/// What `cargo run -- compare N [TIMELINE]` draws for a lesson of the kind
/// whose module is `module`: each kind's own `comparison` (TIMELINE checked
/// as its tests would, or its first drawing).
pub fn comparison(module: &str, timeline: Option<&str>) -> Result<String, String> {
    match crate::KINDS.iter().find(|(name, _)| *name == module) {
        Some((_, comparison)) => comparison(timeline),
        None => Err(format!(
            "the harness has no kind whose module is `{module}`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::comparison;

    /// Each kind takes its own drawings and refuses another kind's.
    #[test]
    fn compare_takes_each_kind_s_drawings() {
        for (module, asked, drawn) in [
            (
                "memory",
                Some("store_under_pressure"),
                "store_under_pressure",
            ),
            ("memory", None, "store_under_pressure"),
            ("memory", Some("a@0 b@0 sweep@1000"), "a@0 b@0 sweep@1000"),
            ("memory", Some("first_look"), "first_look"),
            (
                "memory",
                Some("limit 2 per window of 1_000ns; max_keys 10, overflow Deny: a@0 sweep@999"),
                "limit 2 per window of 1_000ns; max_keys 10, overflow Deny: a@0 sweep@999",
            ),
            ("shared_limiter", None, "first_look"),
            ("limiter", Some(" two_keys "), "two_keys"),
            ("redis", Some("two_keys"), "two_keys"),
            ("async_redis", None, "first_look"),
            ("http", Some("behind_a_proxy"), "behind_a_proxy"),
        ] {
            assert_eq!(
                comparison(module, asked).as_deref(),
                Ok(drawn),
                "{module} {asked:?}"
            );
        }
        let refused = comparison("memory", Some("nosuch")).unwrap_err();
        assert!(refused.contains("store_under_pressure"), "{refused}");
        assert!(comparison("shared_limiter", Some("store_under_pressure")).is_err());
        let refused = comparison("http", Some("nosuch")).unwrap_err();
        assert!(refused.contains("behind_a_proxy"), "{refused}");
        assert!(comparison("nosuch", None).is_err());
    }

    /// Every kind of the catalog is in `KINDS` (`src/lib.rs`).
    #[test]
    fn every_kind_of_the_catalog_is_listed() {
        for kind in kata_catalog::Kind::ALL {
            if let Err(e) = comparison(kind.module(), None) {
                assert!(!e.contains("no kind whose module"), "{kind:?}: {e}");
            }
        }
    }
}
