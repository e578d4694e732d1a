//! The size guard (`hamel_compiler::cost`) probes a large size's derivation
//! time before deriving; a model the cache already holds at that size skips
//! the probe. Its own test binary: it sets environment variables.

use std::path::Path;

use hamel_load::{compile_cached, read_model, read_model_for, Backend, Cache, Scheme};

#[test]
fn a_size_the_cache_holds_skips_the_guard() {
    let dir = std::env::temp_dir().join(format!("hamel-cache-guard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // This test binary runs this one test: no other thread reads them.
    std::env::set_var("HAMEL_CACHE_DIR", &dir);
    // A limit no probe meets: every size above the guard's threshold is refused.
    std::env::set_var("HAMEL_MAX_DERIVE_SECONDS", "1e-9");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/spherical_chain_cartesian.hamel");
    let sizes = [("N".to_string(), 20)];
    let refused = read_model(&path, &sizes).unwrap_err().to_string();
    assert!(refused.contains("deriving the model would take"), "{refused}");
    // Derive it once (the model read without the guard), keeping it in the cache.
    let src = std::fs::read_to_string(&path).unwrap();
    let model = hamel_compiler::model::load_with_sizes("chain", &src, &sizes).unwrap();
    compile_cached(&model, Scheme::Rattle, Backend::Interpreter, Some(&Cache::at(&dir))).unwrap();
    // Now the same file at the same size is read at once, and runs.
    let model = read_model(&path, &sizes).unwrap();
    assert_eq!(model.coords.len(), 60);
    // A host that names its schemes is guarded per scheme: the one the
    // cache holds is read, not probed; another is still refused, with its
    // own estimate.
    let cache = Cache::at(&dir);
    let (_, estimates) = read_model_for(&path, &sizes, &[Scheme::Rattle], Some(&cache)).unwrap();
    assert!(estimates.is_empty());
    let refused = read_model_for(&path, &sizes, &[Scheme::Rattle, Scheme::EnergyMomentum], Some(&cache))
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("deriving the model would take") && refused.contains("at N = 20 for energy_momentum"),
        "{refused}"
    );
    assert!(!refused.contains("rattle"), "{refused}");
    let _ = std::fs::remove_dir_all(&dir);
}
