//! The run-time back-ends (model file → register programs → JIT or
//! interpreter → runtime Newton) against the derive-generated code: same model,
//! scheme, state and step size must give the same trajectory to the bit, on
//! every model in `models/`, compensated runs and an indexed family included.

use std::path::Path;

use hamel::{Integrator, StepSystem};
use hamel_cli::{compile, load_model, parse_scheme, Backend};
use hamel_runtime::DynStepper;

macro_rules! model {
    ($name:ident, [$($field:ident),*], $($key:ident = $val:literal),*) => {
        #[derive(Integrator)]
        #[hamel($($key = $val),*, sensitivity = false, simd = false)]
        pub struct $name { $(pub $field: f64),* }
    };
}

model!(
    SphereAveraged,
    [m, r, g],
    model = "../models/spherical_pendulum.hamel",
    scheme = "hamel_averaged"
);
model!(
    SphereMidpoint,
    [m, r, g],
    model = "../models/spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);
model!(
    SleighAveraged,
    [m, a, inertia],
    model = "../models/chaplygin_sleigh.hamel",
    scheme = "hamel_averaged"
);
model!(
    SleighMidpoint,
    [m, a, inertia],
    model = "../models/chaplygin_sleigh.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);
model!(
    AnglesAveraged,
    [m, r, g],
    model = "../models/spherical_pendulum_angles.hamel",
    scheme = "hamel_averaged"
);
model!(
    AnglesMidpoint,
    [m, r, g],
    model = "../models/spherical_pendulum_angles.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);
model!(
    AnglesSv,
    [m, r, g],
    model = "../models/spherical_pendulum_angles.hamel",
    scheme = "stormer_verlet"
);
model!(
    CartSv,
    [m, r, g],
    model = "../models/spherical_pendulum_cartesian.hamel",
    scheme = "stormer_verlet"
);
model!(
    CartRattle,
    [m, r, g],
    model = "../models/spherical_pendulum_cartesian.hamel",
    scheme = "rattle"
);
model!(
    CartEm,
    [m, r, g],
    model = "../models/spherical_pendulum_cartesian.hamel",
    scheme = "energy_momentum"
);
model!(
    DirAveraged,
    [m, r, g],
    model = "../models/spherical_pendulum_director.hamel",
    scheme = "hamel_averaged"
);
model!(
    DirMidpoint,
    [m, r, g],
    model = "../models/spherical_pendulum_director.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);
model!(
    DspAveraged,
    [m1, m2, l1, l2, g],
    model = "../models/double_spherical_pendulum.hamel",
    scheme = "hamel_averaged"
);
model!(
    DspMidpoint,
    [m1, m2, l1, l2, g],
    model = "../models/double_spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);
model!(
    DspSv,
    [m1, m2, l1, l2, g],
    model = "../models/double_spherical_pendulum_cartesian.hamel",
    scheme = "stormer_verlet"
);
model!(
    DspRattle,
    [m1, m2, l1, l2, g],
    model = "../models/double_spherical_pendulum_cartesian.hamel",
    scheme = "rattle"
);
model!(
    DspEm,
    [m1, m2, l1, l2, g],
    model = "../models/double_spherical_pendulum_cartesian.hamel",
    scheme = "energy_momentum"
);
model!(
    ChainAveraged,
    [m, l, g],
    model = "../models/spherical_chain.hamel",
    scheme = "hamel_averaged"
);
model!(
    ChainMidpoint,
    [m, l, g],
    model = "../models/spherical_chain.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);

model!(
    DampedAveraged,
    [m, r, g, c],
    model = "../models/damped_spherical_pendulum.hamel",
    scheme = "hamel_averaged"
);
model!(
    DampedMidpoint,
    [m, r, g, c],
    model = "../models/damped_spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);
model!(
    DampedCartSv,
    [m, r, g, c],
    model = "../models/damped_spherical_pendulum_cartesian.hamel",
    scheme = "stormer_verlet"
);
model!(
    DampedCartRattle,
    [m, r, g, c],
    model = "../models/damped_spherical_pendulum_cartesian.hamel",
    scheme = "rattle"
);
model!(
    DampedCartEm,
    [m, r, g, c],
    model = "../models/damped_spherical_pendulum_cartesian.hamel",
    scheme = "energy_momentum"
);
model!(
    TorqueMidpoint,
    [m, r, g],
    model = "../models/torque_driven_spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);
model!(
    InvertedAveraged,
    [m, r, g],
    model = "../models/inverted_spherical_pendulum.hamel",
    scheme = "hamel_averaged"
);

model!(
    ChainCartesianRattle,
    [m, l, g],
    model = "../models/spherical_chain_cartesian.hamel",
    scheme = "rattle",
    N = 12
);

model!(
    ChainN3,
    [m, l, g],
    model = "../models/spherical_chain.hamel",
    scheme = "hamel_averaged",
    N = 3
);

const STEPS: usize = 1000;

/// What to run: a model file of `models/`, a scheme, a named initial state.
#[derive(Clone, Copy)]
struct Case<'a> {
    file: &'a str,
    scheme: &'a str,
    init: &'a str,
    h: f64,
    compensated: bool,
    sizes: &'a [(String, i64)],
    /// input amplitudes (empty: a model without inputs); step `k` applies
    /// `u = a (1 + ½ sin(0.01 k))`, so that a slot mixed up with another or
    /// with the previous step's shows
    inputs: &'a [f64],
}

/// Runs the derived code and both run-time back-ends side by side; panics
/// unless every state, compensation term, Newton iteration count and final
/// invariant is identical to the bit.
fn agree<S, const NZ: usize, const NX: usize>(derived: &S, initial: hamel::State<NZ, NX>, c: &Case)
where
    S: StepSystem<NZ, NX>,
{
    let Case {
        file,
        scheme,
        init,
        h,
        compensated,
        sizes,
        inputs,
    } = *c;
    let model = load_model(Path::new(&format!("../models/{file}")), sizes).unwrap();
    let scheme_kind = parse_scheme(scheme, None).unwrap();
    let backends = [Backend::Jit, Backend::Interpreter].map(|b| compile(&model, scheme_kind, b).unwrap());
    let mut dyn_states: Vec<_> = backends.iter().map(|sys| sys.initial(init).unwrap()).collect();
    for (sys, st) in backends.iter().zip(&dyn_states) {
        assert_eq!(
            st.z.as_slice(),
            initial.z.as_slice(),
            "{file} {scheme} {}: initial states differ",
            sys.backend()
        );
    }
    let mut state = initial;
    let mut stepper = hamel::Stepper::new(derived, h).unwrap().with_compensation(compensated);
    let mut dyn_steppers: Vec<_> = backends
        .iter()
        .map(|sys| DynStepper::new(sys, h).unwrap().with_compensation(compensated))
        .collect();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
    for k in 0..STEPS {
        let u: Vec<f64> = inputs
            .iter()
            .map(|a| a * (1.0 + 0.5 * (0.01 * k as f64).sin()))
            .collect();
        stepper.step_with_inputs(&mut state, &u).unwrap();
        for ((sys, st), dyn_stepper) in backends.iter().zip(&mut dyn_states).zip(&mut dyn_steppers) {
            dyn_stepper.step_with_inputs(st, &u).unwrap();
            assert!(
                bits(st.z.as_slice()) == bits(state.z.as_slice())
                    && bits(st.lo.as_slice()) == bits(state.lo.as_slice()),
                "{file} {scheme} {}: step {k}: state differs from the derived code's by {:e}",
                sys.backend(),
                (0..NZ).map(|i| (state.z[i] - st.z[i]).abs()).fold(0.0, f64::max)
            );
        }
    }
    let mut a = vec![0.0; derived.invariant_info().len()];
    derived.invariants_into(&state.z, &mut a).unwrap();
    for ((sys, st), dyn_stepper) in backends.iter().zip(&dyn_states).zip(&dyn_steppers) {
        assert_eq!(
            stepper.stats.iterations,
            dyn_stepper.stats.iterations,
            "{file} {scheme} {}: Newton iterations differ",
            sys.backend()
        );
        assert_eq!(
            stepper.work_done.to_bits(),
            dyn_stepper.work_done.to_bits(),
            "{file} {scheme} {}: the forces' work differs",
            sys.backend()
        );
        let b = sys.invariants(&st.z, STEPS as u64).unwrap();
        assert_eq!(
            bits(&a),
            bits(&b),
            "{file} {scheme} {}: invariants differ",
            sys.backend()
        );
    }
    let c = if compensated { "compensated" } else { "" };
    println!("{file:<42} {scheme:<16} {init:<12} h={h:<5} {c:<11} derived = jit = interpreter, bit for bit");
}

macro_rules! case {
    ($seen:ident, $ty:ident, $file:literal, $scheme:literal, $init:literal, $h:literal) => {
        case!($seen, $ty, $file, $scheme, $init, $h, false)
    };
    ($seen:ident, $ty:ident, $file:literal, $scheme:literal, $init:literal, $h:literal, $comp:literal) => {
        case!($seen, $ty, $file, $scheme, $init, $h, $comp, [])
    };
    ($seen:ident, $ty:ident, $file:literal, $scheme:literal, $init:literal, $h:literal, $comp:literal, [$($u:literal),*]) => {{
        let m = $ty::with_defaults();
        let s = m.initial($init).unwrap();
        let c = Case {
            file: $file,
            scheme: $scheme,
            init: $init,
            h: $h,
            compensated: $comp,
            sizes: &[],
            inputs: &[$($u),*],
        };
        agree(&m, s, &c);
        $seen.insert($file);
    }};
}

#[test]
fn runtime_back_end_matches_derived_code_on_every_model() {
    let mut seen = std::collections::BTreeSet::new();
    // Compensated summation: residual and increment at z + lo in double-double.
    case!(
        seen,
        SphereAveraged,
        "spherical_pendulum.hamel",
        "hamel_averaged",
        "published",
        0.2,
        true
    );
    case!(
        seen,
        CartRattle,
        "spherical_pendulum_cartesian.hamel",
        "rattle",
        "published",
        0.2,
        true
    );
    case!(
        seen,
        SphereAveraged,
        "spherical_pendulum.hamel",
        "hamel_averaged",
        "published",
        0.2
    );
    case!(
        seen,
        SphereMidpoint,
        "spherical_pendulum.hamel",
        "hamel_midpoint",
        "over_equator",
        0.2
    );
    case!(
        seen,
        SleighAveraged,
        "chaplygin_sleigh.hamel",
        "hamel_averaged",
        "push",
        0.05
    );
    case!(
        seen,
        SleighMidpoint,
        "chaplygin_sleigh.hamel",
        "hamel_midpoint",
        "push",
        0.05
    );
    case!(
        seen,
        AnglesAveraged,
        "spherical_pendulum_angles.hamel",
        "hamel_averaged",
        "swing",
        0.05
    );
    case!(
        seen,
        AnglesMidpoint,
        "spherical_pendulum_angles.hamel",
        "hamel_midpoint",
        "swing",
        0.05
    );
    case!(
        seen,
        AnglesSv,
        "spherical_pendulum_angles.hamel",
        "stormer_verlet",
        "swing",
        0.05
    );
    case!(
        seen,
        CartSv,
        "spherical_pendulum_cartesian.hamel",
        "stormer_verlet",
        "published",
        0.2
    );
    case!(
        seen,
        CartRattle,
        "spherical_pendulum_cartesian.hamel",
        "rattle",
        "published",
        0.2
    );
    case!(
        seen,
        CartEm,
        "spherical_pendulum_cartesian.hamel",
        "energy_momentum",
        "published",
        0.2
    );
    case!(
        seen,
        DirAveraged,
        "spherical_pendulum_director.hamel",
        "hamel_averaged",
        "published",
        0.2
    );
    case!(
        seen,
        DirMidpoint,
        "spherical_pendulum_director.hamel",
        "hamel_midpoint",
        "published",
        0.2
    );
    case!(
        seen,
        DspAveraged,
        "double_spherical_pendulum.hamel",
        "hamel_averaged",
        "pattern_I",
        0.01
    );
    case!(
        seen,
        DspMidpoint,
        "double_spherical_pendulum.hamel",
        "hamel_midpoint",
        "pattern_II",
        0.01
    );
    case!(
        seen,
        DspSv,
        "double_spherical_pendulum_cartesian.hamel",
        "stormer_verlet",
        "pattern_I",
        0.01
    );
    case!(
        seen,
        DspRattle,
        "double_spherical_pendulum_cartesian.hamel",
        "rattle",
        "pattern_I",
        0.01
    );
    case!(
        seen,
        DspEm,
        "double_spherical_pendulum_cartesian.hamel",
        "energy_momentum",
        "relative_equilibrium",
        0.01
    );
    case!(
        seen,
        ChainAveraged,
        "spherical_chain.hamel",
        "hamel_averaged",
        "tilted",
        0.01
    );
    case!(
        seen,
        ChainMidpoint,
        "spherical_chain.hamel",
        "hamel_midpoint",
        "tilted",
        0.01
    );
    // Forces: dissipation in every scheme, inputs (held and previous) and time.
    case!(
        seen,
        DampedAveraged,
        "damped_spherical_pendulum.hamel",
        "hamel_averaged",
        "published",
        0.05
    );
    case!(
        seen,
        DampedMidpoint,
        "damped_spherical_pendulum.hamel",
        "hamel_midpoint",
        "published",
        0.05
    );
    case!(
        seen,
        DampedCartSv,
        "damped_spherical_pendulum_cartesian.hamel",
        "stormer_verlet",
        "published",
        0.05
    );
    case!(
        seen,
        DampedCartRattle,
        "damped_spherical_pendulum_cartesian.hamel",
        "rattle",
        "published",
        0.05
    );
    case!(
        seen,
        DampedCartEm,
        "damped_spherical_pendulum_cartesian.hamel",
        "energy_momentum",
        "published",
        0.05,
        true
    );
    case!(
        seen,
        TorqueMidpoint,
        "torque_driven_spherical_pendulum.hamel",
        "hamel_midpoint",
        "published",
        0.05,
        true,
        [2.0]
    );
    case!(
        seen,
        InvertedAveraged,
        "inverted_spherical_pendulum.hamel",
        "hamel_averaged",
        "tilted",
        0.02,
        false,
        [0.3, -0.2]
    );
    // Maximal coordinates at a size where the banded LU is used.
    let m = ChainCartesianRattle::with_defaults();
    let sizes12 = [("N".to_string(), 12)];
    let c = Case {
        file: "spherical_chain_cartesian.hamel",
        scheme: "rattle",
        init: "tilted",
        h: 0.01,
        compensated: false,
        sizes: &sizes12,
        inputs: &[],
    };
    assert!(hamel::Kernels::jacobian_band(&m).is_some(), "N = 12 uses the banded LU");
    agree(&m, m.initial("tilted").unwrap(), &c);
    seen.insert("spherical_chain_cartesian.hamel");
    // An indexed family at another size: derive `N = 3`, tape `--size N=3`.
    let m = ChainN3::with_defaults();
    let sizes = [("N".to_string(), 3)];
    let c = Case {
        file: "spherical_chain.hamel",
        scheme: "hamel_averaged",
        init: "tilted",
        h: 0.01,
        compensated: false,
        sizes: &sizes,
        inputs: &[],
    };
    agree(&m, m.initial("tilted").unwrap(), &c);
    // Every model file must be covered: a new model needs a case here.
    let files: std::collections::BTreeSet<String> = std::fs::read_dir("../models")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".hamel"))
        .collect();
    let seen: std::collections::BTreeSet<String> = seen.into_iter().map(String::from).collect();
    assert_eq!(files, seen, "models without a back-end agreement case");
}

model!(
    Functions,
    [k],
    model = "tests/models/functions.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);

#[test]
fn every_elementary_function_agrees_between_derived_code_and_run_time() {
    for compensated in [false, true] {
        let m = Functions::with_defaults();
        let c = Case {
            file: "../cli/tests/models/functions.hamel",
            scheme: "hamel_midpoint",
            init: "s",
            h: 0.05,
            compensated,
            sizes: &[],
            inputs: &[],
        };
        agree(&m, m.initial("s").unwrap(), &c);
    }
}
