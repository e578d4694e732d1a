//! `Scheme::applies` decides, without deriving, what `Scheme::derive`
//! decides: the same verdict and the same message for every scheme on every
//! model in `models/` (the gallery included), and in a fraction of the time.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hamel_compiler::scheme::Scheme;

fn model_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            model_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "hamel") {
            out.push(path);
        }
    }
}

#[test]
fn applies_agrees_with_derive_on_every_model_and_is_cheaper() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let mut files = Vec::new();
    model_files(&root, &mut files);
    files.sort();
    assert!(files.len() >= 20, "{} model files", files.len());
    let (mut checking, mut deriving) = (Duration::ZERO, Duration::ZERO);
    let (mut apply, mut refused) = (0, 0);
    for file in &files {
        let src = std::fs::read_to_string(file).unwrap();
        let model = hamel_compiler::model::load(&file.display().to_string(), &src).unwrap();
        for scheme in Scheme::LIST {
            let t0 = Instant::now();
            let quick = scheme.applies(&model);
            checking += t0.elapsed();
            let t0 = Instant::now();
            let full = scheme.derive(&model).map(|_| ());
            deriving += t0.elapsed();
            assert_eq!(quick, full, "{} with {}", file.display(), scheme.name());
            if full.is_ok() {
                apply += 1;
            } else {
                refused += 1;
            }
        }
    }
    eprintln!(
        "{} models × {} schemes: {apply} apply, {refused} refused; checks {:.1} ms, derivations {:.1} ms",
        files.len(),
        Scheme::LIST.len(),
        checking.as_secs_f64() * 1e3,
        deriving.as_secs_f64() * 1e3
    );
    assert!(apply > 0 && refused > 0);
    assert!(checking * 3 < deriving, "checks {checking:?}, derivations {deriving:?}");
}

#[test]
fn every_model_file_has_a_default_scheme_and_it_is_hamel_wherever_hamel_applies() {
    // What a newcomer meets first: `hamel simulate model.hamel` with no
    // scheme named. Every model we ship runs; `hamel` where it applies, and
    // where it does not (holonomic constraints in Cartesian coordinates) the
    // first fallback that applies, with hamel's own reason kept to tell.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let mut files = Vec::new();
    model_files(&root, &mut files);
    files.sort();
    let mut fell_back = 0;
    for file in &files {
        let src = std::fs::read_to_string(file).unwrap();
        let model = hamel_compiler::model::load(&file.display().to_string(), &src).unwrap();
        let hamel = Scheme::LIST[0];
        let (scheme, why) = Scheme::default_for(&model).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        match hamel.applies(&model) {
            Ok(()) => assert_eq!((scheme, why), (hamel, None), "{}", file.display()),
            Err(reason) => {
                fell_back += 1;
                assert_eq!(why, Some(reason), "{}", file.display());
                let first = Scheme::FALLBACKS.into_iter().find(|s| s.applies(&model).is_ok());
                assert_eq!(Some(scheme), first, "{}", file.display());
            }
        }
    }
    // The Cartesian chain, sphere and double pendulum, the gallery's beads
    // and particles on surfaces: at least these fall back.
    assert!(fell_back >= 6, "{fell_back} models fell back");
}

#[test]
fn applies_agrees_with_derive_on_the_forms_schemes_refuse() {
    for src in [
        // a frame (rattle, energy_momentum and stormer_verlet refuse it)
        "model s { parameters { m = 1 } coordinates { gamma: vec3 } velocities { xi: vec3 }
            frame { gamma' = cross(gamma, xi) } lagrangian = 0.5 * m * dot(xi, xi) - gamma[2] }",
        // holonomic constraints with a non-constant mass matrix
        "model a { coordinates { th, ph } lagrangian = th'^2 + sin(th)^2 * ph'^2 holonomic th^2 + ph^2 = 1 }",
        // terms linear in the velocities
        "model y { coordinates { x: vec3 } lagrangian = 0.5 * dot(x', x') + x[0] * x'[1] holonomic norm2(x) = 1 }",
        // a Lagrangian not quadratic in the velocities (hamel_midpoint refuses it)
        "model k { coordinates { q } lagrangian = q'^4 / 4 + q'^2 / 2 - q^2 / 2 }",
        // a velocity constraint (stormer_verlet, rattle, energy_momentum refuse it)
        "model c { coordinates { x, y, th } lagrangian = 0.5 * (x'^2 + y'^2 + th'^2)
            constraint sin(th) * x' - cos(th) * y' = 0 }",
    ] {
        let model = hamel_compiler::load("models/x.hamel", src).unwrap();
        for scheme in Scheme::LIST {
            let full = scheme.derive(&model).map(|_| ());
            assert_eq!(scheme.applies(&model), full, "{src} with {}", scheme.name());
        }
    }
}
