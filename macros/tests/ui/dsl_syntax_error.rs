#[derive(hamel::Integrator)]
#[hamel(model = "tests/ui/models/bad_syntax.hamel")]
pub struct P {}

fn main() {}
