//! The evaluation core every hamel back-end shares: register programs
//! ([`program`]), their interpreter in `f64` or double-double ([`dd`]), and the
//! elementary functions ([`func`]), and the typed words the crates share about
//! a step ([`vocabulary`]). It knows nothing of Rust tokens or of machine
//! code: the compiler writes programs, the Rust printer, the interpreter and
//! the JIT read them.

#![warn(missing_docs)]

pub mod dd;
pub mod func;
pub mod program;
pub mod vocabulary;

pub use dd::Dd;
pub use func::Func;
pub use program::{Instr, Program, Value};
pub use vocabulary::InvariantKind;
