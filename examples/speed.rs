//! Speed of whole steps, measured side by side in one run (medians of
//! interleaved rounds): the derived sphere step against a hand-written one
//! (`benches/yardstick.rs`: its own algorithm and loop), every scheme on the
//! double spherical pendulum, and chains of N links.
//!
//! `cargo run --release --example speed` prints a table and, as its last
//! line, one JSON object. `SPEED_CHAIN_MAX=16` limits the chain sizes.

use std::time::Instant;

use hamel::{DynStepper, Integrator, State, StepSystem, Stepper};
use hamel_load::{compile, read_model, Backend};

#[path = "../benches/yardstick.rs"]
mod yardstick;
use yardstick::{SphereState, Yardstick};

macro_rules! model {
    ($name:ident, [$($field:ident),*], $($key:ident = $val:literal),*) => {
        #[derive(Integrator)]
        #[hamel($($key = $val),*, sensitivity = false)]
        pub struct $name { $(pub $field: f64),* }
    };
}

model!(
    Sphere,
    [m, r, g],
    model = "models/spherical_pendulum.hamel",
    scheme = "hamel_averaged"
);
model!(
    DspHamel,
    [m1, m2, l1, l2, g],
    model = "models/double_spherical_pendulum.hamel",
    scheme = "hamel_averaged"
);
model!(
    DspMidpoint,
    [m1, m2, l1, l2, g],
    model = "models/double_spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);
model!(
    DspRattle,
    [m1, m2, l1, l2, g],
    model = "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "rattle"
);
model!(
    DspEm,
    [m1, m2, l1, l2, g],
    model = "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "energy_momentum"
);
model!(
    DspSv,
    [m1, m2, l1, l2, g],
    model = "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "stormer_verlet"
);

type Boxed = Box<dyn std::error::Error>;

/// Median of the values.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// ns per step of `steps` derived steps from `start`.
fn time_derived<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    start: State<NZ, NX>,
    h: f64,
    steps: u64,
) -> Result<f64, Boxed> {
    let mut s = start;
    let mut stepper = Stepper::new(sys, h)?;
    let t0 = Instant::now();
    for _ in 0..steps {
        stepper.step(&mut s)?;
    }
    let ns = t0.elapsed().as_nanos() as f64 / steps as f64;
    std::hint::black_box(s);
    Ok(ns)
}

/// Runs every contender once per round, `rounds` times, interleaved; returns
/// each one's median.
fn interleaved(rounds: usize, contenders: &mut [&mut dyn FnMut() -> Result<f64, Boxed>]) -> Result<Vec<f64>, Boxed> {
    let mut samples = vec![Vec::new(); contenders.len()];
    for _ in 0..rounds {
        for (i, c) in contenders.iter_mut().enumerate() {
            samples[i].push(c()?);
        }
    }
    Ok(samples.into_iter().map(median).collect())
}

fn main() -> Result<(), Boxed> {
    // ---- sphere: derived vs hand-written ----
    let (h, steps) = (0.2, 10_000u64);
    let sphere = Sphere::with_defaults();
    let start = sphere.initial("published")?;
    let yard = Yardstick::new(sphere.r, sphere.g, h);
    let ystart = SphereState {
        gamma: [start.z[0], start.z[1], start.z[2]],
        xi: [start.z[3], start.z[4]],
    };
    // Same map: the two agree to round-off over the run.
    let mut a = start;
    let mut st = sphere.stepper(h)?;
    let mut b = ystart;
    let mut worst = 0.0f64;
    for _ in 0..steps {
        st.step(&mut a)?;
        yard.step(&mut b).ok_or("yardstick diverged")?;
        for i in 0..3 {
            worst = worst.max((a.z[i] - b.gamma[i]).abs());
        }
    }
    let mut gen = || time_derived(&sphere, start, h, steps);
    let mut hand = || -> Result<f64, Boxed> {
        let mut s = ystart;
        let t0 = Instant::now();
        for _ in 0..steps {
            yard.step(&mut s).ok_or("yardstick diverged")?;
        }
        let ns = t0.elapsed().as_nanos() as f64 / steps as f64;
        std::hint::black_box(s);
        Ok(ns)
    };
    let sphere_ns = interleaved(9, &mut [&mut gen, &mut hand])?;
    println!("Spherical pendulum, averaged Hamel, h = {h}, {steps} steps (medians of 9 interleaved rounds)");
    println!("  derived step      {:>9.0} ns", sphere_ns[0]);
    println!(
        "  hand-written step {:>9.0} ns   (ratio {:.2}; states agree to {worst:.1e})",
        sphere_ns[1],
        sphere_ns[0] / sphere_ns[1]
    );

    // ---- double spherical pendulum: every scheme ----
    let (h, steps) = (0.01, 2000u64);
    let dh = DspHamel::with_defaults();
    let dm = DspMidpoint::with_defaults();
    let dr = DspRattle::with_defaults();
    let de = DspEm::with_defaults();
    let ds = DspSv::with_defaults();
    let (sh, sm, sr, se, ss) = (
        dh.initial("pattern_I")?,
        dm.initial("pattern_I")?,
        dr.initial("pattern_I")?,
        de.initial("pattern_I")?,
        ds.initial("pattern_I")?,
    );
    let mut c1 = || time_derived(&dh, sh, h, steps);
    let mut c2 = || time_derived(&dm, sm, h, steps);
    let mut c3 = || time_derived(&dr, sr, h, steps);
    let mut c4 = || time_derived(&de, se, h, steps);
    let mut c5 = || time_derived(&ds, ss, h, steps);
    let dsp = interleaved(7, &mut [&mut c1, &mut c2, &mut c3, &mut c4, &mut c5])?;
    println!();
    println!("Double spherical pendulum, Pattern I, h = {h}, {steps} steps (medians of 7 interleaved rounds)");
    for (name, ns) in [
        "hamel_averaged",
        "hamel_midpoint",
        "rattle",
        "energy_momentum",
        "stormer_verlet",
    ]
    .iter()
    .zip(&dsp)
    {
        println!("  {name:<16} {ns:>9.0} ns");
    }

    // ---- chains (run-time back-end, JIT) ----
    // Director Hamel (spherical_chain.hamel) and, in maximal coordinates
    // (spherical_chain_cartesian.hamel), RATTLE, Störmer–Verlet and
    // energy–momentum, whose multiplier systems are banded.
    let max_n: usize = std::env::var("SPEED_CHAIN_MAX")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(32);
    let sizes = [2usize, 4, 8, 16, 32];
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/models/");
    let mut hamel_ns: Vec<Option<f64>> = Vec::new();
    let mut fastest: Vec<Option<(f64, &str)>> = Vec::new();
    let cartesian = ["rattle", "stormer_verlet", "energy_momentum"];
    println!();
    println!("Spherical chain, h = 0.01, JIT back-end, ns/step (medians of 5 interleaved rounds)");
    println!(
        "  {:>3} {:>12} {:>12} {:>12} {:>14} {:>16} {:>9}",
        "N", "hamel_averaged", "hamel_mid", "rattle", "stormer_verlet", "energy_momentum", "prep s"
    );
    for &n in &sizes {
        if n > max_n {
            hamel_ns.push(None);
            fastest.push(None);
            continue;
        }
        let t0 = Instant::now();
        let size = [("N".to_string(), n as i64)];
        let director = read_model(format!("{dir}spherical_chain.hamel").as_ref(), &size)?;
        let maximal = read_model(format!("{dir}spherical_chain_cartesian.hamel").as_ref(), &size)?;
        let mut systems = vec![
            (
                "hamel_averaged",
                compile(&director, "hamel_averaged".parse()?, Backend::Jit)?,
            ),
            (
                "hamel_midpoint",
                compile(&director, "hamel_midpoint".parse()?, Backend::Jit)?,
            ),
        ];
        for s in cartesian {
            systems.push((s, compile(&maximal, s.parse()?, Backend::Jit)?));
        }
        let prep = t0.elapsed().as_secs_f64();
        let steps = (4000 / n).max(50) as u64;
        let time_dyn = |sys: &hamel_load::System| -> Result<f64, Boxed> {
            let mut s = sys.initial("tilted")?;
            let mut stepper = DynStepper::new(sys, 0.01)?;
            let t0 = Instant::now();
            for _ in 0..steps {
                stepper.step(&mut s)?;
            }
            Ok(t0.elapsed().as_nanos() as f64 / steps as f64)
        };
        let mut runs: Vec<Box<dyn FnMut() -> Result<f64, Boxed>>> = systems
            .iter()
            .map(|(_, sys)| Box::new(move || time_dyn(sys)) as Box<dyn FnMut() -> Result<f64, Boxed>>)
            .collect();
        let mut refs: Vec<&mut dyn FnMut() -> Result<f64, Boxed>> = runs
            .iter_mut()
            .map(|b| b.as_mut() as &mut dyn FnMut() -> Result<f64, Boxed>)
            .collect();
        let ns = interleaved(5, &mut refs)?;
        println!(
            "  {n:>3} {:>12.0} {:>12.0} {:>12.0} {:>14.0} {:>16.0} {prep:>9.1}",
            ns[0], ns[1], ns[2], ns[3], ns[4]
        );
        hamel_ns.push(Some(ns[0]));
        let best = (0..ns.len()).min_by(|&a, &b| ns[a].total_cmp(&ns[b])).expect("schemes");
        fastest.push(Some((ns[best], systems[best].0)));
    }
    let fastest_scheme = fastest.iter().rev().flatten().next().map(|(_, s)| *s);
    let summary = serde_json::json!({
        "sphere": { "generated_ns": sphere_ns[0], "hand_written_ns": sphere_ns[1] },
        "dsp": {
            "hamel_ns": dsp[0], "hamel_midpoint_ns": dsp[1], "rattle_ns": dsp[2],
            "energy_momentum_ns": dsp[3], "stormer_verlet_ns": dsp[4],
        },
        "chain": {
            "sizes": sizes,
            "hamel_ns": hamel_ns,
            "fastest_ns": fastest.iter().map(|f| f.map(|(ns, _)| ns)).collect::<Vec<_>>(),
            "fastest_scheme": fastest_scheme,
            "fastest_scheme_per_size": fastest.iter().map(|f| f.map(|(_, s)| s)).collect::<Vec<_>>(),
            "backend": "jit",
            "models": ["spherical_chain.hamel (hamel, hamel_midpoint)", "spherical_chain_cartesian.hamel (rattle, stormer_verlet, energy_momentum)"],
        },
    });
    println!("{summary}");
    Ok(())
}
