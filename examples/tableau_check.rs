//! The director chain's midpoint Hamel step (`SCHEME=hamel_averaged`: the
//! averaged one) derived with its tableau kept as
//! unknowns ([`TableauChoice::Keep`]) against the dense derivation: `cargo
//! run --release --example tableau_check [N…]` prints, per size, the
//! unknowns and band of each, and the largest difference of state and
//! invariants over `STEPS` steps (default 200) at `H` (default 0.01) from
//! `tilted`, and for each the largest departures of energy, J, the link
//! lengths and the velocity constraints from their initial values.

use hamel::DynStepper;
use hamel_load::{compile_with, read_model, Backend, System, TableauChoice};

type Boxed = Box<dyn std::error::Error>;

fn derive(n: usize, sparse: bool) -> Result<System, Boxed> {
    let model = std::env::var("MODEL").unwrap_or_else(|_| "spherical_chain".into());
    let path = format!("{}/models/{model}.hamel", env!("CARGO_MANIFEST_DIR"));
    let model = read_model(path.as_ref(), &[("N".to_string(), n as i64)])?;
    let choice = if sparse {
        TableauChoice::Keep
    } else {
        TableauChoice::Substitute
    };
    let scheme = std::env::var("SCHEME").unwrap_or_else(|_| "hamel".into());
    Ok(compile_with(&model, scheme.parse()?, Backend::Jit, choice)?)
}

fn main() -> Result<(), Boxed> {
    let sizes: Vec<usize> = std::env::args().skip(1).map(|s| s.parse()).collect::<Result<_, _>>()?;
    let sizes = if sizes.is_empty() { vec![2, 3, 8] } else { sizes };
    let h: f64 = std::env::var("H").ok().and_then(|h| h.parse().ok()).unwrap_or(0.01);
    let steps: u64 = std::env::var("STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(200);
    for n in sizes {
        let (dense, sparse) = (derive(n, false)?, derive(n, true)?);
        for (name, s) in [("dense", &dense), ("sparse", &sparse)] {
            let c = s.compiled();
            println!("N = {n}: {name}: {} unknowns, band {:?}", c.unknowns.len(), c.band);
        }
        let (mut a, mut b) = (dense.initial("tilted")?, sparse.initial("tilted")?);
        let (mut sa, mut sb) = (DynStepper::new(&dense, h)?, DynStepper::new(&sparse, h)?);
        let (mut dz, mut dinv, mut zmax) = (0.0f64, 0.0f64, 0.0f64);
        let mut drift = [Drift::new(&dense, &a)?, Drift::new(&sparse, &b)?];
        for k in 0..steps {
            sa.step(&mut a)?;
            sb.step(&mut b)?;
            dz = dz.max((&a.z - &b.z).amax());
            zmax = zmax.max(a.z.amax());
            if k % 100 == 99 || k + 1 == steps {
                drift[0].take(&dense, &a)?;
                drift[1].take(&sparse, &b)?;
            }
            if k % 10 == 9 || k + 1 == steps {
                let (ia, ib) = (dense.invariants(&a.z, a.step)?, sparse.invariants(&b.z, b.step)?);
                for (x, y) in ia.iter().zip(&ib) {
                    dinv = dinv.max((x - y).abs() / x.abs().max(1.0));
                }
            }
        }
        println!(
            "N = {n}: {steps} steps, h = {h}: max |Δz| {dz:.2e} (max |z| {zmax:.2e}), max relative Δ invariants {dinv:.2e}; iterations per step dense {:.2}, sparse {:.2}",
            sa.stats.iterations as f64 / steps as f64,
            sb.stats.iterations as f64 / steps as f64
        );
        for (name, d) in ["dense", "sparse"].iter().zip(&drift) {
            println!(
                "N = {n}: {name}: max |ΔE/E0| {:.3e}, max |ΔJ| {:.3e} (J0 {:.3}), max |‖e_i‖ − 1| {:.1e}, max |⟨ω_i, e_i⟩| {:.1e}",
                d.energy, d.j, d.j0, d.length, d.constraint
            );
        }
    }
    Ok(())
}

/// The largest departures of the invariants from their initial values.
struct Drift {
    e0: f64,
    j0: f64,
    energy: f64,
    j: f64,
    length: f64,
    constraint: f64,
}

impl Drift {
    fn new(sys: &System, s: &hamel::DynState) -> Result<Drift, Boxed> {
        let v = sys.invariants(&s.z, s.step)?;
        let at = |name: &str| sys.compiled().invariants.iter().position(|(n, _)| n == name);
        Ok(Drift {
            e0: v[at("energy").ok_or("energy")?],
            j0: v[at("J").ok_or("J")?],
            energy: 0.0,
            j: 0.0,
            length: 0.0,
            constraint: 0.0,
        })
    }

    fn take(&mut self, sys: &System, s: &hamel::DynState) -> Result<(), Boxed> {
        let v = sys.invariants(&s.z, s.step)?;
        for ((name, _), &x) in sys.compiled().invariants.iter().zip(&v) {
            match name.as_str() {
                "energy" => self.energy = self.energy.max(((x - self.e0) / self.e0).abs()),
                "J" => self.j = self.j.max((x - self.j0).abs()),
                l if l.starts_with("length") => self.length = self.length.max((x - 1.0).abs()),
                _ => self.constraint = self.constraint.max(x.abs()),
            }
        }
        Ok(())
    }
}
