// One error in the model file: the user's code that uses the struct as a
// derived integrator must not add errors of its own.
#[derive(hamel::Integrator)]
#[hamel(model = "tests/ui/models/bad_syntax.hamel")]
pub struct P {}

fn main() -> Result<(), hamel::StepError> {
    let model = P::with_defaults();
    let mut state = model.initial("published")?;
    let mut stepper = model.stepper(0.2)?;
    stepper.step(&mut state)?;
    hamel::simulate(&model, &mut state, 0.2, 10, |_| {})?;
    println!("{:?} {:?}", model.invariants(&state)?, model.physical(&state)?);
    Ok(())
}
