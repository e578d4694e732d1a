// An expression nested deeper than the parser's limit is one clear error at
// its place in the model file, never a crash of rustc (hostile campaign).
#[derive(hamel::Integrator)]
#[hamel(model = "tests/ui/models/nested_too_deep.hamel")]
pub struct Deep {}

fn main() {}
