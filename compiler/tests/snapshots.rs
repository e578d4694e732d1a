//! Snapshots of the spherical pendulum's averaged Hamel residual: its register
//! program (the one evaluation order) and the Rust printed from it, so that a
//! change of evaluation order or of emitted code shows in review.
//!
//! After an intended change: `UPDATE_EXPECT=1 cargo test -p hamel-compiler --test snapshots`.

use expect_test::expect_file;
use hamel_compiler::emit::{program, rust};
use hamel_compiler::scheme::Scheme;

fn residual() -> (hamel_compiler::sym::Graph, hamel_compiler::sym::Function) {
    let src = include_str!("../../models/spherical_pendulum.hamel");
    let model = hamel_compiler::load("spherical_pendulum.hamel", src).unwrap();
    let sys = Scheme::Hamel(hamel_compiler::scheme::Kinematics::Averaged)
        .derive(&model)
        .unwrap();
    let f = sys
        .functions()
        .into_iter()
        .find(|f| f.name == hamel_kernel::Kernel::Residual)
        .unwrap();
    (sys.graph.clone(), f)
}

#[test]
fn sphere_residual_program() {
    let (mut g, f) = residual();
    let prog = program::lower(&f.tape(&mut g).unwrap());
    expect_file!["snapshots/sphere_residual.program"].assert_eq(&prog.to_string());
}

#[test]
fn sphere_residual_rust() {
    let (mut g, f) = residual();
    let (f64_fn, _) = rust::function(&mut g, &f, rust::Role::Step, &|_| None).unwrap();
    let dd_fn = rust::function_dd(&mut g, &f, &[hamel_kernel::Arg::Z]).unwrap().unwrap();
    let file: syn::File = syn::parse2(quote::quote!(#f64_fn #dd_fn)).unwrap();
    expect_file!["snapshots/sphere_residual.rs.txt"].assert_eq(&prettyplease::unparse(&file));
}
