#[derive(hamel::Integrator)]
#[hamel(model = "tests/ui/models/no_frame_eq.hamel")]
pub struct P {}

fn main() {}
