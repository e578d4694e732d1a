//! The `hamel` Python package's native module (`hamel._hamel`): model files
//! loaded and stepped by the run-time back-end of [`hamel_load`], with NumPy
//! arrays in and out. Rust runs with the interpreter detached (the GIL
//! released), so Python threads and ensembles on every core overlap.

#![warn(missing_docs)]
// pyo3's `#[pymethods]` expand to code clippy flags in user crates.
#![allow(clippy::useless_conversion)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hamel_load::ensemble::MemberError;
use hamel_load::{Backend, LoadError, Member, Run, RunError, RunOptions, Scheme, System};
use hamel_runtime::{DynState, DynStepper, Kernels, NewtonOptions};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
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
        let mut sys = if sensitivity {
            hamel_load::compile_with_sensitivity(&self.model, scheme, self.backend)?
        } else {
            hamel_load::compile(&self.model, scheme, self.backend)?
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

/// Number of steps from `steps` or `t_end`.
fn step_count(h: f64, steps: Option<u64>, t_end: Option<f64>) -> PyResult<u64> {
    if !h.is_finite() || h == 0.0 {
        return Err(PyValueError::new_err(format!(
            "h = {h}: the step size must be finite and non-zero"
        )));
    }
    match (steps, t_end) {
        (Some(n), None) => Ok(n),
        (None, Some(t)) => {
            let n = (t / h).round();
            if !(0.0..=1e15).contains(&n) {
                return Err(PyValueError::new_err(format!(
                    "t_end = {t} with h = {h}: not a number of steps"
                )));
            }
            Ok(n as u64)
        }
        (Some(_), Some(_)) => Err(PyValueError::new_err("give steps or t_end, not both")),
        (None, None) => Err(PyValueError::new_err("give steps or t_end")),
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
        path: PathBuf,
        sizes: Option<&Bound<'_, PyDict>>,
        params: Option<&Bound<'_, PyDict>>,
        backend: &str,
    ) -> PyResult<Model> {
        let sizes: Vec<(String, i64)> = match sizes {
            None => Vec::new(),
            Some(d) => d
                .iter()
                .map(|(k, v)| Ok((k.extract::<String>()?, v.extract::<i64>()?)))
                .collect::<PyResult<_>>()?,
        };
        let backend = parse_backend(backend)?;
        let params = param_pairs(params)?;
        let model = py.detach(|| hamel_load::read_model(&path, &sizes)).map_err(load_err)?;
        let inner = Inner {
            path: path.display().to_string(),
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
    fn schemes(&self, py: Python<'_>) -> Vec<&'static str> {
        let model = &self.inner.model;
        py.detach(|| {
            Scheme::LIST
                .iter()
                .filter(|s| s.derive(model).is_ok())
                .map(|s| s.name())
                .collect()
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

    /// Runs `scheme` with step `h` for `steps` steps (or up to `t_end`) from
    /// the initial state `init` (default: the file's first) with components
    /// `state` replaced (`{"xi": [0.6, 0, 0]}`, `{"th": 0.3}`), parameters
    /// `params` changed for this run, compensated summation if asked, and
    /// every `every`-th state recorded (0: about 20,000 records at most).
    /// `inputs` sets the control inputs: a dict of constants or expressions in
    /// `t` (`{"tau": 2.0}`, `{"u1": "0.5*sin(t)"}`, sampled at each step's
    /// midpoint), or an array with one row per step (held past its end).
    /// `newton_tol` (a positive number; default machine epsilon) and
    /// `newton_max_iter` (at least 1; default 30) set Newton's relative
    /// tolerance and iteration bound. `order` is the order of the step: 2,
    /// the scheme itself, or 4 or 6, the scheme composed with itself
    /// (symmetric schemes; inputs held over the whole composed step).
    /// Returns a `Run`; a failed step raises `StepError` (its `run` attribute
    /// holds the run up to there).
    #[pyo3(signature = (scheme="hamel", h=0.01, steps=None, t_end=None, init=None, state=None, params=None, compensated=false, every=1, inputs=None, newton_tol=None, newton_max_iter=None, order=2))]
    #[allow(clippy::too_many_arguments)]
    fn simulate(
        &self,
        py: Python<'_>,
        scheme: &str,
        h: f64,
        steps: Option<u64>,
        t_end: Option<f64>,
        init: Option<String>,
        state: Option<&Bound<'_, PyDict>>,
        params: Option<&Bound<'_, PyDict>>,
        compensated: bool,
        every: u64,
        inputs: Option<&Bound<'_, PyAny>>,
        newton_tol: Option<f64>,
        newton_max_iter: Option<i64>,
        order: u32,
    ) -> PyResult<PyRun> {
        let scheme = parse_scheme(scheme)?;
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
            record_every: every,
            inputs,
            newton,
        };
        let sys = with_order(self.compiled(py, scheme, false)?, order)?;
        let path = self.inner.path.clone();
        let result = py.detach(move || {
            let mut sys = sys;
            for (n, x) in &member.params {
                sys.set_param(n, *x).map_err(LoadError::Usage)?;
            }
            let (state, label) = hamel_load::initial(&sys, member.init.as_deref(), &member.state)?;
            Ok::<_, LoadError>(hamel_load::run(&sys, state, label, &opt))
        });
        match result.map_err(load_err)? {
            Ok(run) => Ok(PyRun { run, file: path }),
            Err(e) => Err(run_err(py, e, &path)),
        }
    }

    /// Runs many members at once on every core (or `threads` threads): one
    /// run per entry of `states` (dicts like `simulate`'s `state`, or `None`)
    /// and of `params` (dicts, or `None`); give one list or two of equal
    /// length. Returns a list in the order of the inputs, holding a `Run`
    /// per member or, for a member that failed, the exception it raised
    /// (not raised: the others' results are kept). `newton_tol` and
    /// `newton_max_iter` and `order` as in `simulate`.
    #[pyo3(signature = (scheme="hamel", h=0.01, steps=None, t_end=None, init=None, states=None, params=None, compensated=false, every=0, threads=None, newton_tol=None, newton_max_iter=None, order=2))]
    #[allow(clippy::too_many_arguments)]
    fn simulate_many<'py>(
        &self,
        py: Python<'py>,
        scheme: &str,
        h: f64,
        steps: Option<u64>,
        t_end: Option<f64>,
        init: Option<String>,
        states: Option<&Bound<'py, PyList>>,
        params: Option<&Bound<'py, PyList>>,
        compensated: bool,
        every: u64,
        threads: Option<usize>,
        newton_tol: Option<f64>,
        newton_max_iter: Option<i64>,
        order: u32,
    ) -> PyResult<Bound<'py, PyList>> {
        let newton = newton_options(newton_tol, newton_max_iter)?;
        let scheme = parse_scheme(scheme)?;
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
            record_every: every,
            inputs: None,
            newton,
        };
        let sys = with_order(self.compiled(py, scheme, false)?, order)?;
        let results = py
            .detach(move || hamel_load::run_many(&sys, &members, &opt, threads))
            .map_err(load_err)?;
        let out = PyList::empty(py);
        for r in results {
            match r {
                Ok(run) => out.append(PyRun {
                    run,
                    file: self.inner.path.clone(),
                })?,
                Err(MemberError::Input(e)) => out.append(load_err(e).into_value(py))?,
                Err(MemberError::Run(e)) => out.append(run_err(py, e, &self.inner.path).into_value(py))?,
            }
        }
        Ok(out)
    }

    /// A stepper of `scheme` with step `h`: `step(z)`, `step_with_sensitivity(z)`.
    /// `order` as in `simulate`: with 4 or 6 each call of `step` takes the
    /// whole composed step (its sub-steps' Newton guesses start afresh at
    /// every call, so the states agree with `simulate`'s to Newton's
    /// tolerance rather than to the bit).
    #[pyo3(signature = (scheme="hamel", h=0.01, params=None, order=2))]
    fn stepper(
        &self,
        py: Python<'_>,
        scheme: &str,
        h: f64,
        params: Option<&Bound<'_, PyDict>>,
        order: u32,
    ) -> PyResult<Stepper> {
        let scheme = parse_scheme(scheme)?;
        let mut sys = with_order(self.compiled(py, scheme, false)?, order)?;
        let params = param_pairs(params)?;
        for (n, x) in &params {
            sys.set_param(n, *x).map_err(PyValueError::new_err)?;
        }
        DynStepper::new(&sys, h).map_err(step_err)?;
        Ok(Stepper {
            inner: Arc::clone(&self.inner),
            scheme,
            h,
            params,
            order,
            state: Mutex::new(StepperState {
                sys,
                sensitive: None,
                last: None,
                last_u: None,
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
        py.detach(|| inner.system(scheme, sensitivity)).map_err(load_err)
    }
}

fn run_err(py: Python<'_>, e: RunError, file: &str) -> PyErr {
    match e {
        RunError::Start(e) => step_err(e),
        RunError::TooLarge(m) | RunError::Options(m) => PyValueError::new_err(m),
        RunError::Failed(f) => {
            let err = StepError::new_err(f.error.to_string());
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

struct StepperState {
    sys: System,
    /// the same step with sensitivities compiled, on first use
    sensitive: Option<System>,
    /// the last state stepped to: its warm start serves the next step
    last: Option<DynState>,
    /// the inputs of the last step, held for the next one unless it sets its own
    last_u: Option<Vec<f64>>,
}

/// One scheme with a fixed step: advances scheme states `z` (NumPy arrays).
///
/// Stepping the array a step returned continues from that step's Newton
/// solution, so a loop over `step` gives the states `simulate` records, to
/// the bit. Another array starts from the last solution as its first guess.
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

impl Stepper {
    fn lock(&self) -> std::sync::MutexGuard<'_, StepperState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Compiles the step with sensitivities on first use.
    fn ensure_sensitive(&self, st: &mut StepperState) -> PyResult<()> {
        if st.sensitive.is_none() {
            let mut s = with_order(self.inner.system(self.scheme, true).map_err(load_err)?, self.order)?;
            for (n, x) in &self.params {
                s.set_param(n, *x).map_err(PyValueError::new_err)?;
            }
            st.sensitive = Some(s);
        }
        Ok(())
    }

    /// This step's inputs (`None`: those of the last step, if any).
    fn set_inputs(stepper: &mut DynStepper<'_, System>, last: Option<&[f64]>, u: Option<&[f64]>) -> PyResult<()> {
        let err = |e: hamel_runtime::StepError| PyValueError::new_err(e.to_string());
        if let Some(u) = u.or(last) {
            stepper.set_inputs(u).map_err(err)?;
        }
        Ok(())
    }

    /// The state to step from `z`: the last state if `z` is its `z`.
    fn state_for(st: &StepperState, z: &[f64]) -> PyResult<DynState> {
        let (nz, nx) = st.sys.dims();
        if z.len() != nz.0 {
            return Err(PyValueError::new_err(format!(
                "z has {} components, the scheme's state has {}",
                z.len(),
                nz.0
            )));
        }
        if let Some(last) = &st.last {
            if last.z.as_slice() == z {
                return Ok(last.clone());
            }
        }
        let mut s = DynState::zeros(nz, nx);
        s.z.as_mut_slice().copy_from_slice(z);
        if let Some(last) = &st.last {
            s.warm.copy_from(&last.warm);
            s.step = last.step;
        } else {
            // The first warm start of the model's first initial state (or zero).
            let c = st.sys.compiled();
            if let Some(n) = c.initials.first() {
                if let Ok(init) = st.sys.initial(n) {
                    s.warm = init.warm;
                }
            }
        }
        Ok(s)
    }
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
        self.lock().sys.compiled().state.clone()
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
        let (s, _) = hamel_load::initial(&st.sys, init.as_deref(), &ov).map_err(load_err)?;
        let z = s.z.as_slice().to_vec();
        st.last = Some(s);
        Ok(PyArray1::from_vec(py, z))
    }

    /// Advances `z` by one step and returns the new state; `u` sets the
    /// control inputs of the step (default: those of the last step, or zero).
    #[pyo3(signature = (z, u=None))]
    fn step<'py>(
        &self,
        py: Python<'py>,
        z: PyReadonlyArray1<'py, f64>,
        u: Option<Vec<f64>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let z = z.as_slice()?.to_vec();
        let h = self.h;
        let out = py.detach(|| {
            let mut st = self.lock();
            let mut s = Self::state_for(&st, &z)?;
            let mut stepper = DynStepper::new(&st.sys, h).map_err(step_err)?;
            Self::set_inputs(&mut stepper, st.last_u.as_deref(), u.as_deref())?;
            stepper.step(&mut s).map_err(step_err)?;
            let last_u = stepper.inputs().to_vec();
            drop(stepper);
            let z = s.z.as_slice().to_vec();
            st.last = Some(s);
            st.last_u = Some(last_u);
            Ok::<_, PyErr>(z)
        })?;
        Ok(PyArray1::from_vec(py, out))
    }

    /// Advances `z` by one step with inputs `u` (default: those of the last
    /// step, or zero); returns the new state and the step map's linearization
    /// `A = ∂z'/∂z`, `B = ∂z'/∂u` (one column per input), compiled on first use.
    #[pyo3(signature = (z, u=None))]
    #[allow(clippy::type_complexity)]
    fn step_linearized<'py>(
        &self,
        py: Python<'py>,
        z: PyReadonlyArray1<'py, f64>,
        u: Option<Vec<f64>>,
    ) -> PyResult<(
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray2<f64>>,
        Bound<'py, PyArray2<f64>>,
    )> {
        let z = z.as_slice()?.to_vec();
        let h = self.h;
        let (znew, a, b, n, r) = py.detach(|| {
            let mut st = self.lock();
            self.ensure_sensitive(&mut st)?;
            let mut s = Self::state_for(&st, &z)?;
            let sys = st.sensitive.as_ref().expect("compiled above");
            let mut stepper = DynStepper::new(sys, h).map_err(step_err)?;
            Self::set_inputs(&mut stepper, st.last_u.as_deref(), u.as_deref())?;
            let (a, b) = stepper.step_linearized(&mut s, true).map_err(step_err)?;
            let last_u = stepper.inputs().to_vec();
            drop(stepper);
            let (n, r) = (a.nrows(), b.ncols());
            // nalgebra is column-major; NumPy rows are rows.
            let a: Vec<f64> = a.transpose().as_slice().to_vec();
            let b: Vec<f64> = b.transpose().as_slice().to_vec();
            let z = s.z.as_slice().to_vec();
            st.last = Some(s);
            st.last_u = Some(last_u);
            Ok::<_, PyErr>((z, a, b, n, r))
        })?;
        let a = Array2::from_shape_vec((n, n), a).expect("square").into_pyarray(py);
        let b = Array2::from_shape_vec((n, r), b).expect("n × r").into_pyarray(py);
        Ok((PyArray1::from_vec(py, znew), a, b))
    }

    /// Advances `z` by one step; returns the new state and `∂z'/∂z` (the
    /// step map's Jacobian, compiled on first use).
    #[allow(clippy::type_complexity)]
    fn step_with_sensitivity<'py>(
        &self,
        py: Python<'py>,
        z: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<(Bound<'py, PyArray1<f64>>, Bound<'py, PyArray2<f64>>)> {
        let z = z.as_slice()?.to_vec();
        let h = self.h;
        let (znew, jac, n) = py.detach(|| {
            let mut st = self.lock();
            self.ensure_sensitive(&mut st)?;
            let mut s = Self::state_for(&st, &z)?;
            let sys = st.sensitive.as_ref().expect("compiled above");
            let mut stepper = DynStepper::new(sys, h).map_err(step_err)?;
            Self::set_inputs(&mut stepper, st.last_u.as_deref(), None)?;
            let j = stepper.step_with_sensitivity(&mut s).map_err(step_err)?;
            drop(stepper);
            let n = j.nrows();
            // nalgebra is column-major; NumPy rows are rows.
            let jac: Vec<f64> = j.transpose().as_slice().to_vec();
            let z = s.z.as_slice().to_vec();
            st.last = Some(s);
            Ok::<_, PyErr>((z, jac, n))
        })?;
        let jac = Array2::from_shape_vec((n, n), jac).expect("square").into_pyarray(py);
        Ok((PyArray1::from_vec(py, znew), jac))
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
        if z.len() != st.sys.dims().0 .0 {
            return Err(PyValueError::new_err("z has the wrong number of components"));
        }
        let (q, v) = st.sys.physical(&z, 0).map_err(step_err)?;
        Ok((PyArray1::from_vec(py, q), PyArray1::from_vec(py, v)))
    }

    /// Energy, invariants and constraint residuals at a scheme state `z`.
    fn invariants<'py>(&self, py: Python<'py>, z: PyReadonlyArray1<'py, f64>) -> PyResult<Bound<'py, PyDict>> {
        let zv = hamel_runtime::nalgebra::DVector::from_column_slice(z.as_slice()?);
        let st = self.lock();
        if zv.len() != st.sys.dims().0 .0 {
            return Err(PyValueError::new_err("z has the wrong number of components"));
        }
        let values = st.sys.invariants(&zv, 0).map_err(step_err)?;
        let d = PyDict::new(py);
        for ((name, _), x) in st.sys.compiled().invariants.iter().zip(values) {
            d.set_item(name, x)?;
        }
        Ok(d)
    }
}

/// The native module, imported by the `hamel` package.
#[pymodule]
fn _hamel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Model>()?;
    m.add_class::<PyRun>()?;
    m.add_class::<Stepper>()?;
    m.add("HamelError", py.get_type::<HamelError>())?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add("SchemeError", py.get_type::<SchemeError>())?;
    m.add("StepError", py.get_type::<StepError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
