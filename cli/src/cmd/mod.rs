//! One module per `hamel` command.

pub mod case;
pub mod check;
pub mod compare;
pub mod patterns;
pub mod report;
pub mod simulate;
pub mod sweep;
