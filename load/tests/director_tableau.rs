//! The director chain's discrete Hamel steps (midpoint and averaged) with
//! their tableau kept (`TableauChoice::Keep`: bob velocities and their
//! adjoint sums as unknowns, a banded Jacobian) against the dense steps
//! (`Substitute`): the same trajectory to round-off, with theory §2.5's
//! invariants (‖e_i‖ = 1 and ⟨ω_i, e_i⟩ = 0 to round-off; energy and J
//! within the same bounds).

use hamel_kernel::Kernel;
use hamel_load::{compile_with, read_model, Backend, System, TableauChoice};
use hamel_runtime::{DynStepper, Kernels};

fn chain(n: i64, tableau: TableauChoice, backend: Backend) -> System {
    chain_of("hamel", n, tableau, backend)
}

/// The chain under `scheme`.
fn chain_of(scheme: &str, n: i64, tableau: TableauChoice, backend: Backend) -> System {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/spherical_chain.hamel");
    let model = read_model(path.as_ref(), &[("N".into(), n)]).unwrap();
    compile_with(&model, scheme.parse().unwrap(), backend, tableau).unwrap()
}

/// Invariants by name: energy, the lengths, J, the constraint residuals.
fn named(sys: &System, z: &hamel_runtime::nalgebra::DVector<f64>, step: u64) -> Vec<(String, f64)> {
    let names = sys.compiled().invariants.iter().map(|(n, _)| n.clone());
    names.zip(sys.invariants(z, step).unwrap()).collect()
}

#[test]
fn the_sparse_step_equals_the_dense_one_to_round_off() {
    for (scheme, n) in ["hamel", "hamel_averaged"]
        .into_iter()
        .flat_map(|s| [2, 3, 8].map(|n| (s, n)))
    {
        let dense = chain_of(scheme, n, TableauChoice::Substitute, Backend::Jit);
        let sparse = chain_of(scheme, n, TableauChoice::Keep, Backend::Jit);
        let per_link = sparse.compiled().unknowns.len() as f64 / n as f64;
        assert_eq!(per_link, 10.0, "{scheme} N = {n}: ω, ν, bob velocity, adjoint per link");
        if n == 8 {
            assert!(sparse.jacobian_band().is_some(), "banded");
        }
        let (mut a, mut b) = (dense.initial("tilted").unwrap(), sparse.initial("tilted").unwrap());
        // The momenta of the midpoint state through the tableau's members
        // (O(N) code) round differently from the expanded ones.
        assert!(
            (&a.z - &b.z).amax() <= 4.0 * f64::EPSILON * a.z.amax(),
            "N = {n}: the same state, {:e} apart",
            (&a.z - &b.z).amax()
        );
        let (mut sa, mut sb) = (
            DynStepper::new(&dense, 0.01).unwrap(),
            DynStepper::new(&sparse, 0.01).unwrap(),
        );
        for k in 0..300 {
            sa.step(&mut a).unwrap();
            sb.step(&mut b).unwrap();
            let scale = a.z.amax();
            assert!(
                (&a.z - &b.z).amax() <= 1e-12 * scale,
                "{scheme} N = {n}, step {k}: {:e}",
                (&a.z - &b.z).amax()
            );
        }
        let (ia, ib) = (named(&dense, &a.z, a.step), named(&sparse, &b.z, b.step));
        for ((name, x), (_, y)) in ia.iter().zip(&ib) {
            assert!(
                (x - y).abs() <= 1e-11 * x.abs().max(1.0),
                "{scheme} N = {n}: {name} {x} against {y}"
            );
            if name.starts_with("length") {
                assert!((y - 1.0).abs() < 1e-13, "{scheme} N = {n}: {name} = {y}");
            }
            if !name.starts_with("length") && name != "energy" && name != "J" {
                assert!(y.abs() < 1e-13, "{scheme} N = {n}: constraint {name} = {y}");
            }
        }
    }
}

/// The derived-code interpreter and the JIT agree to the bit on the
/// sparse step too (its Jacobian is written as its band by the JIT).
#[test]
fn the_sparse_step_is_the_same_in_both_backends() {
    let jit = chain(12, TableauChoice::Keep, Backend::Jit);
    let interp = chain(12, TableauChoice::Keep, Backend::Interpreter);
    let (mut a, mut b) = (jit.initial("tilted").unwrap(), interp.initial("tilted").unwrap());
    let (mut sa, mut sb) = (
        DynStepper::new(&jit, 0.01).unwrap(),
        DynStepper::new(&interp, 0.01).unwrap(),
    );
    for _ in 0..50 {
        sa.step(&mut a).unwrap();
        sb.step(&mut b).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(a.z.as_slice()), bits(b.z.as_slice()), "step {}", a.step);
    }
}

/// `Auto` keeps the tableau of chains from 6 links on (where its Newton
/// matrix is banded), under both kinematics.
#[test]
fn auto_keeps_the_tableau_of_long_chains() {
    for scheme in ["hamel", "hamel_averaged"] {
        let unknowns = |n| {
            let sys = chain_of(scheme, n, TableauChoice::Auto, Backend::Interpreter);
            (sys.compiled().unknowns.len() as i64, sys.jacobian_band().is_some())
        };
        assert_eq!(unknowns(5), (4 * 5, false), "{scheme}");
        assert_eq!(unknowns(6), (10 * 6, true), "{scheme}");
    }
}

/// A step is a function of the state it is handed, whichever stepper takes
/// it: two trajectories of the sparse step interleaved on one stepper go as
/// each alone, to the bit, though the sparse LU keeps its pivots from one
/// factorization to the next (they are part of the state). Long enough, and
/// at a step size large enough, that pivots move.
#[test]
fn interleaved_sparse_trajectories_step_as_each_alone() {
    let sys = chain(16, TableauChoice::Keep, Backend::Jit);
    assert!(sys.jacobian_pattern().is_some(), "a sparse LU");
    let first = sys.initial("tilted").unwrap();
    // The other trajectory: the same chain, each link turned a little.
    let mut second = first.clone();
    for (i, w) in second.z.iter_mut().enumerate() {
        *w *= 1.0 + 1e-3 * (i % 7) as f64;
    }
    let alone = |mut s: hamel_runtime::DynState| {
        let mut st = DynStepper::new(&sys, 0.01).unwrap();
        (0..400)
            .map(|_| {
                st.step(&mut s).unwrap();
                s.z.clone()
            })
            .collect::<Vec<_>>()
    };
    let (a, b) = (alone(first.clone()), alone(second.clone()));
    let mut shared = DynStepper::new(&sys, 0.01).unwrap();
    let (mut x, mut y) = (first, second);
    for k in 0..400 {
        shared.step(&mut x).unwrap();
        shared.step(&mut y).unwrap();
        assert_eq!(x.z, a[k], "first trajectory, step {k}");
        assert_eq!(y.z, b[k], "second trajectory, step {k}");
    }
}

/// The predictor's error is extrapolated by the cubic where it predicted
/// the last step better (systems of 16 unknowns or more): over a long run
/// of the 8-link chain at h = 0.01, Newton takes about two iterations per
/// step in both forms (with the quadratic alone: 2.85 sparse, 2.62 dense,
/// over the same 20 000 steps).
#[test]
fn long_chains_take_about_two_newton_iterations_per_step_at_h_0_01() {
    for (tableau, unknowns) in [(TableauChoice::Keep, 80), (TableauChoice::Substitute, 32)] {
        let sys = chain(8, tableau, Backend::Jit);
        assert_eq!(sys.compiled().unknowns.len(), unknowns);
        let mut s = sys.initial("tilted").unwrap();
        let mut st = DynStepper::new(&sys, 0.01).unwrap();
        for _ in 0..20_000 {
            st.step(&mut s).unwrap();
        }
        let per_step = st.stats.iterations as f64 / st.stats.steps as f64;
        assert!(
            per_step <= 2.25,
            "{unknowns} unknowns: {per_step:.3} iterations per step"
        );
    }
}

/// The JIT compiles the sparse LU's steps once they settle (see
/// `hamel_runtime::lu_code`): the states are those of the replayed LU to
/// the bit, over runs long enough for pivots to move (h = 0.01) and for
/// most factorizations to run compiled (h = 1e-3).
#[test]
fn compiled_lu_steps_give_the_replay_s_states() {
    let sys = chain(16, TableauChoice::Keep, Backend::Jit);
    for (h, steps) in [(1e-3, 1500), (0.01, 600)] {
        let (mut a, mut b) = (sys.initial("tilted").unwrap(), sys.initial("tilted").unwrap());
        let mut compiled = DynStepper::new(&sys, h).unwrap();
        let mut replayed = DynStepper::new(&sys, h).unwrap().with_compiled_lu(false);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for _ in 0..steps {
            compiled.step(&mut a).unwrap();
            replayed.step(&mut b).unwrap();
            assert_eq!(bits(a.z.as_slice()), bits(b.z.as_slice()), "h = {h}, step {}", a.step);
        }
        assert_eq!(replayed.compiled_factorizations(), 0);
        if hamel_jit::LU_COMPILED {
            let share = compiled.compiled_factorizations() as f64 / compiled.stats.factorizations as f64;
            assert!(share > 0.5, "h = {h}: {share} of the factorizations ran compiled");
        }
    }
}

/// The kernels of a physical state read the chain's tableau (its members
/// and their rates as locals, the kinetic metric and the midpoint's
/// observation as products with a direction): their code grows linearly
/// with the chain, where expanded it grew as N² (the 128-link chain's
/// emitted source was 27 MB, 26 of it these kernels).
#[test]
fn the_physical_kernels_of_a_chain_grow_linearly() {
    for scheme in ["hamel", "hamel_averaged"] {
        let ops = |n| {
            let sys = chain_of(scheme, n, TableauChoice::Keep, Backend::Interpreter);
            let c = sys.compiled();
            [
                Kernel::Metric,
                Kernel::ObserveSystem,
                Kernel::Invariants,
                Kernel::InitState,
            ]
            .map(|k| c.program(k).map_or(0, |p| p.instrs.len()))
        };
        let (a, b) = (ops(24), ops(48));
        for (k, (x, y)) in ["metric", "observe_system", "invariants", "init_state"]
            .iter()
            .zip(a.iter().zip(&b))
        {
            assert!(
                *y as f64 <= 2.2 * *x as f64,
                "{scheme} {k}: {x} instructions at 24 links, {y} at 48"
            );
        }
        assert!(a[0] > 0 && a[2] > 0 && a[3] > 0, "{scheme}: {a:?}");
    }
}
