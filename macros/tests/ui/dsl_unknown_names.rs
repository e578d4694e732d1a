#[derive(hamel::Integrator)]
#[hamel(model = "tests/ui/models/bad_names.hamel")]
pub struct P {
    pub k: f64,
}

fn main() {}
