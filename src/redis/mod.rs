//! The `redis-limiter` kind (lesson 08): a limiter whose state lives in a
//! real `redis-server`. This module is the kind's seam, what the code the
//! build script writes names (see [`crate::kind`]): its `variant!`, and, by
//! the same names, its `Lesson`, `trials` and `comparison` and the
//! contract's types a learner's file uses, which are
//! [`crate::redis_limiter`]'s, below the kinds, since lesson 10's kind runs
//! its checks too.

pub use crate::__redis_variant as variant;
pub use crate::redis_limiter::*;

mod variant;
