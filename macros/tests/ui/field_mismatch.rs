#[derive(hamel::Integrator)]
#[hamel(model = "models/spherical_pendulum.hamel")]
pub struct P {
    pub m: f64,
    pub length: f64,
    pub g: f32,
}

fn main() {}
