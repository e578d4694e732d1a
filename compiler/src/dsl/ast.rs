//! The syntax tree of a model file, with a span on every node for errors.

use crate::diagnostic::Span;

/// A name with its place in the file; in declarations it may carry a family
/// index, as in `e[i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Name {
    /// the identifier
    pub text: String,
    /// where it was written
    pub span: Span,
    /// family index (an integer expression), for `name[index]`
    pub index: Option<Box<Expr>>,
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `^`
    Pow,
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// what it is
    pub kind: ExprKind,
    /// where it was written
    pub span: Span,
}

/// The kinds of expression.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// a number literal
    Number(f64),
    /// a name: parameter, coordinate, velocity or `let` binding
    Name(String),
    /// `e'`: the time derivative of a coordinate (identity frame only)
    Prime(Box<Expr>),
    /// `e[i]`: component of a vector, or member of an indexed family
    Index(Box<Expr>, Box<Expr>),
    /// `sum(i in a..=b: e)`
    Sum {
        /// the summation index
        var: Name,
        /// first value
        from: Box<Expr>,
        /// last value (inclusive)
        to: Box<Expr>,
        /// the summand
        body: Box<Expr>,
    },
    /// `-e`
    Neg(Box<Expr>),
    /// `a op b`
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `f(a, ...)`
    Call(Name, Vec<Expr>),
    /// `(a, b, c)`: a vector
    Tuple(Vec<Expr>),
}

/// Declared type of a coordinate or velocity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// one real number
    Scalar,
    /// three real numbers
    Vec3,
}

impl Ty {
    /// Number of scalar components.
    pub fn components(self) -> usize {
        match self {
            Ty::Scalar => 1,
            Ty::Vec3 => 3,
        }
    }
}

/// A declaration `name` or `name: vec3`.
#[derive(Clone, Debug, PartialEq)]
pub struct Decl {
    /// declared name
    pub name: Name,
    /// declared type (scalar by default)
    pub ty: Ty,
}

/// `name = expr` (parameters, `let`, invariants, initial values, frame rows).
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    /// left-hand side
    pub name: Name,
    /// right-hand side
    pub value: Expr,
}

/// `lhs = rhs` (constraints).
#[derive(Clone, Debug, PartialEq)]
pub struct Equation {
    /// left-hand side
    pub lhs: Expr,
    /// right-hand side
    pub rhs: Expr,
    /// the whole equation
    pub span: Span,
}

/// A named initial state.
#[derive(Clone, Debug, PartialEq)]
pub struct Initial {
    /// its name
    pub name: Name,
    /// its entries, in order
    pub entries: Vec<InitEntry>,
}

/// An entry of an initial state.
#[derive(Clone, Debug, PartialEq)]
pub enum InitEntry {
    /// `q = value` (a coordinate or velocity)
    Assign(Binding),
    /// `let name = value`, local to the initial state
    Let(Binding),
    /// `for i in a..=b { entries }`
    For {
        /// loop variable
        var: Name,
        /// first value
        from: Expr,
        /// last value (inclusive)
        to: Expr,
        /// repeated entries
        entries: Vec<InitEntry>,
    },
}

/// One item of a model body, in file order.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `size N = 3`: an integer constant that a derive may override
    Size(Binding),
    /// `for i in a..=b { items }`
    For {
        /// the loop variable
        var: Name,
        /// first value
        from: Expr,
        /// last value (inclusive)
        to: Expr,
        /// the items repeated
        items: Vec<(Item, Span)>,
    },
    /// `parameters { m = 1.0, ... }`
    Parameters(Vec<Binding>),
    /// `coordinates { gamma: vec3 }`
    Coordinates(Vec<Decl>),
    /// `velocities { xi: vec3 }`
    Velocities(Vec<Decl>),
    /// `frame { gamma' = cross(gamma, xi) }`
    Frame(Vec<Binding>),
    /// `let a = ...`
    Let(Binding),
    /// `lagrangian = ...`
    Lagrangian(Expr),
    /// `constraint lhs = rhs` (velocity constraint)
    Constraint(Equation),
    /// `holonomic lhs = rhs` (position constraint)
    Holonomic(Equation),
    /// `inputs { u: vec3, tau }`: control inputs, set by the caller at each step
    Inputs(Vec<Decl>),
    /// an external force (`force ...`)
    Force(Force),
    /// `dissipation = R`: a Rayleigh dissipation function of the velocities
    Dissipation(Expr),
    /// `invariant name = ...`
    Invariant(Binding),
    /// `initial name { ... }`
    Initial(Initial),
}

/// An external force statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Force {
    /// `force xi = value`: components dual to a declared velocity (or, without
    /// a frame, to the velocity `q'` of coordinate `q`)
    Generalized(Binding),
    /// `force at point = f`: a spatial force `f` applied at the point `x(q)`
    At(Expr, Expr),
    /// `force at velocity w = f`: a spatial force `f` on a point whose
    /// velocity is `w` (linear in the velocities)
    AtVelocity(Expr, Expr),
}

/// A parsed model file.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelAst {
    /// the model's name
    pub name: Name,
    /// its items, in file order
    pub items: Vec<(Item, Span)>,
}
