//! The elementary functions model files may call.

/// Elementary functions of one argument (square root is a power `x^0.5`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Func {
    /// sine
    Sin,
    /// cosine
    Cos,
    /// tangent
    Tan,
    /// exponential
    Exp,
    /// natural logarithm
    Ln,
    /// inverse sine (principal value, in [−π/2, π/2])
    Asin,
    /// inverse cosine (principal value, in [0, π])
    Acos,
    /// inverse tangent (in (−π/2, π/2))
    Atan,
    /// hyperbolic sine
    Sinh,
    /// hyperbolic cosine
    Cosh,
    /// hyperbolic tangent
    Tanh,
}

impl Func {
    /// Every function, in declaration order.
    pub const ALL: [Func; 11] = [
        Func::Sin,
        Func::Cos,
        Func::Tan,
        Func::Exp,
        Func::Ln,
        Func::Asin,
        Func::Acos,
        Func::Atan,
        Func::Sinh,
        Func::Cosh,
        Func::Tanh,
    ];

    /// Applies the function to a number, with Rust's `f64` method of the same
    /// name: every back-end calls exactly this, so results agree to the bit.
    pub fn apply(self, x: f64) -> f64 {
        match self {
            Func::Sin => x.sin(),
            Func::Cos => x.cos(),
            Func::Tan => x.tan(),
            Func::Exp => x.exp(),
            Func::Ln => x.ln(),
            Func::Asin => x.asin(),
            Func::Acos => x.acos(),
            Func::Atan => x.atan(),
            Func::Sinh => x.sinh(),
            Func::Cosh => x.cosh(),
            Func::Tanh => x.tanh(),
        }
    }

    /// The function's name as written in model files (`ln` for the logarithm).
    pub fn name(self) -> &'static str {
        match self {
            Func::Sin => "sin",
            Func::Cos => "cos",
            Func::Tan => "tan",
            Func::Exp => "exp",
            Func::Ln => "ln",
            Func::Asin => "asin",
            Func::Acos => "acos",
            Func::Atan => "atan",
            Func::Sinh => "sinh",
            Func::Cosh => "cosh",
            Func::Tanh => "tanh",
        }
    }
}
