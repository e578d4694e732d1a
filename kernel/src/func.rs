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
}

impl Func {
    /// Every function, in declaration order.
    pub const ALL: [Func; 5] = [Func::Sin, Func::Cos, Func::Tan, Func::Exp, Func::Ln];

    /// Applies the function to a number, with Rust's `f64` method of the same
    /// name: every back-end calls exactly this, so results agree to the bit.
    pub fn apply(self, x: f64) -> f64 {
        match self {
            Func::Sin => x.sin(),
            Func::Cos => x.cos(),
            Func::Tan => x.tan(),
            Func::Exp => x.exp(),
            Func::Ln => x.ln(),
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
        }
    }
}
