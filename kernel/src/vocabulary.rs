//! The words every crate shares about a compiled step, as types: what a
//! monitored quantity is. The compiler decides them from what a quantity is
//! (never from its name); the runtime, the loader and the hosts read them.

/// What a monitored quantity is, and so how its error is reported and judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InvariantKind {
    /// the energy: relative deviation from the initial value, judged (for a
    /// forced model: the energy balance `E − Σ W`, judged against the
    /// largest energy of the run)
    Energy,
    /// the energy of a forced model: recorded, not judged (forces change
    /// it); it sets the scale its balance is judged against
    ForcedEnergy,
    /// a user quantity linear in the velocities (a momentum map component:
    /// linear or angular momentum, `⟨p, ζ⟩`): deviation from the initial value
    Momentum,
    /// a user quantity of the positions alone that the kinematics and the
    /// constraints keep (a length or norm a frame preserves by construction,
    /// `‖γ‖` of a body-frame pendulum): reported with the constraint errors
    Geometric,
    /// any other user quantity: deviation from the initial value
    Monitored,
    /// a constraint residual of the model (velocity constraint or holonomic
    /// constraint at position level): its absolute value, judged
    Constraint,
    /// a holonomic constraint that the scheme imposes only through its second
    /// derivative (index-reduced Störmer–Verlet): its residual drifts with
    /// time; its absolute value, judged, and a violation names the drift
    DriftingConstraint,
    /// the velocity level `∇g · q̇` of a holonomic constraint, which schemes
    /// that impose `g` alone keep only to O(h²): reported, not judged
    HiddenConstraint,
}

impl InvariantKind {
    /// The kind's name in summaries (`energy`, `momentum`, `geometric`,
    /// `monitored`, `constraint`, `hidden_constraint`).
    pub fn name(self) -> &'static str {
        match self {
            InvariantKind::Energy => "energy",
            InvariantKind::ForcedEnergy => "forced_energy",
            InvariantKind::Momentum => "momentum",
            InvariantKind::Geometric => "geometric",
            InvariantKind::Monitored => "monitored",
            InvariantKind::Constraint => "constraint",
            InvariantKind::DriftingConstraint => "drifting_constraint",
            InvariantKind::HiddenConstraint => "hidden_constraint",
        }
    }

    /// Whether the quantity is a residual that should stay at zero (a
    /// constraint, hidden or not): its error is its absolute value.
    pub fn is_residual(self) -> bool {
        matches!(
            self,
            InvariantKind::Constraint | InvariantKind::DriftingConstraint | InvariantKind::HiddenConstraint
        )
    }

    /// The error of a quantity of this kind at value `v`, initial value `v0`:
    /// relative for the energy (absolute when `v0 = 0`), the residual for
    /// constraints, the deviation otherwise.
    pub fn error(self, v: f64, v0: f64) -> f64 {
        match self {
            InvariantKind::Energy | InvariantKind::ForcedEnergy if v0 != 0.0 => ((v - v0) / v0).abs(),
            k if k.is_residual() => v.abs(),
            _ => (v - v0).abs(),
        }
    }
}
