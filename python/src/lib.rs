//! The `hamel` Python package's native module (`hamel._hamel`): model files
//! loaded and stepped by the run-time back-end of [`hamel_load`], with NumPy
//! arrays in and out. Rust runs with the interpreter detached (the GIL
//! released), so Python threads and ensembles on every core overlap.

#![warn(missing_docs)]
// pyo3's `#[pymethods]` expand to code clippy flags in user crates.
#![allow(clippy::useless_conversion)]

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hamel_load::ensemble::MemberError;
use hamel_load::{Backend, LoadError, Member, Run, RunError, RunOptions, Scheme, System};
use hamel_runtime::nalgebra::Dyn;
use hamel_runtime::{DynState, Kernels, NewtonOptions, OwnedStepper};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

create_exception!(_hamel, HamelError, PyException, "Base class of hamel's errors.");
create_exception!(
    _hamel,
    ModelError,
    HamelError,
    "A model file that cannot be read or has errors (the message locates each one)."
);
create_exception!(
    _hamel,
    SchemeError,
    HamelError,
    "A scheme that is unknown or does not apply to the model."
);
create_exception!(
    _hamel,
    StepError,
    HamelError,
    "A step that failed (step number, residual norm, iterations); `run` holds the run up to there."
);

fn load_err(e: LoadError) -> PyErr {
    match e {
        LoadError::Read { .. } | LoadError::Model(_) => ModelError::new_err(e.to_string()),
        LoadError::Scheme(_) | LoadError::Jit(_) => SchemeError::new_err(e.to_string()),
        LoadError::Usage(_) => PyValueError::new_err(e.to_string()),
        LoadError::State(_) => StepError::new_err(e.to_string()),
    }
}

fn step_err(e: hamel_runtime::StepError) -> PyErr {
    StepError::new_err(e.to_string())
}

/// What a `Model` holds: the validated model and its compiled schemes.
struct Inner {
    path: String,
    /// the model file's text and the sizes given, for the size guard of a
    /// scheme's first derivation ([`hamel_load::check_cost`])
    src: String,
    sizes: Vec<(String, i64)>,
    model: hamel_load::Model,
    backend: Backend,
    /// parameter values given to the constructor (struct-field spelling)
    params: Vec<(String, f64)>,
    /// compiled steps by (scheme, with sensitivity); cloned out for each use
    /// (clones share the native code)
    systems: Mutex<HashMap<(&'static str, bool), System>>,
}

impl Inner {
    /// The compiled scheme with the model's parameters set (compiled once).
    fn system(&self, scheme: Scheme, sensitivity: bool) -> Result<System, LoadError> {
        let mut cache = self.systems.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = cache.get(&(scheme.name(), sensitivity)) {
            return Ok(s.clone());
        }
        // Derivations and machine code kept between sessions, as the CLI
        // keeps them (`HAMEL_CACHE=off` turns it off); the step with its
        // sensitivity is derived every time.
        let kept = if sensitivity {
            None
        } else {
            hamel_load::Cache::from_env()
        };
        // A size too large to derive this scheme in reasonable time is
        // refused now, with its estimate, before the derivation starts.
        hamel_load::check_cost(
            &self.path,
            &self.src,
            &self.sizes,
            &self.model,
            &[scheme],
            kept.as_ref(),
        )?;
        let mut sys = if sensitivity {
            hamel_load::compile_with_sensitivity(&self.model, scheme, self.backend)?
        } else {
            hamel_load::compile_cached(&self.model, scheme, self.backend, kept.as_ref())?
        };
        for (n, x) in &self.params {
            sys.set_param(n, *x).map_err(LoadError::Usage)?;
        }
        cache.insert((scheme.name(), sensitivity), sys.clone());
        Ok(sys)
    }
}

fn parse_scheme(name: &str) -> PyResult<Scheme> {
    Scheme::from_names(name, None).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `sys` taking steps of order `order` (the keyword argument `order`).
fn with_order(mut sys: System, order: u32) -> PyResult<System> {
    sys.set_order(order)
        .map_err(|e| PyValueError::new_err(format!("order={order}: {e}")))?;
    Ok(sys)
}

fn parse_backend(name: &str) -> PyResult<Backend> {
    name.parse().map_err(load_err)
}

/// `{"x": [1, 2, 3], "th": 0.5}` → state overrides.
fn overrides(state: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, Vec<f64>)>> {
    let Some(d) = state else { return Ok(Vec::new()) };
    d.iter()
        .map(|(k, v)| {
            let name: String = k.extract()?;
            let values: Vec<f64> = match v.extract::<f64>() {
                Ok(x) => vec![x],
                Err(_) => v.extract().map_err(|_| {
                    PyValueError::new_err(format!("state `{name}`: expected a number or a sequence of numbers"))
                })?,
            };
            Ok((name, values))
        })
        .collect()
}

fn param_pairs(params: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, f64)>> {
    let Some(d) = params else { return Ok(Vec::new()) };
    d.iter()
        .map(|(k, v)| {
            let name: String = k.extract()?;
            let x: f64 = v
                .extract()
                .map_err(|_| PyValueError::new_err(format!("parameter `{name}`: expected a number")))?;
            Ok((name, x))
        })
        .collect()
}

/// Number of steps from `steps` or `t_end` ([`hamel_load::step_count`], the
/// CLI's rule), refused as a `ValueError` naming the arguments.
fn step_count(h: f64, steps: Option<i128>, t_end: Option<f64>) -> PyResult<u64> {
    use hamel_load::LengthError as L;
    hamel_load::step_count(h, steps, t_end).map_err(|e| {
        PyValueError::new_err(match (&e, steps, t_end) {
            (L::StepSize(_), ..) => format!("h = {h}: {e}"),
            (L::Neither | L::Both, ..) => "give steps or t_end (one of them)".to_string(),
            (_, _, Some(t)) => format!("t_end = {t} with h = {h}: {e}"),
            (_, Some(n), None) => format!("steps = {n}: {e}"),
            _ => e.to_string(),
        })
    })
}

/// A recording interval (`every=`) or a thread count (`threads=`): a
/// non-negative integer, refused as a `ValueError` naming the argument.
fn count(name: &str, n: i64) -> PyResult<u64> {
    u64::try_from(n).map_err(|_| PyValueError::new_err(format!("{name} = {n}: expected a non-negative integer")))
}

/// A vector of numbers from any sequence or 1-D array of numbers (floats,
/// ints, NumPy arrays of any numeric type); `name` is the argument.
fn vector(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, f64>>() {
        return Ok(a.as_array().to_vec());
    }
    if obj.is_instance_of::<pyo3::types::PyString>() {
        return Err(PyValueError::new_err(format!(
            "{name}: expected a sequence of numbers, got a string"
        )));
    }
    obj.extract::<Vec<f64>>().map_err(|_| {
        PyValueError::new_err(format!(
            "{name}: expected a sequence (list, tuple or 1-D array) of numbers, got {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "?".into())
        ))
    })
}

/// Runs `f` (Rust work), turning a panic (a bug) into a `HamelError` with
/// its message: no `PanicException` (which escapes `except Exception`)
/// reaches Python.
fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(HamelError::new_err(format!(
            "internal error (please report it): {}",
            hamel_load::ensemble::panic_message(&*p)
        )))
    })
}

/// How often a long run looks for Ctrl-C (Python's signal handlers run only
/// when asked, and the run holds no GIL).
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// Runs an ensemble on its own threads while this one (Python's main
/// thread, usually) looks for Ctrl-C every 10 ms and stops the members when
/// it comes; returns the results and the `KeyboardInterrupt`, if any.
#[allow(clippy::type_complexity)]
fn ensemble_watching_signals(
    sys: System,
    members: &[Member],
    opt: &RunOptions,
    threads: Option<usize>,
) -> PyResult<(Vec<Result<Run, MemberError>>, Option<PyErr>)> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let stop = &stop;
        // `System` is not `Sync`: the ensemble's thread takes it.
        let job = scope.spawn(move || hamel_load::ensemble::run_many_until(&sys, members, opt, threads, stop));
        let mut interrupt = None;
        while !job.is_finished() {
            std::thread::sleep(Duration::from_millis(10));
            if interrupt.is_none() {
                interrupt = Python::attach(|py| py.check_signals()).err();
                if interrupt.is_some() {
                    stop.store(true, Ordering::Relaxed);
                }
            }
        }
        let results = job
            .join()
            .map_err(|p| {
                HamelError::new_err(format!(
                    "internal error (please report it): {}",
                    hamel_load::ensemble::panic_message(&*p)
                ))
            })?
            .map_err(load_err)?;
        Ok((results, interrupt))
    })
}

/// A `go_on` for [`hamel_load::run::run_until`]: false once Python has a
/// pending signal whose handler raised (Ctrl-C's `KeyboardInterrupt`), which
/// is kept in `raised`. Checked at most every [`SIGNAL_CHECK`].
fn signal_watch(raised: &mut Option<PyErr>) -> impl FnMut(u64) -> bool + '_ {
    let mut last = Instant::now();
    move |_| {
        if raised.is_none() && last.elapsed() >= SIGNAL_CHECK {
            last = Instant::now();
            *raised = Python::attach(|py| py.check_signals()).err();
        }
        raised.is_none()
    }
}

/// The Newton options of the keyword arguments `newton_tol` and
/// `newton_max_iter` (the defaults where `None`), refused with the argument
/// named where no solve can honour them.
fn newton_options(tol: Option<f64>, max_iter: Option<i64>) -> PyResult<NewtonOptions> {
    let mut newton = NewtonOptions::default();
    if let Some(tol) = tol {
        if !(tol.is_finite() && tol > 0.0) {
            return Err(PyValueError::new_err(format!(
                "newton_tol = {tol}: the Newton tolerance must be a positive finite number (default {:e})",
                newton.tolerance
            )));
        }
        newton.tolerance = tol;
    }
    if let Some(n) = max_iter {
        newton.max_iterations = usize::try_from(n).ok().filter(|&n| n >= 1).ok_or_else(|| {
            PyValueError::new_err(format!(
                "newton_max_iter = {n}: the Newton iteration bound must be at least 1 (default {})",
                newton.max_iterations
            ))
        })?;
    }
    Ok(newton)
}

fn rows<'py>(py: Python<'py>, data: &[Vec<f64>], width: usize) -> Bound<'py, PyArray2<f64>> {
    let flat: Vec<f64> = data.iter().flatten().copied().collect();
    Array2::from_shape_vec((data.len(), width), flat)
        .expect("rows of one width")
        .into_pyarray(py)
}

/// A model file loaded for running: `Model(path, sizes=None, params=None, backend="jit")`.
///
/// `sizes` sets the sizes of indexed families (`{"N": 3}`), `params` the
/// parameters' values (struct-field spelling: `m_1` for `m[1]`), `backend`
/// what evaluates the kernels (`"jit"`: native code, or `"interpreter"`).
#[pyclass(frozen, module = "hamel")]
struct Model {
    inner: Arc<Inner>,
}

impl Model {
    /// The scheme named by a `scheme` keyword, or where it is `None` the
    /// model's default: `hamel` where it applies, else the first that does
    /// of rattle, energy_momentum, stormer_verlet, hamel_averaged.
    fn scheme_or_default(&self, name: Option<&str>) -> PyResult<Scheme> {
        match name {
            Some(name) => parse_scheme(name),
            None => Scheme::default_for(&self.inner.model)
                .map(|(s, _)| s)
                .map_err(|e| PyValueError::new_err(e.to_string())),
        }
    }

    /// An input schedule from Python: a dict of numbers or expressions in
    /// `t`, or rows of numbers (one per step).
    fn schedule(&self, inputs: &Bound<'_, PyAny>) -> PyResult<hamel_load::Schedule> {
        let names: Vec<String> = self.inner.model.inputs.iter().map(|s| s.name.clone()).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        if let Ok(d) = inputs.cast::<PyDict>() {
            let mut items = Vec::new();
            for (k, v) in d.iter() {
                let k: String = k.extract()?;
                let v = match v.extract::<f64>() {
                    Ok(x) if !x.is_finite() => {
                        return Err(PyValueError::new_err(format!(
                            "input `{k}`: {x} is not a finite number"
                        )))
                    }
                    Ok(x) => format!("{x:e}"),
                    Err(_) => v.extract::<String>().map_err(|_| {
                        PyValueError::new_err(format!("input `{k}`: give a number or an expression in t"))
                    })?,
                };
                items.push(format!("{k}={v}"));
            }
            return hamel_load::Schedule::from_assignments(&names, &items).map_err(PyValueError::new_err);
        }
        let rows: Vec<Vec<f64>> = match inputs.extract::<Vec<Vec<f64>>>() {
            Ok(r) => r,
            Err(_) => inputs
                .extract::<Vec<f64>>()
                .map(|col| col.into_iter().map(|x| vec![x]).collect())
                .map_err(|_| PyValueError::new_err("inputs: give a dict or an array with one row per step"))?,
        };
        hamel_load::Schedule::per_step(&names, &rows).map_err(PyValueError::new_err)
    }
}

#[pymethods]
impl Model {
    #[new]
    #[pyo3(signature = (path, sizes=None, params=None, backend="jit"))]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        sizes: Option<&Bound<'_, PyAny>>,
        params: Option<&Bound<'_, PyAny>>,
        backend: &str,
    ) -> PyResult<Model> {
        // Wrong types are refused naming the argument and what it takes.
        let path: PathBuf = path.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "argument `path`: give a str or os.PathLike, not {}",
                type_name(path)
            ))
        })?;
        let sizes: Vec<(String, i64)> = match dict_arg("sizes", sizes)? {
            None => Vec::new(),
            Some(d) => d
                .iter()
                .map(|(k, v)| {
                    let k: String = k.extract()?;
                    let n = v.extract::<i64>().map_err(|_| {
                        PyTypeError::new_err(format!(
                            "argument `sizes`: size `{k}` must be an integer (within 64 bits), not {}",
                            v.repr().map_or_else(|_| type_name(&v), |r| r.to_string())
                        ))
                    })?;
                    Ok((k, n))
                })
                .collect::<PyResult<_>>()?,
        };
        let params = dict_arg("params", params)?;
        let params = params.as_ref();
        let backend = parse_backend(backend)?;
        let params = param_pairs(params)?;
        // Read and validated now; the cost of deriving a scheme at these
        // sizes is checked on its first use (`Inner::system`), when the
        // scheme is known.
        let (src, model) = py.detach(|| {
            guarded(|| {
                let src = hamel_load::read_source(&path).map_err(load_err)?;
                let (model, _) = hamel_load::load_source_for(&path.display().to_string(), &src, &sizes, &[], None)
                    .map_err(load_err)?;
                Ok((src, model))
            })
        })?;
        let inner = Inner {
            path: path.display().to_string(),
            src,
            sizes,
            model,
            backend,
            params,
            systems: Mutex::new(HashMap::new()),
        };
        // Unknown parameter names are an error now, not at the first run.
        let known = &inner.model.params;
        if let Some((n, _)) = inner.params.iter().find(|(n, _)| !known.iter().any(|k| k.field == *n)) {
            let names: Vec<&str> = known.iter().map(|k| k.field.as_str()).collect();
            return Err(PyValueError::new_err(format!(
                "model `{}` has no parameter `{n}` (it has: {})",
                inner.model.name,
                names.join(", ")
            )));
        }
        Ok(Model { inner: Arc::new(inner) })
    }

    /// The model's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.model.name.clone()
    }

    /// The file the model was read from.
    #[getter]
    fn path(&self) -> String {
        self.inner.path.clone()
    }

    /// The back-end evaluating the kernels (`"jit"` or `"interpreter"`).
    #[getter]
    fn backend(&self) -> &'static str {
        self.inner.backend.name()
    }

    /// Names of the schemes that apply to this model.
    fn schemes(&self, py: Python<'_>) -> PyResult<Vec<&'static str>> {
        let model = &self.inner.model;
        py.detach(|| {
            guarded(|| {
                Ok(Scheme::LIST
                    .iter()
                    .filter(|s| s.applies(model).is_ok())
                    .map(|s| s.name())
                    .collect())
            })
        })
    }

    /// Names of the model file's initial states, in file order.
    fn initial_states(&self) -> Vec<String> {
        self.inner.model.initials.iter().map(|i| i.name.clone()).collect()
    }

    /// Parameter names and values (the file's, with the constructor's applied).
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for p in &self.inner.model.params {
            let x = self
                .inner
                .params
                .iter()
                .rev()
                .find(|(k, _)| *k == p.field)
                .map_or(p.default, |(_, v)| *v);
            d.set_item(&p.field, x)?;
        }
        Ok(d)
    }

    /// Names of the model's control inputs (empty for a model without inputs).
    fn inputs(&self) -> Vec<String> {
        self.inner.model.inputs.iter().map(|s| s.name.clone()).collect()
    }

    /// Names of the physical coordinate and velocity components.
    fn components(&self, py: Python<'_>) -> PyResult<(Vec<String>, Vec<String>)> {
        let sys = self.compiled(py, Scheme::LIST[0], false)?;
        let c = sys.compiled();
        Ok((c.coordinates.clone(), c.velocities.clone()))
    }

    /// Runs `scheme` (default `hamel`, i.e. `hamel_midpoint`, where it
    /// applies, else the first that does of `rattle`, `energy_momentum`,
    /// `stormer_verlet`, `hamel_averaged`; the averaged form is
    /// `hamel_averaged`) with step `h` for `steps` steps (or up to `t_end`) from
    /// the initial state `init` (default: the file's first) with components
    /// `state` replaced (`{"xi": [0.6, 0, 0]}`, `{"th": 0.3}`), parameters
    /// `params` changed for this run, compensated summation if asked, and
    /// every `every`-th state recorded (0: about 20,000 records at most).
    /// `inputs` sets the control inputs: a dict of constants or expressions in
    /// `t` (`{"tau": 2.0}`, `{"u1": "0.5*sin(t)"}`, sampled at each step's
    /// midpoint), or an array with one row per step (at least `steps` rows).
    /// `newton_tol` (a positive number; default machine epsilon) and
    /// `newton_max_iter` (at least 1; default 30) set Newton's relative
    /// tolerance and iteration bound. `order` is the order of the step: 2,
    /// the scheme itself, or 4 or 6, the scheme composed with itself
    /// (symmetric schemes; inputs held over the whole composed step).
    /// Returns a `Run`; a failed step raises `StepError` (its `run` attribute
    /// holds the run up to there); Ctrl-C raises `KeyboardInterrupt` within
    /// about 0.1 s, its `run` attribute holding the run so far.
    #[pyo3(signature = (scheme=None, h=0.01, steps=None, t_end=None, init=None, state=None, params=None, compensated=false, every=1, inputs=None, newton_tol=None, newton_max_iter=None, order=2))]
    #[allow(clippy::too_many_arguments)]
    fn simulate(
        &self,
        py: Python<'_>,
        scheme: Option<&str>,
        h: f64,
        steps: Option<i128>,
        t_end: Option<f64>,
        init: Option<String>,
        state: Option<&Bound<'_, PyDict>>,
        params: Option<&Bound<'_, PyDict>>,
        compensated: bool,
        every: i64,
        inputs: Option<&Bound<'_, PyAny>>,
        newton_tol: Option<f64>,
        newton_max_iter: Option<i64>,
        order: u32,
    ) -> PyResult<PyRun> {
        let scheme = self.scheme_or_default(scheme)?;
        let steps = step_count(h, steps, t_end)?;
        let newton = newton_options(newton_tol, newton_max_iter)?;
        let inputs = inputs.map(|i| self.schedule(i)).transpose()?;
        let member = Member {
            init,
            state: overrides(state)?,
            params: param_pairs(params)?,
        };
        let opt = RunOptions {
            h,
            steps,
            compensated,
            record_every: count("every", every)?,
            inputs,
            newton,
        };
        let sys = with_order(self.compiled(py, scheme, false)?, order)?;
        let path = self.inner.path.clone();
        let model = &self.inner.model;
        let mut interrupt = None;
        let mut hint = None;
        let result = py.detach(|| {
            guarded(|| {
                let mut sys = sys;
                for (n, x) in &member.params {
                    sys.set_param(n, *x).map_err(|e| load_err(LoadError::Usage(e)))?;
                }
                let (state, label) =
                    hamel_load::initial(&sys, member.init.as_deref(), &member.state).map_err(load_err)?;
                let mut go_on = signal_watch(&mut interrupt);
                let start = state.clone();
                let run = hamel_load::run::run_until(&sys, state, label, &opt, 0, None, &mut go_on);
                // A step not finite from the start: a huge h, parameter or
                // input, or a force not finite there, named.
                if let Err(RunError::Failed(f)) = &run {
                    if matches!(f.error, hamel_runtime::StepError::NonFinite { step: 0, .. }) {
                        hint = hamel_load::steps::first_step_hint(model, &sys, &start, &opt);
                    }
                }
                Ok(run)
            })
        })?;
        match result {
            // Ctrl-C: the KeyboardInterrupt, with the run so far as its `run`.
            Ok(run) if run.stopped => {
                let err = interrupt.unwrap_or_else(|| pyo3::exceptions::PyKeyboardInterrupt::new_err(()));
                let _ = err.value(py).setattr("run", Py::new(py, PyRun { run, file: path })?);
                Err(err)
            }
            Ok(run) => Ok(PyRun { run, file: path }),
            Err(e) => {
                let err = run_err(py, e, &path);
                match hint {
                    Some(hint) => {
                        let with = StepError::new_err(format!("{}: {hint}", err.value(py)));
                        if let Ok(run) = err.value(py).getattr("run") {
                            let _ = with.value(py).setattr("run", run);
                        }
                        Err(with)
                    }
                    None => Err(err),
                }
            }
        }
    }

    /// Runs many members at once on every core (or `threads` threads): one
    /// run per entry of `states` (dicts like `simulate`'s `state`, or `None`)
    /// and of `params` (dicts, or `None`); give one list or two of equal
    /// length. Returns a list in the order of the inputs, holding a `Run`
    /// per member or, for a member that failed, the exception it raised
    /// (not raised: the others' results are kept). `threads`: 1 to 4 per
    /// core. `newton_tol`, `newton_max_iter` and `order` as in `simulate`. Ctrl-C
    /// raises `KeyboardInterrupt`, its `runs` attribute holding that list
    /// with every member's run so far.
    #[pyo3(signature = (scheme=None, h=0.01, steps=None, t_end=None, init=None, states=None, params=None, compensated=false, every=0, threads=None, newton_tol=None, newton_max_iter=None, order=2))]
    #[allow(clippy::too_many_arguments)]
    fn simulate_many<'py>(
        &self,
        py: Python<'py>,
        scheme: Option<&str>,
        h: f64,
        steps: Option<i128>,
        t_end: Option<f64>,
        init: Option<String>,
        states: Option<&Bound<'py, PyList>>,
        params: Option<&Bound<'py, PyList>>,
        compensated: bool,
        every: i64,
        threads: Option<i64>,
        newton_tol: Option<f64>,
        newton_max_iter: Option<i64>,
        order: u32,
    ) -> PyResult<Bound<'py, PyList>> {
        let newton = newton_options(newton_tol, newton_max_iter)?;
        let scheme = self.scheme_or_default(scheme)?;
        let steps = step_count(h, steps, t_end)?;
        let n = match (states, params) {
            (Some(s), Some(p)) if s.len() != p.len() => {
                return Err(PyValueError::new_err(format!(
                    "states has {} entries, params {}",
                    s.len(),
                    p.len()
                )))
            }
            (Some(s), _) => s.len(),
            (None, Some(p)) => p.len(),
            (None, None) => {
                return Err(PyValueError::new_err(
                    "give states or params (lists, one entry per member)",
                ))
            }
        };
        let entry = |list: Option<&Bound<'py, PyList>>, i: usize| -> PyResult<Option<Bound<'py, PyDict>>> {
            match list {
                None => Ok(None),
                Some(l) => {
                    let item = l.get_item(i)?;
                    if item.is_none() {
                        Ok(None)
                    } else {
                        Ok(Some(item.cast_into::<PyDict>().map_err(|_| {
                            PyValueError::new_err(format!("member {i}: expected a dict or None"))
                        })?))
                    }
                }
            }
        };
        let members = (0..n)
            .map(|i| {
                Ok(Member {
                    init: init.clone(),
                    state: overrides(entry(states, i)?.as_ref())?,
                    params: param_pairs(entry(params, i)?.as_ref())?,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let opt = RunOptions {
            h,
            steps,
            compensated,
            record_every: count("every", every)?,
            inputs: None,
            newton,
        };
        let threads = threads.map(|n| count("threads", n)).transpose()?;
        let threads = threads.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        if let Some(n) = threads {
            hamel_load::ensemble::check_threads(n).map_err(|e| PyValueError::new_err(format!("threads = {e}")))?;
        }
        let sys = with_order(self.compiled(py, scheme, false)?, order)?;
        let (results, interrupt) = py.detach(|| guarded(|| ensemble_watching_signals(sys, &members, &opt, threads)))?;
        let out = PyList::empty(py);
        for r in results {
            match r {
                Ok(run) => out.append(PyRun {
                    run,
                    file: self.inner.path.clone(),
                })?,
                Err(MemberError::Input(e)) => out.append(load_err(e).into_value(py))?,
                Err(MemberError::Run(e)) => out.append(run_err(py, e, &self.inner.path).into_value(py))?,
                Err(e @ MemberError::Panicked(_)) => out.append(HamelError::new_err(e.to_string()).into_value(py))?,
            }
        }
        if let Some(err) = interrupt {
            // Ctrl-C: the KeyboardInterrupt, with every member's run so far as its `runs`.
            let _ = err.value(py).setattr("runs", out);
            return Err(err);
        }
        Ok(out)
    }

    /// A stepper of `scheme` with step `h` (positive): `step(z)`,
    /// `step_linearized(z)`, `step_with_sensitivity(z)`. `order` as in
    /// `simulate`: with 4 or 6 each call of `step` takes the whole composed step.
    #[pyo3(signature = (scheme=None, h=0.01, params=None, order=2))]
    fn stepper(
        &self,
        py: Python<'_>,
        scheme: Option<&str>,
        h: f64,
        params: Option<&Bound<'_, PyDict>>,
        order: u32,
    ) -> PyResult<Stepper> {
        let scheme = self.scheme_or_default(scheme)?;
        hamel_load::steps::check_step_size(h).map_err(|e| PyValueError::new_err(format!("h = {h}: {e}")))?;
        let mut sys = with_order(self.compiled(py, scheme, false)?, order)?;
        let params = param_pairs(params)?;
        for (n, x) in &params {
            sys.set_param(n, *x).map_err(PyValueError::new_err)?;
        }
        let stepper = OwnedStepper::owning(sys, h).map_err(step_err)?;
        Ok(Stepper {
            inner: Arc::clone(&self.inner),
            scheme,
            h,
            params,
            order,
            state: Mutex::new(StepperState {
                stepper,
                sensitive: None,
                known: Trajectories::default(),
            }),
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Model({:?}, backend={:?}) — {}",
            self.inner.path,
            self.inner.backend.name(),
            self.inner.model.name
        )
    }
}

impl Model {
    fn compiled(&self, py: Python<'_>, scheme: Scheme, sensitivity: bool) -> PyResult<System> {
        let inner = &self.inner;
        py.detach(|| guarded(|| inner.system(scheme, sensitivity).map_err(load_err)))
    }
}

fn run_err(py: Python<'_>, e: RunError, file: &str) -> PyErr {
    match e {
        RunError::Start(e) => step_err(e),
        // The library names no argument; here the recording interval is `every=`.
        RunError::TooLarge(m) if m.contains("records") => {
            PyValueError::new_err(format!("{m} (every=N records one state in N)"))
        }
        RunError::TooLarge(m) | RunError::Options(m) => PyValueError::new_err(m),
        RunError::Failed(f) => {
            let err = StepError::new_err(f.message());
            let partial = PyRun {
                run: *f.partial,
                file: file.to_string(),
            };
            if let Ok(obj) = Py::new(py, partial) {
                let _ = err.value(py).setattr("run", obj);
            }
            err
        }
    }
}

/// One run: recorded times, states and monitored quantities, and its summary.
#[pyclass(frozen, name = "Run", module = "hamel")]
struct PyRun {
    run: Run,
    file: String,
}

#[pymethods]
impl PyRun {
    /// Times of the recorded states.
    #[getter]
    fn t<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, (0..self.run.steps.len()).map(|k| self.run.time(k)).collect())
    }

    /// Step numbers of the recorded states.
    #[getter]
    fn steps<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        PyArray1::from_slice(py, &self.run.steps)
    }

    /// Recorded coordinates, one row per recorded state.
    #[getter]
    fn q<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        rows(py, &self.run.q, self.run.coordinates.len())
    }

    /// Recorded (quasi-)velocities, one row per recorded state.
    #[getter]
    fn v<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        rows(py, &self.run.v, self.run.velocities.len())
    }

    /// Recorded control inputs: at each recorded state, those of the step
    /// from it (one column per input; no columns without inputs).
    #[getter]
    fn u<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        rows(py, &self.run.u, self.run.input_names.len())
    }

    /// Names of the control inputs (columns of `u`).
    #[getter]
    fn inputs(&self) -> Vec<String> {
        self.run.input_names.clone()
    }

    /// Names of the coordinate components (columns of `q`).
    #[getter]
    fn coordinates(&self) -> Vec<String> {
        self.run.coordinates.clone()
    }

    /// Names of the velocity components (columns of `v`).
    #[getter]
    fn velocities(&self) -> Vec<String> {
        self.run.velocities.clone()
    }

    /// Monitored quantities (energy, invariants, constraint residuals) at the recorded states.
    #[getter]
    fn invariants<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (i, (name, _)) in self.run.invariants.iter().enumerate() {
            let col: Vec<f64> = self.run.values.iter().map(|row| row[i]).collect();
            d.set_item(name, PyArray1::from_vec(py, col))?;
        }
        Ok(d)
    }

    /// The summary: the same fields as `hamel simulate --summary json`.
    #[getter]
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let text = self.run.summary(&self.file).to_string();
        py.import("json")?.call_method1("loads", (text,))
    }

    /// False when the run is not trustworthy (see `warnings`).
    #[getter]
    fn ok(&self) -> bool {
        self.run.warnings().is_empty()
    }

    /// What makes the run untrustworthy: non-finite values, an energy or constraint error beyond bounds.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.run.warnings()
    }

    fn __repr__(&self) -> String {
        format!(
            "Run({}, {}, h={}, {} steps, {} recorded{})",
            self.run.model,
            self.run.scheme,
            self.run.options.h,
            self.run.options.steps,
            self.run.steps.len(),
            if self.ok() { "" } else { ", NOT OK" }
        )
    }
}

/// The stepper of a Python `Stepper`: one per scheme, owning its system.
type Owned = OwnedStepper<System, Dyn, Dyn>;

/// How many states a `Stepper` remembers (see [`Trajectories`]).
const REMEMBERED: usize = 1024;

/// The states a `Stepper` produced, by the bits of their `z`: stepping one
/// of them continues its trajectory (step count, the last Newton solution
/// and the Newton memory, the inputs held), so that a loop over `step`
/// gives `simulate`'s states to the bit, and trajectories interleaved on one
/// stepper (or on threads) step exactly as alone. A `z` the stepper did not
/// produce (or forgot: it keeps the last [`REMEMBERED`]) starts a trajectory
/// of its own at step 0, with the first guess an initial state of that `z`
/// would get: what a step gives is a function of the state given.
#[derive(Default)]
struct Trajectories {
    states: HashMap<Vec<u64>, (DynState, Vec<f64>)>,
    order: VecDeque<Vec<u64>>,
}

impl Trajectories {
    fn key(z: &[f64]) -> Vec<u64> {
        z.iter().map(|x| x.to_bits()).collect()
    }

    /// The state to step from `z`, and the inputs its trajectory holds.
    fn state_for(&self, sys: &System, z: &[f64]) -> PyResult<(DynState, Vec<f64>)> {
        let (nz, nx) = sys.dims();
        if z.len() != nz.0 {
            return Err(PyValueError::new_err(format!(
                "z has {} components, the scheme's state has {}",
                z.len(),
                nz.0
            )));
        }
        finite_state(z)?;
        if let Some((s, u)) = self.states.get(&Self::key(z)) {
            return Ok((s.clone(), u.clone()));
        }
        let mut s = DynState::zeros(nz, nx);
        s.z.as_mut_slice().copy_from_slice(z);
        // The first guess of a state built from its physical data (what
        // `initial` gives); zero where `z` has none (a singular observation).
        if let Ok((q, v)) = sys.physical(&s.z, 0) {
            let mut z2 = vec![0.0; nz.0];
            sys.state_of(&q, &v, &mut z2, s.warm.as_mut_slice());
        }
        Ok((s, vec![0.0; sys.compiled().inputs.len()]))
    }

    /// Remembers a state produced (or handed out by `initial`) and its inputs.
    fn remember(&mut self, s: &DynState, u: &[f64]) {
        let key = Self::key(s.z.as_slice());
        if self.states.insert(key.clone(), (s.clone(), u.to_vec())).is_none() {
            self.order.push_back(key);
            while self.order.len() > REMEMBERED {
                if let Some(old) = self.order.pop_front() {
                    self.states.remove(&old);
                }
            }
        }
    }
}

struct StepperState {
    stepper: Owned,
    /// the same step with sensitivities compiled, on first use
    sensitive: Option<Owned>,
    /// the trajectories this stepper continues
    known: Trajectories,
}

/// One scheme with a fixed step: advances scheme states `z` (NumPy arrays).
///
/// Stepping the array a step returned continues that step's trajectory, so
/// a loop over `step` gives the states `simulate` records, to the bit, and
/// trajectories interleaved on one stepper step as they would alone. An
/// array the stepper did not produce starts a trajectory at step 0.
#[pyclass(frozen, module = "hamel")]
struct Stepper {
    inner: Arc<Inner>,
    scheme: Scheme,
    h: f64,
    params: Vec<(String, f64)>,
    /// the order of its steps (2, or the scheme composed to 4 or 6)
    order: u32,
    state: Mutex<StepperState>,
}

/// What one call of a `Stepper` step method returns besides the state.
enum Extra {
    None,
    Sensitivity(hamel_runtime::nalgebra::DMatrix<f64>),
    Linearization(
        hamel_runtime::nalgebra::DMatrix<f64>,
        hamel_runtime::nalgebra::DMatrix<f64>,
    ),
}

impl Stepper {
    fn lock(&self) -> std::sync::MutexGuard<'_, StepperState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn system(st: &StepperState) -> &System {
        st.stepper.kernels()
    }

    /// Compiles the step with sensitivities on first use.
    fn ensure_sensitive(&self, st: &mut StepperState) -> PyResult<()> {
        if st.sensitive.is_none() {
            let mut s = with_order(self.inner.system(self.scheme, true).map_err(load_err)?, self.order)?;
            for (n, x) in &self.params {
                s.set_param(n, *x).map_err(PyValueError::new_err)?;
            }
            st.sensitive = Some(OwnedStepper::owning(s, self.h).map_err(step_err)?);
        }
        Ok(())
    }

    /// The inputs `u` as given: a sequence (one value per input, in order)
    /// or a dict by name (inputs not named are zero, as in `simulate`).
    fn inputs_of(&self, u: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
        let names = &self.inner.model.inputs;
        let Ok(d) = u.cast::<PyDict>() else {
            return vector("u", u);
        };
        let mut out = vec![0.0; names.len()];
        for (k, v) in d.iter() {
            let k: String = k.extract()?;
            let i = names.iter().position(|n| n.name == k).ok_or_else(|| {
                let known: Vec<&str> = names.iter().map(|n| n.name.as_str()).collect();
                PyValueError::new_err(format!(
                    "u: unknown input `{k}` (the model's inputs: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ))
            })?;
            out[i] = v
                .extract::<f64>()
                .map_err(|_| PyValueError::new_err(format!("u: input `{k}`: expected a number")))?;
        }
        Ok(out)
    }

    /// One step from `z` with inputs `u` (default: those its trajectory
    /// holds), by the plain stepper or, for `extra`, the sensitive one.
    fn advance(&self, z: Vec<f64>, u: Option<Vec<f64>>, linearize: Option<bool>) -> PyResult<(Vec<f64>, Extra)> {
        let mut guard = self.lock();
        let st = &mut *guard;
        if linearize.is_some() {
            self.ensure_sensitive(st)?;
        }
        let (mut s, held) = st.known.state_for(Self::system(st), &z)?;
        let u = u.unwrap_or(held);
        let stepper = match linearize {
            Some(_) => st.sensitive.as_mut().expect("compiled above"),
            None => &mut st.stepper,
        };
        stepper
            .set_inputs(&u)
            .map_err(|e| PyValueError::new_err(format!("u: {e}")))?;
        let extra = match linearize {
            None => {
                stepper.step(&mut s).map_err(step_err)?;
                Extra::None
            }
            Some(false) => Extra::Sensitivity(
                stepper
                    .step_with_sensitivity(&mut s)
                    .map_err(step_err)
                    .map(|j| hamel_runtime::nalgebra::DMatrix::from_column_slice(j.nrows(), j.ncols(), j.as_slice()))?,
            ),
            Some(true) => {
                let (a, b) = stepper.step_linearized(&mut s, true).map_err(step_err)?;
                Extra::Linearization(
                    hamel_runtime::nalgebra::DMatrix::from_column_slice(a.nrows(), a.ncols(), a.as_slice()),
                    b,
                )
            }
        };
        st.known.remember(&s, &u);
        Ok((s.z.as_slice().to_vec(), extra))
    }
}

/// A matrix as a NumPy array (nalgebra is column-major; NumPy rows are rows).
fn matrix<'py>(py: Python<'py>, m: &hamel_runtime::nalgebra::DMatrix<f64>) -> Bound<'py, PyArray2<f64>> {
    let rows: Vec<f64> = m.transpose().as_slice().to_vec();
    Array2::from_shape_vec((m.nrows(), m.ncols()), rows)
        .expect("a matrix's shape")
        .into_pyarray(py)
}

#[pymethods]
impl Stepper {
    /// The step size.
    #[getter]
    fn h(&self) -> f64 {
        self.h
    }

    /// Names of the scheme state's components (entries of `z`).
    #[getter]
    fn state_names(&self) -> Vec<String> {
        Self::system(&self.lock()).compiled().state.clone()
    }

    /// The scheme state `z` of an initial state: `init` (default: the file's
    /// first) with components `state` replaced.
    #[pyo3(signature = (init=None, state=None))]
    fn initial<'py>(
        &self,
        py: Python<'py>,
        init: Option<String>,
        state: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let ov = overrides(state)?;
        let mut st = self.lock();
        let (s, _) = hamel_load::initial(Self::system(&st), init.as_deref(), &ov).map_err(load_err)?;
        let z = s.z.as_slice().to_vec();
        let u = vec![0.0; self.inner.model.inputs.len()];
        st.known.remember(&s, &u);
        Ok(PyArray1::from_vec(py, z))
    }

    /// Advances `z` (a sequence or 1-D array of numbers) by one step and
    /// returns the new state; `u` sets the control inputs of the step, as a
    /// sequence or a dict by name (default: those of the step that produced
    /// `z`, or zero).
    #[pyo3(signature = (z, u=None))]
    fn step<'py>(
        &self,
        py: Python<'py>,
        z: &Bound<'py, PyAny>,
        u: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let z = vector("z", z)?;
        let u = u.map(|u| self.inputs_of(u)).transpose()?;
        let (out, _) = py.detach(|| guarded(|| self.advance(z, u, None)))?;
        Ok(PyArray1::from_vec(py, out))
    }

    /// Advances `z` by one step with inputs `u` (as in `step`); returns the
    /// new state and the step map's linearization `A = ∂z'/∂z`, `B = ∂z'/∂u`
    /// (one column per input), compiled on first use.
    #[pyo3(signature = (z, u=None))]
    #[allow(clippy::type_complexity)]
    fn step_linearized<'py>(
        &self,
        py: Python<'py>,
        z: &Bound<'py, PyAny>,
        u: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray2<f64>>,
        Bound<'py, PyArray2<f64>>,
    )> {
        let z = vector("z", z)?;
        let u = u.map(|u| self.inputs_of(u)).transpose()?;
        let (out, extra) = py.detach(|| guarded(|| self.advance(z, u, Some(true))))?;
        let Extra::Linearization(a, b) = extra else {
            unreachable!("a linearized step returns A and B")
        };
        Ok((PyArray1::from_vec(py, out), matrix(py, &a), matrix(py, &b)))
    }

    /// Advances `z` by one step; returns the new state and `∂z'/∂z` (the
    /// step map's Jacobian, compiled on first use).
    #[allow(clippy::type_complexity)]
    fn step_with_sensitivity<'py>(
        &self,
        py: Python<'py>,
        z: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyArray1<f64>>, Bound<'py, PyArray2<f64>>)> {
        let z = vector("z", z)?;
        let (out, extra) = py.detach(|| guarded(|| self.advance(z, None, Some(false))))?;
        let Extra::Sensitivity(j) = extra else {
            unreachable!("a step with sensitivity returns its Jacobian")
        };
        Ok((PyArray1::from_vec(py, out), matrix(py, &j)))
    }

    /// The physical state `(q, v)` of a scheme state `z`.
    #[allow(clippy::type_complexity)]
    fn physical<'py>(
        &self,
        py: Python<'py>,
        z: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<(Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>)> {
        let z = hamel_runtime::nalgebra::DVector::from_column_slice(z.as_slice()?);
        let st = self.lock();
        let sys = Self::system(&st);
        if z.len() != sys.dims().0 .0 {
            return Err(PyValueError::new_err("z has the wrong number of components"));
        }
        let (q, v) = sys.physical(&z, 0).map_err(step_err)?;
        Ok((PyArray1::from_vec(py, q), PyArray1::from_vec(py, v)))
    }

    /// Energy, invariants and constraint residuals at a scheme state `z`.
    fn invariants<'py>(&self, py: Python<'py>, z: PyReadonlyArray1<'py, f64>) -> PyResult<Bound<'py, PyDict>> {
        let zv = hamel_runtime::nalgebra::DVector::from_column_slice(z.as_slice()?);
        let st = self.lock();
        let sys = Self::system(&st);
        if zv.len() != sys.dims().0 .0 {
            return Err(PyValueError::new_err("z has the wrong number of components"));
        }
        finite_state(zv.as_slice())?;
        let values = sys.invariants(&zv, 0).map_err(step_err)?;
        let d = PyDict::new(py);
        for ((name, _), x) in sys.compiled().invariants.iter().zip(values) {
            d.set_item(name, x)?;
        }
        Ok(d)
    }
}

/// An optional dict argument; another type is refused naming the argument.
fn dict_arg<'py>(name: &str, d: Option<&Bound<'py, PyAny>>) -> PyResult<Option<Bound<'py, PyDict>>> {
    d.map(|d| {
        d.cast::<PyDict>()
            .cloned()
            .map_err(|_| PyTypeError::new_err(format!("argument `{name}`: give a dict, not {}", type_name(d))))
    })
    .transpose()
}

/// The Python type name of `x`, for messages.
fn type_name(x: &Bound<'_, PyAny>) -> String {
    x.get_type().name().map_or_else(|_| "?".to_string(), |n| n.to_string())
}

/// Refuses a scheme state holding NaN or an infinity, naming the component
/// (rather than failing later as a singular matrix or a non-finite step).
fn finite_state(z: &[f64]) -> PyResult<()> {
    match z.iter().position(|x| !x.is_finite()) {
        Some(i) => Err(PyValueError::new_err(format!(
            "z is not finite: component {i} is {}",
            z[i]
        ))),
        None => Ok(()),
    }
}

/// The native module, imported by the `hamel` package.
/// A float matrix argument as nalgebra's; the error names the argument.
fn dmatrix(name: &str, a: &Bound<'_, PyAny>) -> PyResult<hamel_runtime::nalgebra::DMatrix<f64>> {
    let np = a.py().import("numpy")?;
    let arr = np
        .call_method1("asarray", (a, "float64"))
        .map_err(|e| PyValueError::new_err(format!("{name}: not a matrix of numbers ({e})")))?;
    let arr: PyReadonlyArray2<'_, f64> = arr
        .extract()
        .map_err(|_| PyValueError::new_err(format!("{name}: expected a two-dimensional array")))?;
    let v = arr.as_array();
    if v.iter().any(|x| !x.is_finite()) {
        return Err(PyValueError::new_err(format!("{name}: has a value that is not finite")));
    }
    Ok(hamel_runtime::nalgebra::DMatrix::from_fn(
        v.nrows(),
        v.ncols(),
        |i, j| v[[i, j]],
    ))
}

/// An orthonormal basis (its columns) of the null space of `rows`: the
/// tangent space of the constraints whose rows (e.g. the constraint
/// Jacobian at an equilibrium) are given. Design LQR there: the redundant
/// directions of a scheme's state have eigenvalues that no input reaches.
#[pyfunction]
fn tangent_basis<'py>(py: Python<'py>, rows: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let rows = dmatrix("rows", rows)?;
    Ok(matrix(py, &hamel_runtime::control::tangent_basis(&rows)))
}

/// Discrete LQR by Riccati iteration: the gain `K` of `u = −K x` minimizing
/// `Σ xᵀQx + uᵀRu` for `x' = A x + B u`. Returns `(K, P, spectral_radius,
/// iterations)`: the gain, the Riccati solution, the closed loop's spectral
/// radius and the iterations taken. Raises `ValueError` on inconsistent
/// sizes or when the iteration does not settle (not stabilizable).
#[pyfunction]
#[pyo3(signature = (a, b, q, r, tol=1e-12, max_iterations=100_000))]
#[allow(clippy::type_complexity)]
fn dlqr<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    q: &Bound<'py, PyAny>,
    r: &Bound<'py, PyAny>,
    tol: f64,
    max_iterations: usize,
) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>, f64, usize)> {
    if !(tol > 0.0 && tol.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "tol = {tol}: must be positive and finite"
        )));
    }
    let (a, b, q, r) = (dmatrix("a", a)?, dmatrix("b", b)?, dmatrix("q", q)?, dmatrix("r", r)?);
    let l = hamel_runtime::control::dlqr(&a, &b, &q, &r, tol, max_iterations)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((matrix(py, &l.k), matrix(py, &l.p), l.spectral_radius, l.iterations))
}

#[pymodule]
fn _hamel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Model>()?;
    m.add_class::<PyRun>()?;
    m.add_class::<Stepper>()?;
    m.add_function(wrap_pyfunction!(tangent_basis, m)?)?;
    m.add_function(wrap_pyfunction!(dlqr, m)?)?;
    m.add("HamelError", py.get_type::<HamelError>())?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add("SchemeError", py.get_type::<SchemeError>())?;
    m.add("StepError", py.get_type::<StepError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
