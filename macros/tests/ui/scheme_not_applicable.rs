#[derive(hamel::Integrator)]
#[hamel(model = "models/spherical_pendulum.hamel", scheme = "rattle")]
pub struct P {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

fn main() {}
