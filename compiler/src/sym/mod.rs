//! The symbolic core: a hash-consed expression DAG, simplification on
//! construction, exact differentiation, and linearization into straight-line
//! programs. It knows nothing of mechanics or of Rust tokens.

pub mod applied;
pub mod diff;
pub mod function;
pub mod graph;
pub mod linsolve;
pub mod tangent;
pub mod tape;
pub mod vector;

pub use applied::{restage, saddle_product, Applied};
pub use diff::{affine_in, directional, gradient, hessian, jacobian, symmetric_jacobian, Differentiator};
pub use function::Function;
pub use graph::{Func, Graph, Id, Node, SubstMap, Through};
pub use tangent::Point;
pub use tape::{Op, Operand, Tape};
