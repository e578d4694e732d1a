//! What a user sees when a derive goes wrong: one clear error at the right place.
//!
//! Refresh the expected output with `TRYBUILD=overwrite cargo test --test compile_fail`
//! and review the `.stderr` files.

#[test]
fn derive_errors() {
    // trybuild compiles the cases in its own crate; model paths stay relative to ours.
    std::env::set_var("HAMEL_MANIFEST_DIR", env!("CARGO_MANIFEST_DIR"));
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
