//! A compiled step as bytes and back, so that a host can keep a derivation
//! (in a cache file) and skip it the next time the same model is run.
//!
//! The format is private to one build of hamel: hosts key their files by
//! the build (see `hamel_load::cache`), so it carries no version of its own
//! beyond a magic word. Numbers are stored by their bits, so a step read
//! back evaluates to the same bits as the one written.

use std::collections::BTreeMap;

use hamel_kernel::{Arg, InvariantKind, Kernel, Program};

use super::compiled::{CompiledFunction, CompiledStep};
use crate::scheme::Scheme;

const MAGIC: &[u8; 8] = b"HAMELCS1";

/// An index of the Jacobian's pattern, as stored.
fn index(v: usize) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| "an index of the Jacobian's pattern out of range".to_string())
}

impl CompiledStep {
    /// The step as bytes, for [`CompiledStep::from_bytes`] of the same build.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer(MAGIC.to_vec());
        w.str(&self.model);
        w.str(&self.scheme);
        w.opt(self.kind, |w, s| w.usize(scheme_code(s)));
        w.seq(&self.params, |w, (n, d)| {
            w.str(n);
            w.f64(*d);
        });
        for names in [&self.state, &self.unknowns, &self.coordinates, &self.velocities] {
            w.seq(names, |w, n| w.str(n));
        }
        w.seq(&self.invariants, |w, (n, k)| {
            w.str(n);
            w.usize(invariant_code(*k));
        });
        w.seq(&self.initials, |w, n| w.str(n));
        w.seq(&self.inputs, |w, n| w.str(n));
        w.opt(self.band, |w, (l, u)| {
            w.usize(l);
            w.usize(u);
        });
        w.seq(&self.pattern, |w, &(r, c)| {
            w.usize(r as usize);
            w.usize(c as usize);
        });
        w.usize(self.exogenous_len);
        w.usize(self.observe_size);
        w.seq(&self.lets, |w, (n, k)| {
            w.str(n);
            w.usize(*k);
        });
        w.usize(self.metric_size);
        w.usize(usize::from(self.metric_varies));
        w.opt(self.frame_check, |w, (r, c)| {
            w.usize(r);
            w.usize(c);
        });
        w.opt(self.time_slot, Writer::usize);
        let functions: Vec<(Kernel, &CompiledFunction)> = self.functions().collect();
        w.seq(&functions, |w, (k, f)| {
            w.kernel(*k);
            w.program(&f.program);
            w.seq(&f.inputs, |w, (a, n)| {
                w.usize(arg_code(*a));
                w.usize(*n);
            });
            w.seq(&f.outputs, |w, (n, len)| {
                w.str(n);
                w.usize(*len);
            });
        });
        w.0
    }

    /// A step written by [`CompiledStep::to_bytes`] of the same build; an
    /// error for anything else (a truncated or foreign file).
    pub fn from_bytes(bytes: &[u8]) -> Result<CompiledStep, String> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(MAGIC.len())? != MAGIC {
            return Err("not a compiled hamel step".into());
        }
        let model = r.str()?;
        let scheme = r.str()?;
        let kind = r.opt(|r| scheme_of(r.usize()?))?;
        let params = r.seq(|r| Ok((r.str()?, r.f64()?)))?;
        let state = r.seq(Reader::str)?;
        let unknowns = r.seq(Reader::str)?;
        let coordinates = r.seq(Reader::str)?;
        let velocities = r.seq(Reader::str)?;
        let invariants = r.seq(|r| Ok((r.str()?, invariant_of(r.usize()?)?)))?;
        let initials = r.seq(Reader::str)?;
        let inputs = r.seq(Reader::str)?;
        let band = r.opt(|r| Ok((r.usize()?, r.usize()?)))?;
        let pattern = r.seq(|r| Ok((index(r.usize()?)?, index(r.usize()?)?)))?;
        let exogenous_len = r.usize()?;
        let observe_size = r.usize()?;
        let lets = r.seq(|r| Ok((r.str()?, r.usize()?)))?;
        let metric_size = r.usize()?;
        let metric_varies = r.usize()? != 0;
        let frame_check = r.opt(|r| Ok((r.usize()?, r.usize()?)))?;
        let time_slot = r.opt(Reader::usize)?;
        let functions: BTreeMap<Kernel, CompiledFunction> = r
            .seq(|r| {
                let k = r.kernel()?;
                let program = r.program()?;
                let inputs = r.seq(|r| Ok((arg_of(r.usize()?)?, r.usize()?)))?;
                let outputs = r.seq(|r| Ok((r.str()?, r.usize()?)))?;
                Ok((
                    k,
                    CompiledFunction {
                        program,
                        inputs,
                        outputs,
                    },
                ))
            })?
            .into_iter()
            .collect();
        if r.at != bytes.len() {
            return Err("trailing bytes after a compiled step".into());
        }
        Ok(CompiledStep {
            model,
            scheme,
            kind,
            params,
            state,
            unknowns,
            coordinates,
            velocities,
            invariants,
            initials,
            inputs,
            band,
            pattern,
            exogenous_len,
            observe_size,
            lets,
            metric_size,
            metric_varies,
            frame_check,
            time_slot,
            functions,
        })
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn usize(&mut self, x: usize) {
        self.u64(x as u64);
    }
    fn f64(&mut self, x: f64) {
        self.u64(x.to_bits());
    }
    fn str(&mut self, s: &str) {
        self.usize(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt<T>(&mut self, x: Option<T>, f: impl FnOnce(&mut Self, T)) {
        self.usize(usize::from(x.is_some()));
        if let Some(x) = x {
            f(self, x);
        }
    }
    fn seq<T>(&mut self, xs: &[T], mut f: impl FnMut(&mut Self, &T)) {
        self.usize(xs.len());
        for x in xs {
            f(self, x);
        }
    }
    fn kernel(&mut self, k: Kernel) {
        self.usize(kernel_code(k));
        if let Kernel::Initial(i) = k {
            self.usize(i);
        }
    }
    fn program(&mut self, p: &Program) {
        p.write_bytes(&mut self.0);
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or("a compiled step cut short")?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn usize(&mut self) -> Result<usize, String> {
        usize::try_from(self.u64()?).map_err(|e| e.to_string())
    }
    fn f64(&mut self) -> Result<f64, String> {
        Ok(f64::from_bits(self.u64()?))
    }
    fn str(&mut self) -> Result<String, String> {
        let n = self.usize()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|e| e.to_string())
    }
    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, String>) -> Result<Option<T>, String> {
        match self.usize()? {
            0 => Ok(None),
            1 => f(self).map(Some),
            _ => Err("a compiled step with a bad option".into()),
        }
    }
    fn seq<T>(&mut self, mut f: impl FnMut(&mut Self) -> Result<T, String>) -> Result<Vec<T>, String> {
        let n = self.usize()?;
        // Each element takes at least one byte: a count beyond what is left is corrupt.
        if n > self.bytes.len() - self.at {
            return Err("a compiled step with a bad length".into());
        }
        (0..n).map(|_| f(self)).collect()
    }
    fn kernel(&mut self) -> Result<Kernel, String> {
        match self.usize()? {
            i if i == kernel_code(Kernel::Initial(0)) => Ok(Kernel::Initial(self.usize()?)),
            i => decode(&KERNELS, kernel_code, i, "kernel"),
        }
    }
    fn program(&mut self) -> Result<Program, String> {
        Program::read_bytes(self.bytes, &mut self.at).map_err(|e| format!("a compiled step: {e}"))
    }
}

// Codes are written by exhaustive matches, so that a new kernel, quantity
// kind, argument or scheme does not compile until it has a code; reading
// finds the listed value with the code read (one missing from a list reads
// as unknown, and the step is derived again).

/// The kernels other than `Initial(i)`, whose code is 14.
const KERNELS: [Kernel; 14] = [
    Kernel::Residual,
    Kernel::ResidualJacobian,
    Kernel::Increment,
    Kernel::Predict,
    Kernel::ObserveSystem,
    Kernel::Physical,
    Kernel::Invariants,
    Kernel::InitState,
    Kernel::SensitivityParts,
    Kernel::InputSensitivityParts,
    Kernel::Work,
    Kernel::Lets,
    Kernel::Metric,
    Kernel::FrameCheck,
];

fn kernel_code(k: Kernel) -> usize {
    match k {
        Kernel::Residual => 0,
        Kernel::ResidualJacobian => 1,
        Kernel::Increment => 2,
        Kernel::Predict => 3,
        Kernel::ObserveSystem => 4,
        Kernel::Physical => 5,
        Kernel::Invariants => 6,
        Kernel::InitState => 7,
        Kernel::SensitivityParts => 8,
        Kernel::InputSensitivityParts => 9,
        Kernel::Work => 10,
        Kernel::Lets => 11,
        Kernel::Metric => 12,
        Kernel::FrameCheck => 13,
        Kernel::Initial(_) => 14,
    }
}

const INVARIANTS: [InvariantKind; 8] = [
    InvariantKind::Energy,
    InvariantKind::ForcedEnergy,
    InvariantKind::Momentum,
    InvariantKind::Geometric,
    InvariantKind::Monitored,
    InvariantKind::Constraint,
    InvariantKind::DriftingConstraint,
    InvariantKind::HiddenConstraint,
];

fn invariant_code(k: InvariantKind) -> usize {
    match k {
        InvariantKind::Energy => 0,
        InvariantKind::ForcedEnergy => 1,
        InvariantKind::Momentum => 2,
        InvariantKind::Geometric => 3,
        InvariantKind::Monitored => 4,
        InvariantKind::Constraint => 5,
        InvariantKind::DriftingConstraint => 6,
        InvariantKind::HiddenConstraint => 7,
    }
}

const ARGS: [Arg; Arg::COUNT] = [
    Arg::P,
    Arg::H,
    Arg::Z,
    Arg::X,
    Arg::W,
    Arg::Q,
    Arg::V,
    Arg::Y,
    Arg::E,
    Arg::T,
    Arg::U,
];

fn arg_code(a: Arg) -> usize {
    match a {
        Arg::P => 0,
        Arg::H => 1,
        Arg::Z => 2,
        Arg::X => 3,
        Arg::W => 4,
        Arg::Q => 5,
        Arg::V => 6,
        Arg::Y => 7,
        Arg::E => 8,
        Arg::T => 9,
        Arg::U => 10,
    }
}

fn scheme_code(s: Scheme) -> usize {
    use crate::scheme::Kinematics;
    match s {
        Scheme::Hamel(Kinematics::Midpoint) => 0,
        Scheme::Hamel(Kinematics::Averaged) => 1,
        Scheme::StormerVerlet => 2,
        Scheme::Rattle => 3,
        Scheme::EnergyMomentum => 4,
    }
}

/// The value of `list` whose code is `i`.
fn decode<T: Copy>(list: &[T], code: fn(T) -> usize, i: usize, what: &str) -> Result<T, String> {
    list.iter()
        .copied()
        .find(|&x| code(x) == i)
        .ok_or_else(|| format!("unknown {what} code {i}"))
}

fn scheme_of(i: usize) -> Result<Scheme, String> {
    decode(&Scheme::LIST, scheme_code, i, "scheme")
}
fn invariant_of(i: usize) -> Result<InvariantKind, String> {
    decode(&INVARIANTS, invariant_code, i, "invariant")
}
fn arg_of(i: usize) -> Result<Arg, String> {
    decode(&ARGS, arg_code, i, "argument")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain() -> CompiledStep {
        let src = include_str!("../../../models/spherical_chain_cartesian.hamel");
        let model = crate::model::load_with_sizes("chain.hamel", src, &[("N".into(), 3)]).unwrap();
        CompiledStep::new(&Scheme::Rattle.derive(&model).unwrap()).unwrap()
    }

    #[test]
    fn a_step_read_back_is_the_step_written() {
        let step = chain();
        let bytes = step.to_bytes();
        let back = CompiledStep::from_bytes(&bytes).unwrap();
        // Debug prints every field and every number to its last bit.
        assert_eq!(format!("{back:?}"), format!("{step:?}"));
        assert_eq!(back.to_bytes(), bytes);
    }

    #[test]
    fn every_listed_value_reads_back_as_itself() {
        for k in KERNELS {
            assert_eq!(decode(&KERNELS, kernel_code, kernel_code(k), "kernel"), Ok(k));
        }
        for k in INVARIANTS {
            assert_eq!(invariant_of(invariant_code(k)), Ok(k));
        }
        for a in ARGS {
            assert_eq!(arg_of(arg_code(a)), Ok(a));
        }
        for s in Scheme::LIST {
            assert_eq!(scheme_of(scheme_code(s)), Ok(s));
        }
        assert!(arg_of(Arg::COUNT).is_err());
    }

    #[test]
    fn cut_or_foreign_bytes_are_refused() {
        let bytes = chain().to_bytes();
        for cut in [0, 7, 8, 100, bytes.len() / 2, bytes.len() - 1] {
            assert!(CompiledStep::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(CompiledStep::from_bytes(&longer).is_err());
        assert!(CompiledStep::from_bytes(b"HAMELCS0").is_err());
    }
}
