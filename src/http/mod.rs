//! The `http-layer` kind (lesson 07): a tower layer in front of an HTTP
//! API. This module is the kind's seam, what the code the build script
//! writes names (see [`crate::kind`]): its `variant!`, and, by the same
//! names, its `Lesson`, `trials` and `comparison` and the contract's types
//! a learner's file uses, which are [`crate::layer`]'s, below the kinds,
//! since lesson 10's kind checks its own layer with them too.

pub use crate::__http_variant as variant;
pub use crate::layer::*;

mod variant;
