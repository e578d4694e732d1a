#[derive(hamel::Integrator)]
#[hamel(model = "models/spherical_pendulum_cartesian.hamel", scheme = "energy_momentum", order = 6)]
pub struct P {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

#[derive(hamel::Integrator)]
#[hamel(model = "models/spherical_pendulum_cartesian.hamel", scheme = "rattle", order = 3)]
pub struct Q {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

fn main() {}
