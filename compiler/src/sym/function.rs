//! A numeric function described symbolically: named input arrays → named
//! output arrays. This is the unit every back-end emits.

use hamel_kernel::{Arg, Kernel};

use super::graph::{Graph, Id};
use super::tape::{Tape, UnboundSymbol};

/// A function of fixed-size `f64` arrays.
#[derive(Clone, Debug)]
pub struct Function {
    /// which kernel it is
    pub name: Kernel,
    /// argument arrays: (which, the symbols read from it, in order)
    pub inputs: Vec<(Arg, Vec<Id>)>,
    /// result arrays: (name, one expression per entry)
    pub outputs: Vec<(String, Vec<Id>)>,
    /// symbols the function computes on its way to the outputs, each
    /// `(symbol, definition)`; a definition reads the inputs and other
    /// locals. A chain's recurrence `x_i = x_{i−1} + …` stays one operation
    /// per member this way, where substituting it would flatten every sum
    /// into all the members before it (O(N²) code).
    pub locals: Vec<(Id, Id)>,
}

impl Function {
    /// Linearizes the function into a straight-line program whose inputs are
    /// the concatenated argument arrays and outputs the concatenated results.
    pub fn tape(&self, g: &mut Graph) -> Result<Tape, UnboundSymbol> {
        let ins: Vec<Id> = self.inputs.iter().flat_map(|(_, s)| s.iter().copied()).collect();
        let outs: Vec<Id> = self.outputs.iter().flat_map(|(_, e)| e.iter().copied()).collect();
        Tape::build_with(g, &ins, &self.locals, &outs)
    }
}
