"""Type stubs of hamel's native module."""

from os import PathLike
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

StateValues = Mapping[str, Union[float, Sequence[float]]]
# A dict of constants or expressions in `t`, or one row of values per step.
InputValues = Union[Mapping[str, Union[float, str]], Sequence[Sequence[float]], Sequence[float], npt.NDArray[np.float64]]

class HamelError(Exception): ...
class ModelError(HamelError): ...
class SchemeError(HamelError): ...

class StepError(HamelError):
    run: "Run"  # the run up to the failed step, when a run failed

class Run:
    t: npt.NDArray[np.float64]
    steps: npt.NDArray[np.uint64]
    q: npt.NDArray[np.float64]
    v: npt.NDArray[np.float64]
    u: npt.NDArray[np.float64]
    inputs: List[str]
    coordinates: List[str]
    velocities: List[str]
    invariants: Dict[str, npt.NDArray[np.float64]]
    summary: Dict[str, Any]
    ok: bool
    warnings: List[str]

class Stepper:
    h: float
    state_names: List[str]
    def initial(self, init: Optional[str] = None, state: Optional[StateValues] = None) -> npt.NDArray[np.float64]: ...
    def step(
        self, z: npt.ArrayLike, u: Optional[Union[npt.ArrayLike, Mapping[str, float]]] = None
    ) -> npt.NDArray[np.float64]: ...
    def step_linearized(
        self, z: npt.ArrayLike, u: Optional[Union[npt.ArrayLike, Mapping[str, float]]] = None
    ) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
    def step_with_sensitivity(
        self, z: npt.ArrayLike
    ) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
    def physical(self, z: npt.NDArray[np.float64]) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
    def invariants(self, z: npt.NDArray[np.float64]) -> Dict[str, float]: ...

class Model:
    name: str
    path: str
    backend: str
    def __init__(
        self,
        path: Union[str, "PathLike[str]"],
        sizes: Optional[Mapping[str, int]] = None,
        params: Optional[Mapping[str, float]] = None,
        backend: str = "jit",
    ) -> None: ...
    def schemes(self) -> List[str]: ...
    def initial_states(self) -> List[str]: ...
    def parameters(self) -> Dict[str, float]: ...
    def inputs(self) -> List[str]: ...
    def components(self) -> Tuple[List[str], List[str]]: ...
    def simulate(
        self,
        scheme: Optional[str] = None,
        h: float = 0.01,
        steps: Optional[int] = None,
        t_end: Optional[float] = None,
        init: Optional[str] = None,
        state: Optional[StateValues] = None,
        params: Optional[Mapping[str, float]] = None,
        compensated: bool = False,
        every: int = 1,
        inputs: Optional[InputValues] = None,
        newton_tol: Optional[float] = None,
        newton_max_iter: Optional[int] = None,
        order: int = 2,
    ) -> Run: ...
    def simulate_many(
        self,
        scheme: Optional[str] = None,
        h: float = 0.01,
        steps: Optional[int] = None,
        t_end: Optional[float] = None,
        init: Optional[str] = None,
        states: Optional[Sequence[Optional[StateValues]]] = None,
        params: Optional[Sequence[Optional[Mapping[str, float]]]] = None,
        compensated: bool = False,
        every: int = 0,
        threads: Optional[int] = None,
        newton_tol: Optional[float] = None,
        newton_max_iter: Optional[int] = None,
        order: int = 2,
    ) -> List[Union[Run, HamelError, ValueError]]: ...
    def stepper(
        self, scheme: Optional[str] = None, h: float = 0.01, params: Optional[Mapping[str, float]] = None, order: int = 2
    ) -> Stepper: ...

def tangent_basis(rows: "npt.ArrayLike") -> "npt.NDArray[np.float64]": ...
def dlqr(
    a: "npt.ArrayLike",
    b: "npt.ArrayLike",
    q: "npt.ArrayLike",
    r: "npt.ArrayLike",
    tol: float = 1e-12,
    max_iterations: int = 100_000,
) -> Tuple["npt.NDArray[np.float64]", "npt.NDArray[np.float64]", float, int]: ...
