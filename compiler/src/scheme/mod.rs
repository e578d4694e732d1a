//! Schemes: each turns a [`Model`] into a
//! [`StepSystem`]. Pure symbolic work: no numbers, no Rust tokens.

// One module per scheme, private: hosts choose a scheme by [`Scheme`] and
// get a [`StepSystem`]; which may be composed is asked of [`compose`].
mod applies;
pub mod compose;
mod constrained;
mod energy_momentum;
mod frame;
mod hamel;
mod health;
mod invariants;
mod mechanics;
mod rattle;
mod reduce;
mod step;
mod stormer_verlet;
mod tableau;

pub use frame::{Frame, FrameKind};
pub use hamel::Kinematics;
pub use health::HealthKernels;
pub use mechanics::Mechanics;
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

/// Whether a step keeps the members of a model's indexed `let` families
/// (its [`crate::model::Tableau`]) as unknowns, with their definitions as
/// rows, instead of substituting them: a larger system with a sparse
/// Jacobian (banded for a chain defined by recurrences) in place of a
/// smaller dense one. The discrete Hamel steps (both kinematics) have it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TableauChoice {
    /// keep them where the model has enough to pay for the larger system
    /// (see [`TableauChoice::keeps`])
    #[default]
    Auto,
    /// keep them whenever the model has a tableau
    Keep,
    /// substitute them (the dense step)
    Substitute,
}

impl TableauChoice {
    /// Scalar members from which [`TableauChoice::Auto`] keeps a tableau:
    /// measured on the director chain (6 per link and 6 for the pivot), the
    /// step of the larger system overtakes the dense one where its Newton
    /// matrix becomes banded, at 6 links (60 unknowns; h = 0.01, from
    /// `tilted`, medians of 7 rounds, `STEPS=speed TABLEAU=keep|substitute
    /// chain_profile`): midpoint 5 links 9.7 against 3.9 µs, 6 links 4.3
    /// against 5.3, 8 links 5.7 against 8.5; averaged 5 links 10.1 against
    /// 4.4, 6 links 4.6 against 5.8, 8 links 6.4 against 9.3.
    pub const AUTO_FROM: usize = 42;

    /// Whether the tableau of `model` is kept under this choice.
    pub fn keeps(self, model: &Model) -> bool {
        let members = model.tableau.as_ref().map_or(0, |t| t.symbols.len());
        match self {
            TableauChoice::Auto => members >= Self::AUTO_FROM,
            TableauChoice::Keep => members > 0,
            TableauChoice::Substitute => false,
        }
    }
}

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
    /// The scheme a host uses when none is named: the discrete Hamel scheme
    /// with midpoint (variational) kinematics. It has the broadest guarantees
    /// of the schemes that apply to every model: symplectic, every momentum
    /// map of a symmetry kept to round-off, energy error bounded at O(h²)
    /// without drift, second order under time-dependent forcing. The averaged
    /// (ZLB12) form is `hamel_averaged`.
    pub const DEFAULT: Scheme = Scheme::Hamel(Kinematics::Midpoint);

    /// Every scheme, in the order tools list them (the default first).
    pub const LIST: [Scheme; 5] = [
        Scheme::Hamel(Kinematics::Midpoint),
        Scheme::Hamel(Kinematics::Averaged),
        Scheme::StormerVerlet,
        Scheme::Rattle,
        Scheme::EnergyMomentum,
    ];

    /// The schemes tried, in order, when the default (`hamel`) does not
    /// apply and none is named ([`Scheme::default_for`]): RATTLE first, the
    /// symplectic standard for holonomic constraints, then the
    /// energy–momentum scheme, Störmer–Verlet and the averaged Hamel form.
    pub const FALLBACKS: [Scheme; 4] = [
        Scheme::Rattle,
        Scheme::EnergyMomentum,
        Scheme::StormerVerlet,
        Scheme::Hamel(Kinematics::Averaged),
    ];

    /// The scheme's name in summaries: `hamel_midpoint`, `hamel_averaged`,
    /// `stormer_verlet`, `rattle`, `energy_momentum`. (`hamel` is accepted
    /// as a name of the default, `hamel_midpoint`.)
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Hamel(Kinematics::Averaged) => "hamel_averaged",
            Scheme::Hamel(Kinematics::Midpoint) => "hamel_midpoint",
            Scheme::StormerVerlet => "stormer_verlet",
            Scheme::Rattle => "rattle",
            Scheme::EnergyMomentum => "energy_momentum",
        }
    }

    /// Parses a scheme name as written in attributes and on the command line
    /// (`hamel`, with `kinematics` `midpoint` or `averaged`, default `midpoint`;
    /// or `hamel_midpoint`, `hamel_averaged`).
    pub fn from_names(scheme: &str, kinematics: Option<&str>) -> Result<Scheme, SchemeError> {
        if let Some(k) = scheme
            .strip_prefix("hamel_")
            .filter(|k| ["midpoint", "averaged"].contains(k))
        {
            return match kinematics {
                Some(given) if given != k => Err(SchemeError(format!(
                    "scheme `{scheme}` and kinematics `{given}` disagree"
                ))),
                _ => Scheme::from_names("hamel", Some(k)),
            };
        }
        match scheme {
            "hamel" => Ok(Scheme::Hamel(match kinematics {
                None | Some("midpoint") => Kinematics::Midpoint,
                Some("averaged") => Kinematics::Averaged,
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
                "unknown scheme `{other}` (available: hamel (= {}), {})",
                Scheme::DEFAULT.name(),
                Scheme::LIST.map(Scheme::name).join(", ")
            ))),
        }
    }

    /// Whether this scheme's step for `model` keeps the model's tableau
    /// under `tableau` (the sparse step): the discrete Hamel steps, midpoint
    /// and averaged, have the choice; every other scheme substitutes the
    /// tableau.
    pub fn keeps_tableau(self, model: &Model, tableau: TableauChoice) -> bool {
        matches!(self, Scheme::Hamel(_)) && tableau.keeps(model)
    }

    /// Derives the step system of this scheme for `model`.
    pub fn derive(self, model: &Model) -> Result<StepSystem, SchemeError> {
        self.derive_with(model, TableauChoice::Auto)
    }

    /// [`Scheme::derive`], choosing whether the midpoint Hamel step keeps
    /// the model's tableau (see [`TableauChoice`]); other schemes ignore it.
    pub fn derive_with(self, model: &Model, tableau: TableauChoice) -> Result<StepSystem, SchemeError> {
        let mut sys = match self {
            Scheme::Hamel(k) => hamel::derive(model, k, tableau),
            Scheme::StormerVerlet => stormer_verlet::derive(model),
            Scheme::Rattle => rattle::derive(model),
            Scheme::EnergyMomentum => energy_momentum::derive(model),
        }?;
        sys.kind = Some(self);
        sys.add_health();
        Ok(sys)
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses the names [`Scheme::name`] gives, and `hamel` (the default).
impl std::str::FromStr for Scheme {
    type Err = SchemeError;
    fn from_str(s: &str) -> Result<Scheme, SchemeError> {
        Scheme::from_names(s, None)
    }
}
