//! What a user sees when a derive goes wrong: one clear error at the right place.
//!
//! Refresh the expected output with `TRYBUILD=overwrite cargo test -p hamel-macros
//! --test compile_fail` and review the `.stderr` files.
//!
//! The test lives in this crate, not in `hamel`'s, because trybuild builds its
//! cases in a crate of its own with the testing package's dev-dependencies:
//! `hamel`'s (the JIT, criterion, proptest) doubled the test's time in CI.

#[test]
fn derive_errors() {
    // trybuild compiles the cases in its own crate; model paths stay relative
    // to the repository's root (`models/`, and `tests/ui/models/`, which the
    // CLI's tests read too).
    std::env::set_var("HAMEL_MANIFEST_DIR", concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
