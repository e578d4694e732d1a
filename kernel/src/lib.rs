//! The evaluation core every hamel back-end shares: register programs
//! ([`program`]), their interpreter in `f64` or double-double ([`dd`]), the
//! elementary functions ([`func`]), how long programs are cut into parts
//! ([`partition`]), programs that repeat per member of a family run as a
//! loop ([`rolled`]), a sparse LU written out as its steps ([`lu_plan`]),
//! which numbers a parameter may hold ([`value`]), and the typed words the
//! crates share about a step ([`vocabulary`]). It knows nothing of Rust tokens or of machine code: the
//! compiler writes programs, the Rust printer, the interpreter and the JIT
//! read them.

#![warn(missing_docs)]

pub mod bytes;
pub mod dd;
pub mod func;
pub mod hash;
pub mod lu_plan;
pub mod partition;
pub mod program;
pub mod rolled;
pub mod value;
pub mod vocabulary;

pub use dd::Dd;
pub use func::Func;
pub use lu_plan::{LuPlan, LuStep};
pub use partition::{Outputs, Partition};
pub use program::{Instr, Program, Value};
pub use rolled::Rolled;
pub use vocabulary::{Arg, Exogenous, InvariantKind, Kernel, PATTERN_MIN};
