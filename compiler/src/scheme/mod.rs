//! Schemes: each turns a [`Model`](crate::model::Model) into a
//! [`StepSystem`]. Pure symbolic work: no numbers, no Rust tokens.

pub mod frame;
pub mod hamel;
pub mod mechanics;
pub mod step;

pub use frame::{Frame, FrameKind};
pub use hamel::Kinematics;
pub use step::{Invariant, InvariantKind, Slot, StepSystem};

use crate::model::Model;

/// Why a scheme cannot be derived for a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemeError(pub String);

impl std::fmt::Display for SchemeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SchemeError {}

/// The schemes a model can be derived with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// discrete Hamel integrator (theory §2) with the given kinematics
    Hamel(Kinematics),
}

impl Scheme {
    /// Parses a scheme name as written in attributes and on the command line
    /// (`hamel`, with `kinematics` `midpoint` or `averaged`; default `averaged`).
    pub fn from_names(scheme: &str, kinematics: Option<&str>) -> Result<Scheme, SchemeError> {
        match scheme {
            "hamel" => Ok(Scheme::Hamel(match kinematics {
                None | Some("averaged") => Kinematics::Averaged,
                Some("midpoint") => Kinematics::Midpoint,
                Some(k) => {
                    return Err(SchemeError(format!(
                        "unknown kinematics `{k}` (expected `midpoint` or `averaged`)"
                    )))
                }
            })),
            other => Err(SchemeError(format!("unknown scheme `{other}` (available: hamel)"))),
        }
    }

    /// Derives the step system of this scheme for `model`.
    pub fn derive(self, model: &Model) -> Result<StepSystem, SchemeError> {
        match self {
            Scheme::Hamel(k) => hamel::derive(model, k),
        }
    }
}
