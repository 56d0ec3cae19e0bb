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
/// Each file is given twice: as learners see it, relative to the kata's
/// root, and as the compiler finds it.
#[doc(hidden)]
#[macro_export]
macro_rules! define_lesson {
    (
        number: $number:literal,
        title: $title:literal,
        kind: $kind:ident,
        algorithm: $algorithm:literal,
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
        $( $crate::__variant!(limiter, baseline, $baseline_path, $baseline_file, $baseline_limiter); )?
        $crate::__variant!($kind, learner, $learner_path, $learner, $limiter);
        $crate::__variant!($kind, stub, $stub_path, $stub, $limiter);
        $crate::__variant!($kind, reference, $reference_path, $reference, $limiter);
        $( $crate::__variant!($kind, $mistake, $mistake_path, $mistake_file, $limiter); )*
        $( $crate::__variant!($kind, $alternative, $alternative_path, $alternative_file, $limiter); )*

        /// This lesson, with the subject `KATA_SUBJECT` selects.
        fn lesson() -> &'static $crate::__lesson_type!($kind) {
            static LESSON: ::std::sync::OnceLock<$crate::__lesson_type!($kind)> = ::std::sync::OnceLock::new();
            LESSON.get_or_init(|| {
                <$crate::__lesson_type!($kind)>::new(
                    env!("CARGO_MANIFEST_DIR"),
                    $number,
                    $title,
                    stringify!($limiter),
                    $crate::models::Algorithm::named($algorithm),
                    $crate::drive::Implementations {
                        learner: learner::VARIANT,
                        stub: stub::VARIANT,
                        reference: reference::VARIANT,
                        mistakes: vec![$((stringify!($mistake), $mistake::VARIANT)),*],
                        alternatives: vec![$((stringify!($alternative), $alternative::VARIANT)),*],
                        baseline: None $(.or(Some((stringify!($baseline_limiter), baseline::VARIANT))))?,
                    },
                )
            })
        }

        $crate::__suites!($kind);

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

/// The type that holds a lesson of each kind and runs its checks.
#[doc(hidden)]
#[macro_export]
macro_rules! __lesson_type {
    (limiter) => {
        $crate::Lesson
    };
    (shared_limiter) => {
        $crate::Lesson
    };
    (http_layer) => {
        $crate::http::checks::HttpLesson
    };
    (redis_limiter) => {
        $crate::redis::checks::RedisLesson
    };
    (bounded_limiter) => {
        $crate::memory::checks::BoundedLesson
    };
}
