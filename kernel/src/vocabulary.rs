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

/// A kernel of a compiled step: a function every back-end evaluates (the
/// interpreter and the JIT by this name, the derive as a generated function).
/// The compiler builds them; hosts call them by this type, never by a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kernel {
    /// the step's residual `r(x; z, e)`
    Residual,
    /// residual and its Jacobian in the unknowns, in one pass
    ResidualJacobian,
    /// the state update `z' − z` from the solved unknowns
    Increment,
    /// the predictor of the unknowns from the previous step's
    Predict,
    /// the linear system that recovers the physical state from `z`
    ObserveSystem,
    /// the physical state `(q, v)` from `z` and that system's solution
    Physical,
    /// energy, monitored quantities and constraint residuals at `(q, v)`
    Invariants,
    /// the scheme's state (and first unknowns) from a physical state
    InitState,
    /// the parts of the step's Jacobian `∂z'/∂z`
    SensitivityParts,
    /// the parts of the step's input Jacobian `∂z'/∂u`
    InputSensitivityParts,
    /// the discrete work of the external forces over the step
    Work,
    /// the model's `let` values at a physical state
    Lets,
    /// the constrained kinetic metric `[[M, Aᵀ], [A, 0]]` at a physical
    /// state, applied to a direction ([`Arg::U`]): a host forms the matrix
    /// a column at a time
    Metric,
    /// the frame's matrix stacked on the velocity constraint rows
    FrameCheck,
    /// the model's initial state number `i`, in file order
    Initial(usize),
}

impl Kernel {
    /// The kernel's name in generated code and messages (`residual`,
    /// `initial_0`, …).
    pub fn symbol(self) -> String {
        match self {
            Kernel::Initial(i) => format!("initial_{i}"),
            k => k.fixed_symbol().to_string(),
        }
    }

    fn fixed_symbol(self) -> &'static str {
        match self {
            Kernel::Residual => "residual",
            Kernel::ResidualJacobian => "residual_jacobian",
            Kernel::Increment => "increment",
            Kernel::Predict => "predict",
            Kernel::ObserveSystem => "observe_system",
            Kernel::Physical => "physical",
            Kernel::Invariants => "invariants",
            Kernel::InitState => "init_state",
            Kernel::SensitivityParts => "sensitivity_parts",
            Kernel::InputSensitivityParts => "input_sensitivity_parts",
            Kernel::Work => "work",
            Kernel::Lets => "lets",
            Kernel::Metric => "metric",
            Kernel::FrameCheck => "frame_check",
            Kernel::Initial(_) => "initial",
        }
    }

    /// Whether the kernel runs at every Newton iteration (the step's hot
    /// path: emitted with instruction-set copies, evaluated compensated).
    pub fn is_hot(self) -> bool {
        matches!(self, Kernel::Residual | Kernel::ResidualJacobian | Kernel::Increment)
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.symbol())
    }
}

/// An argument array a kernel reads. A kernel declares which it reads and in
/// which order; a host provides the values of each. A new kind of input is
/// one more variant, not a new signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arg {
    /// parameter values
    P,
    /// step size
    H,
    /// the scheme's state
    Z,
    /// the unknowns of the step
    X,
    /// the previous step's unknowns (predictor input)
    W,
    /// physical coordinates
    Q,
    /// physical velocities
    V,
    /// solution of the observation system
    Y,
    /// the step's exogenous data `e = (t_k, u_k)`
    E,
    /// the time of a physical state, one value: read by the kernels that
    /// evaluate a rheonomic model (one whose Lagrangian or constraints
    /// depend on `t`) away from a step, such as its invariants
    T,
    /// a direction that a linear kernel is applied to (the kinetic
    /// metric's: its product with `u`, one column of it for a unit `u`)
    U,
}

impl Arg {
    /// How many kinds of argument there are.
    pub const COUNT: usize = 11;

    /// The argument's name in generated code (`p`, `h`, `z`, …).
    pub fn name(self) -> &'static str {
        match self {
            Arg::P => "p",
            Arg::H => "h",
            Arg::Z => "z",
            Arg::X => "x",
            Arg::W => "w",
            Arg::Q => "q",
            Arg::V => "v",
            Arg::Y => "y",
            Arg::E => "e",
            Arg::T => "t",
            Arg::U => "u",
        }
    }
}

impl std::fmt::Display for Arg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The layout of the exogenous data `e` a forced step reads (argument
/// [`Arg::E`]): the time `t_k` at the step's start, then the inputs `u_k`
/// held over the step. A free model reads none (length 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exogenous {
    /// number of input components
    pub inputs: usize,
}

impl Exogenous {
    /// Index of the time `t_k`.
    pub const TIME: usize = 0;

    /// The layout of data of length `len` (0 for a free model).
    pub fn of_len(len: usize) -> Exogenous {
        Exogenous {
            inputs: len.saturating_sub(1),
        }
    }

    /// Where the inputs sit (an empty range, valid in any data, without inputs).
    pub fn input_range(self) -> std::ops::Range<usize> {
        if self.inputs == 0 {
            return 0..0;
        }
        Exogenous::TIME + 1..Exogenous::TIME + 1 + self.inputs
    }

    /// Length of the data of a forced step (time and inputs).
    pub fn len(self) -> usize {
        1 + self.inputs
    }

    /// Whether the step reads no inputs (it still reads the time).
    pub fn is_empty(self) -> bool {
        self.inputs == 0
    }
}

/// The runtime's banded LU pivots with this threshold: the first row, in
/// order, whose magnitude is at least this share of its column's largest.
/// The compiler's band ordering simulates that LU to choose between orders
/// (its pass `band`), so both read it here.
pub const PIVOT_THRESHOLD: f64 = 0.1;

/// The runtime's banded LU replays its operations on the structural
/// non-zeros only where they are at most this share of the banded LU's
/// updates (indexed updates cost about twice its contiguous ones); else it
/// runs the banded LU whole. The compiler's band ordering weighs orders by
/// the same rule.
pub const REPLAY_SHARE: f64 = 0.4;

/// Steps of at least this many unknowns with a banded Jacobian write it as
/// the values of its pattern (`Kernels::residual_jacobian_pattern` in
/// `hamel-runtime`) where their kernels can, whatever their sizes: the whole
/// `n × n` matrix costs `n²` stores per factorization (zeroing it was 43 % of
/// the derived 32-link director chain's step), of which the band's LU reads
/// a few per row. Measured on derived director chains (h = 1e-3, 2000-step
/// runs, the two builds alternated): 320 unknowns 59–62 → 36–38 µs, 160
/// unknowns 21.7–25.2 → 19.5–19.9 µs, but 80 unknowns 7.4–8.5 → 9.8–10.1 µs;
/// smaller steps keep their Jacobian whole.
pub const PATTERN_MIN: usize = 128;
