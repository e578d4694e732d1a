#[derive(hamel::Integrator)]
#[hamel(model = "models/no_such_model.hamel")]
pub struct P {
    pub m: f64,
}

fn main() {}
