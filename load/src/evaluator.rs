//! Kernel evaluation for the run-time back-ends: each compiled function's
//! inputs are assembled from its declared argument list, then evaluated by
//! the interpreter or by JIT-compiled code.
//!
//! Arguments are data: a function declares which slots it reads (`p`, `h`,
//! `z`, …) and in which order, and [`Args`] holds the values of every slot.
//! A new kind of input (time, control inputs) is one more [`Slot`], not a new
//! signature.

use std::cell::RefCell;
use std::sync::Arc;

use hamel_compiler::emit::compiled::{CompiledFunction, CompiledStep};
use hamel_compiler::model::family_member;
use hamel_jit::{output_places, Direct, JitCode, OutputArray, Passed};
use hamel_kernel::{Dd, Kernel, Program, Rolled};
use hamel_runtime::native::{passed, Pass, MAX_DIRECT_UNKNOWNS};

use crate::{Backend, LoadError};

/// A kernel input slot: the argument arrays compiled functions declare.
pub use hamel_kernel::Arg as Slot;

/// The values of the slots one call provides (unset slots are empty).
#[derive(Clone, Copy, Debug, Default)]
pub struct Args<'a> {
    slots: [&'a [f64]; Slot::COUNT],
}

impl<'a> Args<'a> {
    /// Sets slot `s`.
    pub fn with(mut self, s: Slot, values: &'a [f64]) -> Self {
        self.slots[s as usize] = values;
        self
    }

    fn get(&self, s: Slot) -> &'a [f64] {
        self.slots[s as usize]
    }
}

/// What a function's compiled code writes of its last output array (a
/// Newton Jacobian's).
#[derive(Clone, Debug)]
enum Written {
    /// all of it
    Whole,
    /// its band and the rows its LU fills in (see [`band_outputs`])
    Band,
    /// the values of the Jacobian pattern's entries, into an array of their
    /// own (see [`pattern_outputs`]); their positions in the matrix
    Pattern(Arc<[usize]>),
}

/// Most output arrays of one function (the Newton system's: residual and Jacobian).
const MAX_OUTPUT_ARRAYS: usize = 4;

/// The functions of a compiled step, ready to evaluate with one back-end.
pub struct Evaluator {
    names: Vec<Kernel>,
    /// declared argument slots and their lengths, per function
    inputs: Vec<Vec<(Slot, usize)>>,
    programs: Arc<[Program]>,
    /// shared by clones: native code is read-only once compiled
    jit: Option<Arc<JitCode>>,
    /// per function: what its compiled code writes of its last output array
    written: Vec<Written>,
    /// per function: its direct entry's index in the JIT's code, where it
    /// has one (see [`direct_args`])
    direct: Vec<Option<usize>>,
    /// per function: interpreted although the back-end is the JIT (see
    /// [`COLD`])
    interpreted: Vec<bool>,
    scratch: RefCell<Scratch>,
}

/// Kernels a run calls rarely (the health kernels, when it checks a state;
/// the state from physical data, once per run): when one has more than
/// [`COLD_JIT_MAX`] instructions the JIT leaves it to the interpreter, as
/// compiling it would cost more than all its calls. Before these kernels
/// read a chain's tableau (products with a direction, members as locals),
/// the 128-link director chain's metric (223,037 instructions) and initial
/// state (126,535) were about half of what the JIT compiled; a long chain
/// written without a tableau still has them quadratic in its length.
const COLD: [Kernel; 3] = [Kernel::Metric, Kernel::FrameCheck, Kernel::InitState];

/// See [`COLD`].
const COLD_JIT_MAX: usize = 20_000;

/// The kernels the fixed-size drivers call, which get direct entries.
const HOT: [Kernel; 4] = [
    Kernel::Residual,
    Kernel::ResidualJacobian,
    Kernel::Increment,
    Kernel::Predict,
];

/// How a function reading `inputs` receives them through a direct entry
/// (see [`passed`]) for `nx` unknowns: `None` where an array is not one a
/// direct entry takes, or is passed by value at a length other than `nx`
/// (or `1`, for `h`), or the unknowns are too many.
fn direct_args(inputs: &[(Slot, usize)], nx: usize) -> Option<Vec<Passed>> {
    if nx > MAX_DIRECT_UNKNOWNS {
        return None;
    }
    inputs
        .iter()
        .map(|&(s, n)| match passed(s)? {
            Pass::Table(k) => Some(Passed::Table(k)),
            Pass::Values(0) => (n == 1).then_some(Passed::Values(0)),
            Pass::Values(k) => (n == nx).then_some(Passed::Values(k)),
        })
        .collect()
}

/// Programs of more instructions than this run as a loop where they repeat
/// per link (see [`rolled_plan`]).
pub(crate) const ROLL_ABOVE: usize = 2000;

/// The loop the JIT runs program `p` as, where it is long and repeats per
/// member of an indexed family (a chain's link): each input of the state or
/// the unknowns belongs to the member its name indexes first (`e[12][1]`:
/// 12), the others to none.
fn rolled_plan(step: &CompiledStep, p: &Program, slots: &[(Slot, usize)], outs: &[OutputArray]) -> Option<Rolled> {
    if p.instrs.len() <= ROLL_ABOVE {
        return None;
    }
    let mut members = Vec::with_capacity(p.n_inputs);
    for &(slot, len) in slots {
        let names = match slot {
            Slot::Z => Some(&step.state),
            Slot::X | Slot::W => Some(&step.unknowns),
            _ => None,
        };
        members.extend((0..len).map(|i| names.and_then(|n| n.get(i)).and_then(|n| family_member(n))));
    }
    if members.len() != p.n_inputs {
        return None;
    }
    let places = output_places(outs);
    if places.len() != p.outputs.len() {
        return None;
    }
    Rolled::plan(p, &members, &places)
}

/// The residual-and-Jacobian program `p` (output arrays `outs`: the residual,
/// then the `n × n` Jacobian column-major) reduced to the residual and the
/// values of the entries of `pattern` (`(row, column)`), in its order: the
/// program, and the positions of those entries in the matrix. `None` where
/// an entry outside the pattern is not the constant zero.
fn pattern_outputs(p: &Program, outs: &[usize], n: usize, pattern: &[(u32, u32)]) -> Option<(Program, Vec<usize>)> {
    if outs != [n, n * n] || pattern.is_empty() {
        return None;
    }
    let zero = |r: u32| {
        let r = r as usize;
        r >= p.n_inputs && r < p.result_base() && p.consts[r - p.n_inputs].to_bits() == 0
    };
    let mut listed = vec![false; n * n];
    let mut at = Vec::with_capacity(pattern.len());
    for &(r, c) in pattern {
        let (r, c) = (r as usize, c as usize);
        if r >= n || c >= n {
            return None;
        }
        listed[c * n + r] = true;
        at.push(c * n + r);
    }
    if listed.iter().zip(&p.outputs[n..]).any(|(&l, &r)| !l && !zero(r)) {
        return None;
    }
    let mut q = p.clone();
    q.outputs.truncate(n);
    q.outputs.extend(at.iter().map(|&e| p.outputs[n + e]));
    Some((q, at))
}

/// The residual-and-Jacobian program `p` (output arrays `outs`: the residual,
/// then the `n × n` Jacobian column-major) reduced to the residual and the
/// Jacobian's entries a banded LU reads or fills in, `(kl, ku)` the band:
/// the program, and the positions of the entries kept in the matrix. `None`
/// where the LU is dense (a band as wide as the matrix) or where an entry
/// outside the band is not the constant zero.
fn band_outputs(p: &Program, outs: &[usize], n: usize, (kl, ku): (usize, usize)) -> Option<(Program, Vec<usize>)> {
    if outs != [n, n * n] || kl + ku + 1 >= n {
        return None;
    }
    let kept = |i: usize, j: usize| i <= j + kl && j <= i + kl + ku;
    let zero = |r: u32| {
        let r = r as usize;
        r >= p.n_inputs && r < p.result_base() && p.consts[r - p.n_inputs].to_bits() == 0
    };
    let mut q = p.clone();
    q.outputs.truncate(n);
    let mut at = Vec::new();
    for j in 0..n {
        for i in 0..n {
            let r = p.outputs[n + j * n + i];
            if kept(i, j) {
                q.outputs.push(r);
                at.push(j * n + i);
            } else if !zero(r) {
                return None;
            }
        }
    }
    Some((q, at))
}

/// A clone shares the programs and the native code and has its own scratch
/// space, so each thread of an ensemble evaluates with its own clone.
impl Clone for Evaluator {
    fn clone(&self) -> Evaluator {
        Evaluator {
            names: self.names.clone(),
            inputs: self.inputs.clone(),
            programs: Arc::clone(&self.programs),
            jit: self.jit.clone(),
            written: self.written.clone(),
            direct: self.direct.clone(),
            interpreted: self.interpreted.clone(),
            scratch: RefCell::new(Scratch::default()),
        }
    }
}

#[derive(Default)]
struct Scratch {
    /// the JIT's scratch values (split functions)
    jit: Vec<f64>,
    inputs: Vec<f64>,
    regs: Vec<f64>,
    regs_dd: Vec<Dd>,
    /// the concatenated outputs of [`Evaluator::eval_split`]
    split: Vec<f64>,
    /// a pattern's values, scattered into a matrix (see [`Written::Pattern`])
    values: Vec<f64>,
    /// the dropped outputs of [`Evaluator::eval_tail`]
    head: Vec<f64>,
}

impl std::fmt::Debug for Evaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluator")
            .field("functions", &self.names)
            .field("jit", &self.jit.is_some())
            .finish_non_exhaustive()
    }
}

/// Index of a function in [`Evaluator`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FnId(usize);

impl Evaluator {
    /// Prepares every function of `step` for `backend` (JIT: compiles them all now).
    pub fn new(step: &CompiledStep, backend: Backend) -> Result<Evaluator, LoadError> {
        Self::new_kept(step, backend, None)
    }

    /// [`Evaluator::new`], with the JIT's machine code loaded from a cache
    /// entry if it holds code for these programs (else compiled and kept).
    pub(crate) fn new_kept(
        step: &CompiledStep,
        backend: Backend,
        cache: Option<(&crate::Cache, &crate::cache::Entry)>,
    ) -> Result<Evaluator, LoadError> {
        Self::with_cold_limit(step, backend, cache, COLD_JIT_MAX)
    }

    /// [`Evaluator::new_kept`] with the threshold of [`COLD`] at `cold_max`
    /// instructions (tests force it).
    fn with_cold_limit(
        step: &CompiledStep,
        backend: Backend,
        cache: Option<(&crate::Cache, &crate::cache::Entry)>,
        cold_max: usize,
    ) -> Result<Evaluator, LoadError> {
        let mut names = Vec::new();
        let mut inputs = Vec::new();
        let mut programs = Vec::new();
        let mut out_lengths = Vec::new();
        for (
            name,
            CompiledFunction {
                program,
                inputs: ins,
                outputs: outs,
            },
        ) in step.functions()
        {
            let slots = ins.clone();
            if outs.len() > MAX_OUTPUT_ARRAYS {
                return Err(LoadError::Scheme(format!(
                    "internal error: `{name}` declares {} output arrays",
                    outs.len()
                )));
            }
            if slots.len() > Slot::COUNT {
                return Err(LoadError::Scheme(format!(
                    "internal error: `{name}` declares {} argument arrays",
                    slots.len()
                )));
            }
            names.push(name);
            inputs.push(slots);
            programs.push(program.clone());
            out_lengths.push(outs.iter().map(|(_, n)| *n).collect::<Vec<usize>>());
        }
        let mut written = vec![Written::Whole; names.len()];
        let mut direct = vec![None; names.len()];
        let interpreted: Vec<bool> = names
            .iter()
            .zip(&programs)
            .map(|(name, p)| backend == Backend::Jit && COLD.contains(name) && p.instrs.len() > cold_max)
            .collect();
        // What the JIT compiles in an interpreted function's place: nothing.
        let nothing = Program::default();
        let jit = match backend {
            Backend::Interpreter => None,
            Backend::Jit => {
                let lengths: Vec<Vec<usize>> = inputs.iter().map(|s| s.iter().map(|&(_, n)| n).collect()).collect();
                // A banded Jacobian is written as the values of its pattern's
                // entries, which a sparse LU reads (the rest of the matrix,
                // O(n²) stores of zeros, a 256-unknown chain's 65,536 against
                // 3,300 in its band, is not written, and the matrix is not
                // touched); without a pattern, as its band and the rows its
                // LU fills in, the rest of the matrix staying zero.
                let banded: Vec<Option<(Program, Vec<usize>, bool)>> = names
                    .iter()
                    .zip(&programs)
                    .zip(&out_lengths)
                    .map(|((&name, p), outs)| {
                        let n = step.unknowns.len();
                        let band = step.band.filter(|_| name == Kernel::ResidualJacobian)?;
                        pattern_outputs(p, outs, n, &step.pattern)
                            .map(|(q, at)| (q, at, true))
                            .or_else(|| band_outputs(p, outs, n, band).map(|(q, at)| (q, at, false)))
                    })
                    .collect();
                let arrays: Vec<Vec<OutputArray>> = out_lengths
                    .iter()
                    .zip(&banded)
                    .map(|(outs, b)| {
                        let mut a: Vec<OutputArray> = outs.iter().map(|&len| OutputArray { len, at: None }).collect();
                        match (b, a.last_mut()) {
                            (Some((_, at, true)), Some(last)) => last.len = at.len(),
                            (Some((_, at, false)), Some(last)) => last.at = Some(at),
                            _ => {}
                        }
                        a
                    })
                    .collect();
                let refs: Vec<(&Program, &[usize], &[OutputArray])> = programs
                    .iter()
                    .zip(&banded)
                    .zip(&lengths)
                    .zip(&arrays)
                    .zip(&interpreted)
                    .map(|((((p, b), l), o), &skip)| match skip {
                        true => (&nothing, &[][..], &[][..]),
                        false => (b.as_ref().map_or(p, |(q, _, _)| q), &l[..], &o[..]),
                    })
                    .collect();
                for (w, b) in written.iter_mut().zip(&banded) {
                    *w = match b {
                        Some((_, at, true)) => Written::Pattern(at.as_slice().into()),
                        Some(_) => Written::Band,
                        None => Written::Whole,
                    };
                }
                // Each hot kernel (the first function of its name, as
                // `System` looks it up) that writes whole arrays also gets
                // a direct entry.
                let nx = step.unknowns.len();
                let wanted: Vec<(usize, Vec<Passed>)> = HOT
                    .iter()
                    .filter_map(|&k| {
                        let f = names.iter().position(|&n| n == k)?;
                        Some((f, direct_args(&inputs[f], nx).filter(|_| banded[f].is_none())?))
                    })
                    .collect();
                let direct_list: Vec<Direct> = wanted
                    .iter()
                    .map(|(f, args)| Direct {
                        program: *f,
                        args,
                        values: 1 + nx,
                    })
                    .collect();
                for (j, (f, _)) in wanted.iter().enumerate() {
                    direct[*f] = Some(j);
                }
                let plans: Vec<Option<Rolled>> = refs
                    .iter()
                    .zip(&inputs)
                    .map(|(&(p, _, outs), slots)| rolled_plan(step, p, slots, outs))
                    .collect();
                let plans: Vec<Option<&Rolled>> = plans.iter().map(Option::as_ref).collect();
                let jit_err = |e: hamel_jit::JitError| LoadError::Jit(e.to_string());
                let kept = cache
                    .and_then(|(c, entry)| JitCode::load_direct(&refs, &direct_list, &plans, &c.code(entry)?).ok());
                let code = match (kept, cache) {
                    (Some(code), _) => code,
                    (None, None) => {
                        JitCode::compile_direct(&refs, &direct_list, &plans, false)
                            .map_err(jit_err)?
                            .0
                    }
                    (None, Some((c, entry))) => {
                        let (code, bytes) =
                            JitCode::compile_direct(&refs, &direct_list, &plans, true).map_err(jit_err)?;
                        if let Some(bytes) = bytes {
                            c.keep_code(entry, &bytes);
                        }
                        code
                    }
                };
                Some(Arc::new(code))
            }
        };
        Ok(Evaluator {
            names,
            inputs,
            programs: programs.into(),
            jit,
            written,
            direct,
            interpreted,
            scratch: RefCell::new(Scratch::default()),
        })
    }

    /// The JIT's code for function `f`: `None` where `f` is interpreted.
    fn code(&self, f: FnId) -> Option<&Arc<JitCode>> {
        self.jit.as_ref().filter(|_| !self.interpreted[f.0])
    }

    /// Function `f`'s direct entry (the JIT's; see
    /// [`hamel_runtime::native::passed`]), the scratch values it uses, and
    /// the code it lives in: `None` unless `f` is a hot kernel compiled
    /// with one.
    pub fn native(&self, f: FnId) -> Option<(hamel_runtime::native::DirectFn, usize, Arc<JitCode>)> {
        let code = self.code(f)?;
        let j = self.direct[f.0]?;
        Some((code.direct_entry(j), code.scratch_len(f.0), Arc::clone(code)))
    }

    /// The argument arrays function `f` reads, and their lengths.
    pub fn inputs(&self, f: FnId) -> &[(Slot, usize)] {
        &self.inputs[f.0]
    }

    /// The lengths of function `f`'s output arrays in compiled code (`None`
    /// when interpreted).
    pub fn output_arrays(&self, f: FnId) -> Option<&[usize]> {
        Some(self.code(f)?.output_arrays(f.0))
    }

    /// The loops function `f`'s compiled code runs, where it runs as loops
    /// (see [`Rolled`]): each one's iterations and the instructions of each.
    pub fn loop_shape(&self, f: FnId) -> Option<Vec<(usize, usize)>> {
        self.code(f)?.loop_shapes(f.0).map(<[_]>::to_vec)
    }

    /// Whether function `f` writes only the band of its last output array,
    /// or only a pattern's entries (see [`Evaluator::eval_split_band`]).
    pub fn writes_band(&self, f: FnId) -> bool {
        !matches!(self.written[f.0], Written::Whole)
    }

    /// How many values function `f` writes of its last output array when
    /// it writes them as the values of a Jacobian pattern's entries (see
    /// [`Evaluator::eval_pattern`]); `None` if it does not.
    pub fn writes_pattern(&self, f: FnId) -> Option<usize> {
        match &self.written[f.0] {
            Written::Pattern(at) => Some(at.len()),
            _ => None,
        }
    }

    /// Evaluates function `f`, which [writes a pattern's
    /// values](Evaluator::writes_pattern), into `outs`, its last array the
    /// values of the pattern's entries in the pattern's order.
    ///
    /// # Panics
    /// If `f` does not write a pattern's values, or the lengths differ.
    pub fn eval_pattern(&self, f: FnId, args: &Args, outs: &mut [&mut [f64]]) {
        let code = self.code(f).filter(|_| self.writes_pattern(f).is_some());
        let code = code.unwrap_or_else(|| panic!("`{}` does not write a pattern's values", self.names[f.0]));
        self.call_in_place(code, f, args, outs);
    }

    /// The JIT's call of `f` into `outs`, one slice per compiled output
    /// array, each of the compiled length.
    fn call_in_place(&self, code: &JitCode, f: FnId, args: &Args, outs: &mut [&mut [f64]]) {
        let lengths = code.output_arrays(f.0);
        assert!(
            outs.len() == lengths.len() && outs.iter().zip(lengths).all(|(o, &n)| o.len() == n),
            "`{}`: output lengths",
            self.names[f.0]
        );
        let mut ptrs = [std::ptr::null_mut::<f64>(); MAX_OUTPUT_ARRAYS];
        for (p, o) in ptrs.iter_mut().zip(outs.iter_mut()) {
            *p = o.as_mut_ptr();
        }
        self.call_jit(code, f, args, &ptrs);
    }

    /// [`Evaluator::eval_split_band`] of a function that writes a pattern's
    /// values (at positions `at` of its Jacobian, the second of its two
    /// arrays: see [`pattern_outputs`]): evaluated into scratch, then
    /// scattered (the other entries left as they are).
    ///
    /// # Panics
    /// If `outs` is not two arrays.
    fn eval_scattered(&self, code: &JitCode, f: FnId, args: &Args, at: &[usize], outs: &mut [&mut [f64]]) {
        let [r, matrix] = outs else {
            panic!("`{}`: a residual and a Jacobian", self.names[f.0]);
        };
        let mut values = std::mem::take(&mut self.scratch.borrow_mut().values);
        values.resize(at.len(), 0.0);
        self.call_in_place(code, f, args, &mut [&mut **r, &mut values]);
        for (&e, &v) in at.iter().zip(&values) {
            matrix[e] = v;
        }
        self.scratch.borrow_mut().values = values;
    }

    /// The back-end evaluating these kernels.
    pub fn backend(&self) -> Backend {
        if self.jit.is_some() {
            Backend::Jit
        } else {
            Backend::Interpreter
        }
    }

    /// The function called `name`, if the step has one.
    pub fn id(&self, k: Kernel) -> Option<FnId> {
        self.names.iter().position(|n| *n == k).map(FnId)
    }

    /// Number of outputs of function `f`.
    pub fn outputs(&self, f: FnId) -> usize {
        self.programs[f.0].outputs.len()
    }

    /// The values of slot `s` for function `f`, checked to have the declared length `n`.
    fn arg<'a>(&self, f: FnId, args: &Args<'a>, s: Slot, n: usize) -> &'a [f64] {
        let v = args.get(s);
        assert_eq!(
            v.len(),
            n,
            "`{}`: slot {s:?} has {} values, expected {n}",
            self.names[f.0],
            v.len()
        );
        v
    }

    /// Evaluates function `f` on `args` into `out` (its outputs concatenated).
    ///
    /// # Panics
    /// If a slot the function reads has the wrong length.
    pub fn eval(&self, f: FnId, args: &Args, out: &mut [f64]) {
        assert_eq!(
            out.len(),
            self.programs[f.0].outputs.len(),
            "`{}`: output length",
            self.names[f.0]
        );
        if let Some(code) = self.code(f) {
            let lengths = code.output_arrays(f.0);
            if let Written::Pattern(positions) = &self.written[f.0] {
                // The matrix, whole, from the pattern's values (a residual
                // and a Jacobian: see `pattern_outputs`).
                let (r, matrix) = out.split_at_mut(lengths[0]);
                matrix.fill(0.0);
                self.eval_scattered(code, f, args, positions, &mut [r, matrix]);
                return;
            }
            let mut outs = [std::ptr::null_mut::<f64>(); MAX_OUTPUT_ARRAYS];
            let mut at = 0;
            for (p, &n) in outs.iter_mut().zip(lengths) {
                *p = out[at..at + n].as_mut_ptr();
                at += n;
            }
            if matches!(self.written[f.0], Written::Band) {
                // Only the band is written: the rest of the matrix is zero.
                out[at - lengths.last().copied().unwrap_or(0)..].fill(0.0);
            }
            self.call_jit(code, f, args, &outs);
            return;
        }
        let mut guard = self.scratch.borrow_mut();
        let Scratch { inputs, regs, .. } = &mut *guard;
        inputs.clear();
        for &(s, n) in &self.inputs[f.0] {
            inputs.extend_from_slice(self.arg(f, args, s, n));
        }
        self.programs[f.0].eval_into(inputs, regs, out);
    }

    /// The JIT's call of `f`, writing output array `a` at `outs[a]`.
    fn call_jit(&self, code: &JitCode, f: FnId, args: &Args, outs: &[*mut f64; MAX_OUTPUT_ARRAYS]) {
        assert!(
            code.output_arrays(f.0).len() <= MAX_OUTPUT_ARRAYS,
            "`{}`: too many output arrays",
            self.names[f.0]
        );
        // The JIT reads the argument arrays in place.
        let mut ptrs = [std::ptr::null::<f64>(); Slot::COUNT];
        for (p, &(s, n)) in ptrs.iter_mut().zip(&self.inputs[f.0]) {
            *p = self.arg(f, args, s, n).as_ptr();
        }
        let mut guard = self.scratch.borrow_mut();
        let tmp = &mut guard.jit;
        tmp.resize(tmp.len().max(code.scratch_len(f.0)), 0.0);
        // SAFETY: one pointer per declared argument array (a function has at
        // most one array per slot), each checked for its length; scratch of
        // at least `scratch_len` values; one pointer per output array, each
        // (the callers' contract) valid for that array's length.
        unsafe { code.call_raw(f.0, ptrs.as_ptr(), tmp.as_mut_ptr(), outs.as_ptr()) };
    }

    /// Evaluates function `f` on `args` into `outs`, one slice per output
    /// array of the function, in order (their lengths must add up to its
    /// output count).
    pub fn eval_split(&self, f: FnId, args: &Args, outs: &mut [&mut [f64]]) {
        if self.writes_band(f) {
            if let Some(last) = outs.last_mut() {
                last.fill(0.0);
            }
        }
        self.eval_split_band(f, args, outs)
    }

    /// [`Evaluator::eval_split`], except that a function that
    /// [writes a band](Evaluator::writes_band) leaves the entries of its
    /// last array outside the band and its LU fill-in as they are: zero, in
    /// a matrix that only a banded LU has overwritten since.
    pub fn eval_split_band(&self, f: FnId, args: &Args, outs: &mut [&mut [f64]]) {
        if let Some(code) = self.code(f) {
            if let Written::Pattern(at) = &self.written[f.0] {
                return self.eval_scattered(code, f, args, at, outs);
            }
            // In place: no copy of (large) Jacobians.
            self.call_in_place(code, f, args, outs);
            return;
        }
        let all = self.eval_to_scratch(f, args);
        let mut at = 0;
        for o in outs.iter_mut() {
            o.copy_from_slice(&all[at..at + o.len()]);
            at += o.len();
        }
        assert_eq!(at, all.len(), "`{}`: output lengths", self.names[f.0]);
        self.scratch.borrow_mut().split = all;
    }

    /// Evaluates function `f`, whose two output arrays have `from` and
    /// `out.len()` values, on `args`, writing the second into `out` (the
    /// first, such as a residual next to its Jacobian, is dropped).
    pub fn eval_tail(&self, f: FnId, args: &Args, from: usize, out: &mut [f64]) {
        let mut head = std::mem::take(&mut self.scratch.borrow_mut().head);
        head.resize(from, 0.0);
        self.eval_split(f, args, &mut [&mut head[..], out]);
        self.scratch.borrow_mut().head = head;
    }

    /// Every output of `f` into the split buffer, taken out of the scratch
    /// for the caller to put back (so that nothing allocates once it is grown).
    fn eval_to_scratch(&self, f: FnId, args: &Args) -> Vec<f64> {
        let mut all = std::mem::take(&mut self.scratch.borrow_mut().split);
        all.resize(self.outputs(f), 0.0);
        self.eval(f, args, &mut all);
        all
    }

    /// Evaluates function `f` in double-double arithmetic with slot `s` at
    /// `args[s] + lo` (compensated runs); every other input and constant
    /// enters with a zero low part. Always interpreted: the JIT compiles `f64`
    /// code only, and the interpreter's double-double follows the same order
    /// as the derived `*_dd` functions.
    pub fn eval_dd(&self, f: FnId, args: &Args, s: Slot, lo: &[f64], out: &mut [f64]) {
        let mut guard = self.scratch.borrow_mut();
        let Scratch { regs_dd, .. } = &mut *guard;
        let values = self.inputs[f.0].iter().flat_map(|&(slot, n)| {
            let hi = args.get(slot);
            debug_assert_eq!(hi.len(), n);
            (0..n).map(move |k| {
                if slot == s {
                    Dd::new(hi[k], lo[k])
                } else {
                    Dd::from(hi[k])
                }
            })
        });
        self.programs[f.0].eval_with(values, regs_dd, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The threshold of [`COLD`], forced: a chain's metric and initial
    /// state past it are interpreted under the JIT, with the values the
    /// all-interpreter evaluator gives to the bit; the hot kernels are
    /// compiled.
    #[test]
    fn long_cold_kernels_are_interpreted_with_the_same_bits() {
        let path = format!("{}/../models/spherical_chain.hamel", env!("CARGO_MANIFEST_DIR"));
        let model = crate::read_model(path.as_ref(), &[("N".to_string(), 6)]).unwrap();
        let sys = "hamel".parse::<crate::Scheme>().unwrap().derive(&model).unwrap();
        let step = CompiledStep::new(&sys).unwrap();
        let cold_max = 100;
        let jit = Evaluator::with_cold_limit(&step, Backend::Jit, None, cold_max).unwrap();
        let interp = Evaluator::with_cold_limit(&step, Backend::Interpreter, None, cold_max).unwrap();
        for k in [Kernel::Metric, Kernel::InitState] {
            let f = jit.id(k).unwrap();
            assert!(step
                .functions()
                .any(|(n, c)| n == k && c.program.instrs.len() > cold_max));
            assert!(jit.output_arrays(f).is_none(), "{k:?} interpreted");
            let values: Vec<Vec<f64>> = jit
                .inputs(f)
                .iter()
                .map(|&(_, n)| (0..n).map(|i| 0.3 + 0.01 * i as f64).collect())
                .collect();
            let args = jit
                .inputs(f)
                .iter()
                .zip(&values)
                .fold(Args::default(), |a, (&(s, _), v)| a.with(s, v));
            let (mut a, mut b) = (vec![0.0; jit.outputs(f)], vec![1.0; jit.outputs(f)]);
            jit.eval(f, &args, &mut a);
            interp.eval(f, &args, &mut b);
            assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()), "{k:?}");
        }
        let hot = jit.id(Kernel::ResidualJacobian).unwrap();
        assert!(jit.output_arrays(hot).is_some(), "the step's kernels are compiled");
    }
}
