//! The model-file language: grammar, syntax tree and parser.

pub mod ast;
pub mod parser;

pub use parser::parse;
