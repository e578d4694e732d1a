//! Each pass on its own, against the system it started from: at random
//! points, with the eliminated unknowns given their values, the original
//! residual's rows are the reduced rows plus zeros (compared through the sum
//! of squares and row by row where the order is known), and the update and
//! work agree. And the band a chain gets does not grow with its length.

use std::cell::Cell;

use super::band::permutations;
use super::{band, blocks, explicit, linear, Eliminated};
use crate::scheme::step::StepSystem;
use crate::scheme::Scheme;
use crate::sym::{Graph, Id, Node};

thread_local! {
    static DISABLED: Cell<bool> = const { Cell::new(false) };
}

/// Whether [`super::run`] is switched off on this thread (tests only).
pub(super) fn disabled() -> bool {
    DISABLED.with(Cell::get)
}

/// The step system of `scheme` for the model file `name` (in `models/`),
/// in increment form, before any reduction (its Jacobian derived).
fn unreduced(name: &str, sizes: &[(String, i64)], scheme: &str) -> StepSystem {
    let path = format!("{}/../models/{name}.hamel", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).unwrap();
    let model = crate::model::load_with_sizes(&path, &src, sizes).unwrap();
    DISABLED.with(|d| d.set(true));
    let sys = Scheme::from_names(scheme, None).unwrap().derive(&model);
    DISABLED.with(|d| d.set(false));
    sys.unwrap()
}

/// Symbol number of a symbol node.
fn sym(g: &Graph, id: Id) -> u32 {
    match g.node(id) {
        Node::Sym(s) => *s,
        _ => panic!("not a symbol"),
    }
}

/// Evaluates `before` and `after` (the same system before and after a pass
/// that eliminated `gone`) at `points` random points; returns the largest
/// relative difference of the residuals' sums of squares, of the updates
/// and of the work, and the largest eliminated-row value seen (via the sum).
fn compare(before: &StepSystem, after: &StepSystem, gone: &[Eliminated], points: u64) -> f64 {
    let g = &after.graph;
    let mut worst = 0.0f64;
    for seed in 1..=points {
        let mut next = crate::scheme::invariants::sample_points(seed * 7919, 0.2);
        let mut val: std::collections::HashMap<u32, f64> = Default::default();
        for (s, p) in &before.params {
            val.insert(sym(g, s.sym), *p);
        }
        val.insert(sym(g, before.h), 0.05);
        for s in before.state.iter().chain(&before.exogenous).chain(&after.unknowns) {
            val.insert(sym(g, s.sym), next());
        }
        // Later eliminations are written in fewer unknowns: evaluate them first.
        for &(x, value) in gone.iter().rev() {
            let v = g.eval(value, &|s| val.get(&s).copied().unwrap_or(f64::NAN));
            val.insert(sym(g, x), v);
        }
        let eval = |e: Id| g.eval(e, &|s| val.get(&s).copied().unwrap_or(f64::NAN));
        let sum2 = |rows: &[Id]| rows.iter().map(|&r| eval(r).powi(2)).sum::<f64>();
        let (a, b) = (sum2(&before.residual), sum2(&after.residual));
        assert!(a.is_finite() && b.is_finite(), "residuals finite at the test points");
        worst = worst.max((a - b).abs() / (1.0 + a.abs()));
        for (&u0, &u1) in before.update.iter().zip(&after.update) {
            let (x, y) = (eval(u0), eval(u1));
            worst = worst.max((x - y).abs() / (1.0 + x.abs()));
        }
        if let (Some(w0), Some(w1)) = (before.work, after.work) {
            worst = worst.max((eval(w0) - eval(w1)).abs());
        }
    }
    worst
}

#[test]
fn explicit_elimination_keeps_the_solutions() {
    // The sphere's averaged step: the momentum rows give ξ⁺ explicitly.
    for (name, scheme) in [
        ("spherical_pendulum", "hamel_averaged"),
        ("spherical_pendulum", "hamel_midpoint"),
        ("torque_driven_spherical_pendulum", "hamel_averaged"),
        ("double_spherical_pendulum_cartesian", "energy_momentum"),
    ] {
        let before = unreduced(name, &[], scheme);
        let mut after = before.clone();
        let gone = explicit::run(&mut after);
        assert!(!gone.is_empty(), "{name} {scheme}: something is explicit");
        assert_eq!(
            before.unknowns.len() - gone.len(),
            after.unknowns.len(),
            "{name} {scheme}: one unknown per row"
        );
        assert_eq!(after.residual.len(), after.unknowns.len());
        let d = compare(&before, &after, &gone, 5);
        assert!(d < 1e-12, "{name} {scheme}: reduced system differs by {d:e}");
    }
}

#[test]
fn block_elimination_keeps_the_solutions() {
    // The director pendulum's kinematic rows are a Cayley transform, linear
    // in e⁺ with a coefficient I + O(h).
    let before = unreduced("spherical_pendulum_director", &[], "hamel_averaged");
    let mut after = before.clone();
    let gone = blocks::run(&mut after);
    assert!(!gone.is_empty(), "the kinematic block is eliminated");
    assert_eq!(after.residual.len(), after.unknowns.len());
    let d = compare(&before, &after, &gone, 5);
    assert!(d < 1e-12, "reduced system differs by {d:e}");
}

#[test]
fn linear_elimination_keeps_the_solutions_and_the_jacobian() {
    // RATTLE's velocity multipliers: G(q₁) M⁻¹ p₁(λ, μ) = 0 is linear in μ
    // with the symmetric G M⁻¹ Gᵀ, and the position rows do not read μ.
    let before = unreduced("spherical_chain_cartesian", &[("N".into(), 8)], "rattle");
    let mut after = before.clone();
    let gone = linear::run(&mut after);
    assert_eq!(gone.len(), 8, "the eight velocity multipliers leave");
    assert!(after.unknowns.iter().all(|s| s.name.starts_with("lambda")));
    assert_eq!(after.residual.len(), after.unknowns.len());
    let d = compare(&before, &after, &gone, 5);
    assert!(d < 1e-12, "reduced system differs by {d:e}");
    // The Jacobian it kept is the one derived anew.
    let kept = after.jacobian.clone();
    after.finish_jacobian();
    assert_eq!(kept, after.jacobian);
    // Small blocks stay (the double pendulum's two μ).
    let mut small = unreduced("double_spherical_pendulum_cartesian", &[], "rattle");
    assert!(linear::run(&mut small).is_empty());
}

#[test]
fn band_ordering_permutes_and_does_not_grow_with_the_chain() {
    let band_of = |n: i64| {
        let mut sys = unreduced("spherical_chain_cartesian", &[("N".into(), n)], "rattle");
        let before = sys.clone();
        band::run(&mut sys);
        // A permutation of rows and unknowns together: same sums (up to the
        // order of summation), same update.
        assert!(compare(&before, &sys, &[], 3) < 1e-14);
        let mut a: Vec<String> = before.unknowns.iter().map(|s| s.name.clone()).collect();
        let mut b: Vec<String> = sys.unknowns.iter().map(|s| s.name.clone()).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b);
        sys.band
    };
    let (b16, b32) = (band_of(16), band_of(32));
    eprintln!("bands: N = 16 {b16:?}, N = 32 {b32:?}");
    assert!(b16.is_some(), "the 16-link chain is banded");
    assert_eq!(b16, b32, "the band does not grow with N");
}

#[test]
fn a_director_chain_is_ordered_link_by_link() {
    let mut sys = unreduced("spherical_chain", &[("N".into(), 16)], "hamel");
    super::run(&mut sys);
    assert_eq!(sys.unknowns.len(), 160, "the tableau: 10 unknowns a link");
    // The multiplier of link i is `nu{i-1}`; every other unknown names its link.
    let link = |name: &str| -> usize {
        match name.strip_prefix("nu") {
            Some(j) => j.parse::<usize>().unwrap() + 1,
            None => name[name.find('[').unwrap() + 1..name.find(']').unwrap()]
                .parse()
                .unwrap(),
        }
    };
    let links: Vec<usize> = sys.unknowns.iter().map(|u| link(&u.name)).collect();
    let expected: Vec<usize> = (1..=16).flat_map(|i| [i; 10]).collect();
    assert_eq!(links, expected, "each link's unknowns together, from the pivot out");
    let band = sys.band.expect("banded");
    assert!(band.0 + band.1 <= 20, "band {band:?}");
}

#[test]
fn the_kinds_of_a_link_are_tried_in_every_order() {
    let mut all = permutations(4);
    assert_eq!(all.len(), 24);
    for p in &all {
        let mut q = p.clone();
        q.sort_unstable();
        assert_eq!(q, [0, 1, 2, 3], "{p:?} is a permutation");
    }
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 24, "no order twice");
}
