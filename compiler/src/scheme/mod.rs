//! Schemes: each turns a [`Model`] into a
//! [`StepSystem`]. Pure symbolic work: no numbers, no Rust tokens.

pub mod compose;
pub mod constrained;
pub mod energy_momentum;
pub mod frame;
pub mod hamel;
mod invariants;
pub mod mechanics;
pub mod rattle;
mod reduce;
pub mod step;
pub mod stormer_verlet;

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
    /// discrete Hamel integrator (docs/schemes.md §2) with the given kinematics
    Hamel(Kinematics),
    /// generalized Störmer–Verlet (docs/schemes.md §3), index-reduced with holonomic constraints
    StormerVerlet,
    /// RATTLE (docs/schemes.md §4)
    Rattle,
    /// energy–momentum integrator (docs/schemes.md §5)
    EnergyMomentum,
}

impl Scheme {
    /// Every scheme, in the order tools list them.
    pub const LIST: [Scheme; 5] = [
        Scheme::Hamel(Kinematics::Averaged),
        Scheme::Hamel(Kinematics::Midpoint),
        Scheme::StormerVerlet,
        Scheme::Rattle,
        Scheme::EnergyMomentum,
    ];

    /// The scheme's name on the command line and in summaries: `hamel`,
    /// `hamel_midpoint`, `stormer_verlet`, `rattle`, `energy_momentum`.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Hamel(Kinematics::Averaged) => "hamel",
            Scheme::Hamel(Kinematics::Midpoint) => "hamel_midpoint",
            Scheme::StormerVerlet => "stormer_verlet",
            Scheme::Rattle => "rattle",
            Scheme::EnergyMomentum => "energy_momentum",
        }
    }

    /// Parses a scheme name as written in attributes and on the command line
    /// (`hamel`, with `kinematics` `midpoint` or `averaged`, default `averaged`;
    /// or `hamel_midpoint`, `hamel_averaged`).
    pub fn from_names(scheme: &str, kinematics: Option<&str>) -> Result<Scheme, SchemeError> {
        if let Some(k) = scheme.strip_prefix("hamel_") {
            return match kinematics {
                Some(given) if given != k => Err(SchemeError(format!(
                    "scheme `{scheme}` and kinematics `{given}` disagree"
                ))),
                _ => Scheme::from_names("hamel", Some(k)),
            };
        }
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
            "stormer_verlet" | "rattle" if kinematics.is_some() => Err(SchemeError(format!(
                "`kinematics` applies to the hamel scheme only, not to `{scheme}`"
            ))),
            "stormer_verlet" => Ok(Scheme::StormerVerlet),
            "rattle" => Ok(Scheme::Rattle),
            "energy_momentum" => Ok(Scheme::EnergyMomentum),
            other => Err(SchemeError(format!(
                "unknown scheme `{other}` (available: {})",
                Scheme::LIST.map(Scheme::name).join(", ")
            ))),
        }
    }

    /// Derives the step system of this scheme for `model`.
    pub fn derive(self, model: &Model) -> Result<StepSystem, SchemeError> {
        match self {
            Scheme::Hamel(k) => hamel::derive(model, k),
            Scheme::StormerVerlet => stormer_verlet::derive(model),
            Scheme::Rattle => rattle::derive(model),
            Scheme::EnergyMomentum => energy_momentum::derive(model),
        }
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses the names [`Scheme::name`] gives, and `hamel_averaged`.
impl std::str::FromStr for Scheme {
    type Err = SchemeError;
    fn from_str(s: &str) -> Result<Scheme, SchemeError> {
        Scheme::from_names(s, None)
    }
}
