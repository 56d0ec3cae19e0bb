//! `http_tests!`: the tests of lesson 07's kind, `http-layer`.

/// The checks of lesson 07's kind, `http-layer` (`lesson()` must be in
/// scope).
#[macro_export]
macro_rules! http_tests {
    () => {
        $crate::__group!(source {
            $crate::__source_tests!(inputs, facade);

            /// The layer builds and serves over limiters that are not `Clone`,
            /// as none of lessons 02–06 is.
            #[test]
            fn compiles_over_any_limiter() {
                lesson().compiles_over_any_limiter();
            }
        });

        $crate::__group!(config {
            #[rstest::rstest]
            #[case::empty_name("", 1, $crate::__secs!(1), Err($crate::http::PolicyError::EmptyName))]
            #[case::empty_name_is_checked_first("", 0, $crate::__secs!(0), Err($crate::http::PolicyError::EmptyName))]
            #[case::name_outside_printable_ascii("café", 1, $crate::__secs!(1), Err($crate::http::PolicyError::InvalidName))]
            #[case::name_of_characters_beyond_latin_1("限流", 1, $crate::__secs!(1), Err($crate::http::PolicyError::InvalidName))]
            #[case::control_character_in_name("a\tb", 1, $crate::__secs!(1), Err($crate::http::PolicyError::InvalidName))]
            #[case::delete_character_in_name("a\x7fb", 1, $crate::__secs!(1), Err($crate::http::PolicyError::InvalidName))]
            #[case::zero_quota("api", 0, $crate::__secs!(1), Err($crate::http::PolicyError::ZeroQuota))]
            #[case::zero_quota_is_checked_before_the_window("api", 0, ::std::time::Duration::from_millis(1500), Err($crate::http::PolicyError::ZeroQuota))]
            #[case::zero_window("api", 1, $crate::__secs!(0), Err($crate::http::PolicyError::WindowNotWholeSeconds))]
            #[case::under_a_second("api", 1, ::std::time::Duration::from_millis(999), Err($crate::http::PolicyError::WindowNotWholeSeconds))]
            #[case::a_fraction_of_a_second_more("api", 1, ::std::time::Duration::from_millis(1500), Err($crate::http::PolicyError::WindowNotWholeSeconds))]
            #[case::a_nanosecond_more_than_a_second("api", 1, ::std::time::Duration::new(1, 1), Err($crate::http::PolicyError::WindowNotWholeSeconds))]
            #[case::a_nanosecond_past_2_to_the_24_seconds("api", 1, ::std::time::Duration::new(1 << 24, 1), Err($crate::http::PolicyError::WindowNotWholeSeconds))]
            #[case::one_second("api", 1, $crate::__secs!(1), Ok(()))]
            #[case::quotes_and_backslashes_are_escaped_not_refused("say \"hi\" \\o/", 1, $crate::__secs!(1), Ok(()))]
            #[case::largest_quota_and_window("api", u64::MAX, $crate::__secs!(u64::MAX), Ok(()))]
            fn policy(
                #[case] name: &str,
                #[case] quota: u64,
                #[case] window: ::std::time::Duration,
                #[case] expected: Result<(), $crate::http::PolicyError>,
            ) {
                lesson().policy(name, quota, window, expected);
            }

            /// Every name, quota and window from the edges of each fault,
            /// together.
            #[test]
            fn every_pair_of_faults() {
                lesson().policy_grid();
            }
        });

        $crate::__group!(property {
            /// Keys, statuses, every rate-limit header byte, the problem body
            /// and the inner service's calls, against the model.
            #[test]
            fn agrees_with_model() {
                lesson().agrees_with_model();
            }

            #[test]
            fn agrees_with_reference() {
                lesson().agrees_with_reference();
            }

            /// What a client writes in front of X-Forwarded-For never changes its key.
            #[test]
            fn keys_cannot_be_forged() {
                lesson().keys_cannot_be_forged();
            }

            #[test]
            fn calls_the_inner_service_once_per_allowed_request() {
                lesson().calls_the_inner_service_once_per_allowed_request();
            }

            #[test]
            fn reports_a_missing_peer_address_once() {
                lesson().reports_a_missing_peer_address_once();
            }
        });

        $crate::__group!(end_to_end {
            /// A real axum server on 127.0.0.1:0 and a real HTTP client.
            #[test]
            fn over_loopback() {
                lesson().end_to_end_over_loopback();
            }
        });

        $crate::__group!(snapshot {
            $crate::__named_snapshots!(
                first_look: "first_look",
                retry_after_rounds_up: "retry_after_rounds_up",
                behind_a_proxy: "behind_a_proxy",
                api_keys_and_ipv6: "api_keys_and_ipv6",
            );
        });

        /// Run by `cargo run -- compare 7 [TIMELINE]` (it sets `KATA_COMPARE`).
        #[test]
        #[ignore = "run by `cargo run -- compare`"]
        fn compare_with_reference() {
            lesson().print_comparison(&::std::env::var("KATA_COMPARE").unwrap_or_default());
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __secs {
    ($n:expr) => {
        ::std::time::Duration::from_secs($n)
    };
}

/// One test per named exchange of [`super::checks::SNAPSHOTS`].
#[doc(hidden)]
#[macro_export]
macro_rules! __named_snapshots {
    ($($test:ident: $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                lesson().named_snapshot($name);
            }
        )*
    };
}
