//! Target `dispatch_orders`: the dispatch machine ([`lane_driver::dispatch`]) in any order
//! the world around it can bring, one byte per choice.
//!
//! The world is [`crate::explore::dispatch::DispatchModel`]: it offers only the inputs its
//! facts allow, and after every step the machine's state must agree with them and no force
//! reset may run while the completion waiter is inside a device call (L-20). The explorer
//! walks every order within a small budget; this target walks long ones.

use arbitrary::Arbitrary;
use lane_driver::dispatch::{Act, DispatchInput, Setting, dispatch_step};

use crate::explore::Model;
use crate::explore::dispatch::DispatchModel;
use crate::{Finding, Reached, decode as build};

/// The target's name.
pub const NAME: &str = "dispatch_orders";

behaviours! {
    /// The behaviours a `dispatch_orders` input can reach, in [`Reached`] bit order.
    BEHAVIOURS;
    ToWorker => "handed host work to a worker",
    ToWaiter => "handed a wait to the waiter",
    WaitHere => "waited on the stepping thread",
    Hold => "held a reset for the waiter",
    Released => "made a held reset once the waiter left",
    AtBound => "answered a wait at its bound",
    StaleDropped => "dropped a stale answer",
    Lose => "lost the lane to a stuck waiter",
    Exit => "ended settled and shut down",
}

/// A `dispatch_orders` input: the setting, the budget of effects, and one choice per step
/// (an index into the actions the world offers, modulo their count).
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// Picks [`Setting::ALL`], modulo its length.
    pub setting: u8,
    /// The effects and notices the lane may bring (capped at 32).
    pub budget: u8,
    /// The choices, one per step.
    #[arbitrary(with = crate::dense)]
    pub choices: Vec<u8>,
}

/// Builds the input from raw bytes and runs the body.
pub fn run_bytes(data: &[u8]) -> Result<Reached, Finding> {
    build::<Input>(data).map_or(Ok(Reached::default()), |input| run(&input))
}

/// Steps the world by the input's choices, checking every step.
pub fn run(input: &Input) -> Result<Reached, Finding> {
    let setting = Setting::ALL[usize::from(input.setting) % Setting::ALL.len()];
    let mut model = DispatchModel::new(setting, input.budget.min(32));
    let mut reached = Reached::default();
    for (step, choice) in input.choices.iter().enumerate() {
        model.check().map_err(|m| Finding::new(NAME, Some(step), m))?;
        let actions = model.actions();
        if actions.is_empty() {
            break;
        }
        let action = actions[usize::from(*choice) % actions.len()];
        if let Some((state, input)) = model.row(action) {
            if let Ok((_, act)) = dispatch_step(setting, state, input) {
                note(&mut reached, input, act);
            }
        }
        model
            .step(action)
            .map_err(|m| Finding::new(NAME, Some(step), format!("{action:?}: {m}")))?;
    }
    Ok(reached)
}

/// Records the behaviour an input and its act show.
fn note(reached: &mut Reached, input: DispatchInput, act: Act) {
    let bit = match (input, act) {
        (_, Act::ToWorker) => B::ToWorker,
        (_, Act::ToWaiter) => B::ToWaiter,
        (_, Act::WaitHere) => B::WaitHere,
        (_, Act::Hold) => B::Hold,
        (DispatchInput::WaiterLeft, Act::Execute) => B::Released,
        (_, Act::AnswerAtBound) => B::AtBound,
        (DispatchInput::StaleWaited, Act::Drop) => B::StaleDropped,
        (_, Act::Lose) => B::Lose,
        (_, Act::Exit) => B::Exit,
        _ => return,
    };
    reached.insert(bit.bit());
}
