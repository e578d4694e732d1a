//! Kept derivations and machine code (`hamel_load::Cache`): a run from the
//! cache is the run without it, to the bit; the cache is really read; an
//! entry that was damaged is derived again and replaced; another model, size
//! or scheme never reads an entry it did not write.

use std::path::{Path, PathBuf};

use hamel_load::{compile, compile_cached, read_model, run, Backend, Cache, Run, RunOptions, Scheme, System};

fn chain(n: i64) -> hamel_load::Model {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/spherical_chain_cartesian.hamel");
    read_model(&path, &[("N".into(), n)]).unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hamel-cache-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn steps(sys: &System) -> Run {
    let opt = RunOptions {
        h: 1e-3,
        steps: 200,
        compensated: false,
        record_every: 50,
        inputs: None,
        newton: Default::default(),
    };
    run(sys, sys.initial("tilted").unwrap(), None, &opt).unwrap()
}

fn bits(r: &Run) -> Vec<u64> {
    r.q.iter().chain(&r.v).flatten().map(|x| x.to_bits()).collect()
}

fn entries(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    found.retain(|p| p.extension().is_some_and(|e| e == ext));
    found.sort();
    found
}

#[test]
fn a_run_from_the_cache_is_the_run_without_it() {
    let dir = tmp("same");
    let cache = Cache::at(&dir);
    let model = chain(4);
    for backend in [Backend::Jit, Backend::Interpreter] {
        let fresh = steps(&compile(&model, Scheme::Rattle, backend).unwrap());
        let first = steps(&compile_cached(&model, Scheme::Rattle, backend, Some(&cache)).unwrap());
        let again = steps(&compile_cached(&model, Scheme::Rattle, backend, Some(&cache)).unwrap());
        assert_eq!(bits(&first), bits(&fresh), "{backend:?}, first run");
        assert_eq!(bits(&again), bits(&fresh), "{backend:?}, from the cache");
    }
    assert_eq!(entries(&dir, "step").len(), 1, "one derivation kept");
    assert_eq!(entries(&dir, "code").len(), 1, "one machine code kept");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_kept_derivation_is_what_is_read() {
    // Put the 3-link chain's derivation where the 4-link chain's is kept:
    // a cache that is read then yields a 3-link system.
    let dir = tmp("read");
    let cache = Cache::at(&dir);
    let (four, three) = (chain(4), chain(3));
    compile_cached(&four, Scheme::Rattle, Backend::Interpreter, Some(&cache)).unwrap();
    let four_entry = entries(&dir, "step").pop().unwrap();
    compile_cached(&three, Scheme::Rattle, Backend::Interpreter, Some(&cache)).unwrap();
    let three_entry = entries(&dir, "step").into_iter().find(|p| *p != four_entry).unwrap();
    std::fs::copy(&three_entry, &four_entry).unwrap();
    let sys = compile_cached(&four, Scheme::Rattle, Backend::Interpreter, Some(&cache)).unwrap();
    assert_eq!(
        sys.compiled().coordinates.len(),
        9,
        "the 3-link chain's 9 coordinates were read"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_entry_is_derived_again_and_replaced() {
    let dir = tmp("damaged");
    let cache = Cache::at(&dir);
    let model = chain(4);
    let fresh = bits(&steps(&compile(&model, Scheme::Rattle, Backend::Jit).unwrap()));
    compile_cached(&model, Scheme::Rattle, Backend::Jit, Some(&cache)).unwrap();
    let (step, code) = (
        entries(&dir, "step").pop().unwrap(),
        entries(&dir, "code").pop().unwrap(),
    );
    let (step_bytes, code_bytes) = (std::fs::read(&step).unwrap(), std::fs::read(&code).unwrap());
    // Machine code with one bit flipped in the middle of an instruction
    // stream, and a derivation cut in half.
    let mut flipped = code_bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x10;
    std::fs::write(&code, &flipped).unwrap();
    std::fs::write(&step, &step_bytes[..step_bytes.len() / 2]).unwrap();
    let sys = compile_cached(&model, Scheme::Rattle, Backend::Jit, Some(&cache)).unwrap();
    assert_eq!(bits(&steps(&sys)), fresh);
    assert_eq!(std::fs::read(&step).unwrap(), step_bytes, "derivation replaced");
    assert_eq!(std::fs::read(&code).unwrap(), code_bytes, "machine code replaced");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn another_model_size_or_scheme_has_its_own_entry() {
    let dir = tmp("keys");
    let cache = Cache::at(&dir);
    let model = chain(3);
    compile_cached(&model, Scheme::Rattle, Backend::Interpreter, Some(&cache)).unwrap();
    compile_cached(&model, Scheme::EnergyMomentum, Backend::Interpreter, Some(&cache)).unwrap();
    compile_cached(&chain(2), Scheme::Rattle, Backend::Interpreter, Some(&cache)).unwrap();
    // The same text with one parameter's default changed is another model.
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/spherical_chain_cartesian.hamel"),
    )
    .unwrap();
    let changed = src.replacen("g = 9.81", "g = 9.80", 1);
    assert_ne!(changed, src, "the chain has a parameter g = 9.81");
    let other = hamel_load::load_source("chain.hamel", &changed, &[("N".into(), 3)]).unwrap();
    let sys = compile_cached(&other, Scheme::Rattle, Backend::Interpreter, Some(&cache)).unwrap();
    assert_eq!(sys.parameter("g"), Some(9.80));
    assert_eq!(entries(&dir, "step").len(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}
