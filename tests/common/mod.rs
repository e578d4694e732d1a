//! Integrator structs shared by the integration tests: one macro per family of
//! model parameters, so a test names the model file and scheme only.
//!
//! They derive the baseline kernels only (`simd = false`): the instruction-set
//! copies triple the code rustc compiles for every test, and they give the
//! baseline's bits, which `isa_copies.rs` checks on derives of their own (as
//! does `forbid_unsafe.rs` for their `unsafe`).

/// A struct with the single-pendulum parameters `m, r, g`.
#[macro_export]
macro_rules! pendulum {
    ($name:ident, $($key:ident = $val:literal),*) => {
        #[derive(hamel::Integrator)]
        #[hamel($($key = $val),*, simd = false)]
        pub struct $name {
            pub m: f64,
            pub r: f64,
            pub g: f64,
        }
    };
}

/// A struct with the double-pendulum parameters `m1, m2, l1, l2, g`;
/// `double_pendulum!(with_copies Name, ...)` keeps the derive's default, the
/// instruction-set copies.
#[macro_export]
macro_rules! double_pendulum {
    (with_copies $name:ident, $($key:ident = $val:literal),*) => {
        #[derive(hamel::Integrator)]
        #[hamel($($key = $val),*)]
        pub struct $name {
            pub m1: f64,
            pub m2: f64,
            pub l1: f64,
            pub l2: f64,
            pub g: f64,
        }
    };
    ($name:ident, $($key:ident = $val:literal),*) => {
        $crate::double_pendulum!(with_copies $name, $($key = $val),*, simd = false);
    };
}
