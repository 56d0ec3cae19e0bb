//! `lesson!`: a lesson's test file includes what the build script wrote
//! for it, which defines the lesson through `define_lesson!`.

/// Defines this lesson in its test file: `kata::lesson!();` in
/// `tests/lesson_NN.rs`.
///
/// It includes what the lessons' build script wrote for `lesson_NN` from
/// `lessons/lessons.toml`: every implementation of the lesson compiled in as
/// a subject (the learner file, the stub, the reference, each file of
/// `mistakes/lesson_NN/` and the alternatives), `fn lesson() -> &'static
/// kata::Lesson`, and the standard checks of the lesson's kind. The test
/// file then only adds its examples.
#[macro_export]
macro_rules! lesson {
    () => {
        include!(concat!(
            env!("OUT_DIR"),
            "/",
            env!("CARGO_CRATE_NAME"),
            ".rs"
        ));
    };
}

/// What the lessons' build script writes for one lesson (see [`lesson!`]).
/// `kind` is the module of the harness that holds the lesson's kind (see
/// [`crate::kind`]): its `variant!` compiles each file, its `Lesson` is
/// built from the facts and the subjects, its `suite!` names the checks.
/// `algorithm` names a variant of [`Algorithm`](crate::models::Algorithm),
/// so a wrong one does not compile. Each file is given twice: as learners
/// see it, relative to the kata's root, and as the compiler finds it.
#[doc(hidden)]
#[macro_export]
macro_rules! define_lesson {
    (
        kind: $krate:ident :: $kind:ident,
        number: $number:literal,
        title: $title:literal,
        algorithm: $algorithm:ident,
        limiter: $limiter:ident,
        learner: [$learner_path:literal, $learner:literal],
        stub: [$stub_path:literal, $stub:literal],
        reference: [$reference_path:literal, $reference:literal],
        mistakes: { $($mistake:ident : [$mistake_path:literal, $mistake_file:literal]),* $(,)? },
        alternatives: { $($alternative:ident : [$alternative_path:literal, $alternative_file:literal]),* $(,)? }
        $(, baseline: {
            $baseline_limiter:ident : [$baseline_path:literal, $baseline_file:literal],
            test: $baseline_test:ident $(,)?
        })? $(,)?
    ) => {
        $( $crate::limiter::variant!(baseline, $baseline_path, $baseline_file, $baseline_limiter); )?
        $krate::$kind::variant!(learner, $learner_path, $learner, $limiter);
        $krate::$kind::variant!(stub, $stub_path, $stub, $limiter);
        $krate::$kind::variant!(reference, $reference_path, $reference, $limiter);
        $( $krate::$kind::variant!($mistake, $mistake_path, $mistake_file, $limiter); )*
        $( $krate::$kind::variant!($alternative, $alternative_path, $alternative_file, $limiter); )*

        /// This lesson, with the subject `KATA_SUBJECT` selects.
        fn lesson() -> &'static $krate::$kind::Lesson {
            static LESSON: ::std::sync::OnceLock<$krate::$kind::Lesson> = ::std::sync::OnceLock::new();
            LESSON.get_or_init(|| {
                $crate::kind::Kind::new(
                    $crate::kind::Facts {
                        root: env!("CARGO_MANIFEST_DIR"),
                        number: $number,
                        title: $title,
                        limiter: stringify!($limiter),
                        algorithm: $crate::models::Algorithm::$algorithm,
                    },
                    $crate::kind::Subjects::new(
                        env!("CARGO_MANIFEST_DIR"),
                        $crate::drive::Implementations {
                            learner: learner::VARIANT,
                            stub: stub::VARIANT,
                            reference: reference::VARIANT,
                            mistakes: vec![$((stringify!($mistake), $mistake::VARIANT)),*],
                            alternatives: vec![$((stringify!($alternative), $alternative::VARIANT)),*],
                            baseline: None $(.or(Some((stringify!($baseline_limiter), baseline::VARIANT))))?,
                        },
                    ),
                )
            })
        }

        $krate::$kind::suite!();

        $(
            /// This lesson keeps another lesson's contract another way: on
            /// random timelines it must answer exactly as that lesson's
            /// reference does.
            #[test]
            fn $baseline_test() {
                lesson().agrees_with_baseline();
            }
        )?
    };
}
