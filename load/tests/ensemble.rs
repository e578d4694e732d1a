//! Ensembles equal one-by-one runs to the bit, keep the input order, and
//! report a failed member without losing the others; the loaded step's
//! sensitivity agrees with finite differences.

use hamel_load::ensemble::MemberError;
use hamel_load::{compile, compile_with_sensitivity, initial, read_model, run, run_many, Backend, Member, RunOptions};
use hamel_runtime::DynStepper;

fn sphere() -> hamel_load::Model {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/spherical_pendulum.hamel");
    read_model(path.as_ref(), &[]).unwrap()
}

#[test]
fn ensemble_matches_single_runs_in_order() {
    let sys = compile(&sphere(), "hamel_averaged".parse().unwrap(), Backend::Jit).unwrap();
    let opt = RunOptions {
        h: 0.1,
        steps: 200,
        compensated: false,
        record_every: 50,
        inputs: None,
        newton: Default::default(),
    };
    let mut members: Vec<Member> = (0..6)
        .map(|i| Member {
            init: Some(if i % 2 == 0 { "published" } else { "over_equator" }.into()),
            state: vec![("xi[0]".into(), vec![0.5 + 0.1 * i as f64])],
            params: vec![("g".into(), 9.0 + i as f64)],
        })
        .collect();
    // A member with an unknown parameter, in the middle.
    members.insert(
        3,
        Member {
            params: vec![("gravity".into(), 1.0)],
            ..Member::default()
        },
    );
    for threads in [Some(1), Some(2)] {
        let results = run_many(&sys, &members, &opt, threads).unwrap();
        assert_eq!(results.len(), members.len());
        assert!(matches!(&results[3], Err(MemberError::Input(e)) if e.to_string().contains("gravity")));
        for (m, r) in members.iter().zip(&results) {
            if m.params.iter().any(|(n, _)| n == "gravity") {
                continue;
            }
            let mut s = sys.clone();
            for (n, x) in &m.params {
                s.set_param(n, *x).unwrap();
            }
            let (state, label) = initial(&s, m.init.as_deref(), &m.state).unwrap();
            let alone = run(&s, state, label, &opt).unwrap();
            let r = r.as_ref().unwrap();
            assert_eq!(r.q, alone.q, "same positions to the bit");
            assert_eq!(r.v, alone.v);
            assert_eq!(r.values, alone.values);
            assert_eq!(r.initial, alone.initial);
            // Every member is a sound run of the published scheme.
            assert!(r.monitor.reports()[0].max_rel_error < 1e-2);
        }
        // Members carry their own parameter values: energy depends on g.
        let e0 = |i: usize| results[i].as_ref().unwrap().values[0][0];
        assert_ne!(e0(0), e0(2), "members carry their own parameter values");
    }
}

#[test]
fn loaded_sensitivity_matches_finite_differences() {
    let sys = compile_with_sensitivity(&sphere(), "hamel_averaged".parse().unwrap(), Backend::Interpreter).unwrap();
    let h = 0.1;
    let state = sys.initial("published").unwrap();
    let mut s = state.clone();
    let mut stepper = DynStepper::new(&sys, h).unwrap();
    let jac = stepper.step_with_sensitivity(&mut s).unwrap();
    let n = state.z.len();
    let eps = 1e-6;
    let mut worst: f64 = 0.0;
    for j in 0..n {
        let mut plus = state.clone();
        let mut minus = state.clone();
        plus.z[j] += eps;
        minus.z[j] -= eps;
        let mut st = DynStepper::new(&sys, h).unwrap();
        st.step(&mut plus).unwrap();
        st.step(&mut minus).unwrap();
        for i in 0..n {
            let fd = (plus.z[i] - minus.z[i]) / (2.0 * eps);
            worst = worst.max((fd - jac[(i, j)]).abs());
        }
    }
    assert!(worst < 1e-6, "largest difference from central differences {worst:e}");
    // Without sensitivity code the stepper says so instead of guessing.
    let plain = compile(&sphere(), "hamel_averaged".parse().unwrap(), Backend::Interpreter).unwrap();
    let mut s = plain.initial("published").unwrap();
    assert!(DynStepper::new(&plain, h)
        .unwrap()
        .step_with_sensitivity(&mut s)
        .is_err());
}

#[test]
fn streamed_runs_hand_every_record_to_the_sink_and_keep_few() {
    struct Count(u64, Vec<f64>);
    impl hamel_load::run::Sink for Count {
        fn record(&mut self, _step: u64, q: &[f64], _v: &[f64], _values: &[f64], _u: &[f64]) -> Result<(), String> {
            self.0 += 1;
            self.1 = q.to_vec();
            Ok(())
        }
    }
    let sys = compile(&sphere(), "hamel_averaged".parse().unwrap(), Backend::Interpreter).unwrap();
    let opt = RunOptions {
        h: 0.2,
        steps: 5_000,
        compensated: false,
        record_every: 1,
        inputs: None,
        newton: Default::default(),
    };
    let mut sink = Count(0, Vec::new());
    let state = sys.initial("published").unwrap();
    let kept = hamel_load::run::run_streamed(&sys, state, None, &opt, 1_000, Some(&mut sink), &mut |_| {}).unwrap();
    assert_eq!(sink.0, 5_001, "every recorded state reaches the sink");
    assert_eq!(kept.steps, vec![0, 1_000, 2_000, 3_000, 4_000, 5_000]);
    assert_eq!(kept.q.last().unwrap(), &sink.1);
    // The same run held in memory: identical last state, identical monitor.
    let full = run(&sys, sys.initial("published").unwrap(), None, &opt).unwrap();
    assert_eq!(full.q.last(), kept.q.last());
    assert_eq!(full.monitor.reports(), kept.monitor.reports());
}

#[test]
fn newton_options_reach_single_runs_and_ensembles() {
    let sys = compile(&sphere(), "hamel_averaged".parse().unwrap(), Backend::Jit).unwrap();
    let with = |newton: hamel_runtime::NewtonOptions| RunOptions {
        h: 0.2,
        steps: 300,
        compensated: false,
        record_every: 300,
        inputs: None,
        newton,
    };
    let strict = with(Default::default());
    let loose = with(hamel_runtime::NewtonOptions {
        tolerance: 1e-6,
        ..Default::default()
    });
    let start = || initial(&sys, Some("published"), &[]).unwrap();
    let a = run(&sys, start().0, None, &strict).unwrap();
    let b = run(&sys, start().0, None, &loose).unwrap();
    assert!(
        b.newton.mean() < a.newton.mean(),
        "{} vs {}",
        b.newton.mean(),
        a.newton.mean()
    );
    assert_eq!(b.summary("")["newton_tolerance"].as_f64(), Some(1e-6));
    // The ensemble runner uses the same options: the same runs to the bit.
    let many = run_many(&sys, &[Member::default()], &loose, Some(1)).unwrap();
    let m = many[0].as_ref().unwrap();
    assert_eq!((m.newton, &m.q), (b.newton, &b.q));
    // One iteration is too few: the first step fails and says so.
    let one = with(hamel_runtime::NewtonOptions {
        max_iterations: 1,
        ..Default::default()
    });
    let err = run(&sys, start().0, None, &one).unwrap_err().to_string();
    assert!(
        err.starts_with("step 0: Newton did not converge in 1 iterations"),
        "{err}"
    );
    // Options no solve can honour are refused before any step, naming the setting.
    for (bad, name) in [
        (
            hamel_runtime::NewtonOptions {
                tolerance: f64::NAN,
                ..Default::default()
            },
            "tolerance = NaN",
        ),
        (
            hamel_runtime::NewtonOptions {
                tolerance: 0.0,
                ..Default::default()
            },
            "tolerance = 0",
        ),
        (
            hamel_runtime::NewtonOptions {
                max_iterations: 0,
                ..Default::default()
            },
            "max_iterations = 0",
        ),
    ] {
        let err = run(&sys, start().0, None, &with(bad)).unwrap_err();
        assert!(
            matches!(&err, hamel_load::RunError::Options(m) if m.contains(name)),
            "{err}"
        );
        assert!(hamel_load::run::check_run(&sys, &with(bad)).is_err());
    }
}
