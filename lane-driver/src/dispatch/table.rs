//! The dispatch machine's table: its states, inputs and actions as enums, and the one
//! transition function [`dispatch_step`], rendered by [`dispatch_table`].

use core::fmt::Write as _;

/// Which threads a lane has besides the one running its steps: the setting picks where
/// runner host work and device waits go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Setting {
    /// Host workers take the runner's prepare and finalise.
    pub workers: bool,
    /// A completion waiter makes every blocking device wait; without one, the thread
    /// running the steps makes them itself ([`Act::WaitHere`]).
    pub waiter: bool,
}

impl Setting {
    /// [`Driver::turn`](crate::Driver::turn): no other thread, every wait made here.
    pub const DRIVER: Self = Self { workers: false, waiter: false };
    /// A threaded lane without host workers: a completion waiter, runner work here.
    pub const WAITER: Self = Self { workers: false, waiter: true };
    /// A threaded lane with host workers and a completion waiter.
    pub const WORKERS: Self = Self { workers: true, waiter: true };
    /// Every setting, in table order.
    pub const ALL: [Self; 3] = [Self::DRIVER, Self::WAITER, Self::WORKERS];

    /// The setting's name in the rendered table.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match (self.workers, self.waiter) {
            (false, false) => "driver",
            (false, true) => "waiter",
            (true, true) => "workers + waiter",
            (true, false) => "workers, no waiter",
        }
    }
}

/// Where the machine stands, as the table sees it: the kind of its [`State`](super::State),
/// whose data (the wait out, the held reset and its bound, the deferred call) the table
/// does not need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DispatchState {
    /// No device wait is out.
    Free,
    /// One device wait is out (offered to the completion waiter, inside its call, or left for
    /// this thread to make).
    WaitOut,
    /// A force reset waits for the completion waiter to leave its device call (L-20).
    ResetHeld,
    /// A recovery call (a force reset, a probe) waits for one of the lane's own threads: a
    /// bound submitter makes none.
    Deferred,
}

impl DispatchState {
    /// Every state, in table order.
    pub const ALL: [Self; 4] = [Self::Free, Self::WaitOut, Self::ResetHeld, Self::Deferred];
}

/// What the thread running the steps found, in the order it looks (one input per look).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DispatchInput {
    /// A host worker answered a job.
    WorkerAnswered,
    /// A host worker could not bind the device and gave its job back.
    HandedBack,
    /// A fault notice concerns the lane's device (L-19).
    Notice,
    /// The completion waiter took the wait offered to it and started its device call: the
    /// wait's bound counts from that start.
    WaitStarted,
    /// Recovery is next (a force reset or a probe, held, deferred or the lane's next effect)
    /// and the thread running the steps makes none: a bound submitter.
    Elsewhere,
    /// A deferred recovery call, and the thread running the steps is one of the lane's own.
    Resume,
    /// A reset is held and the completion waiter has left its device call.
    WaiterLeft,
    /// A reset is held, the waiter is still inside its call, and its bound has not passed.
    WaiterInside,
    /// A reset is held and the waiter is still inside its call past the latest bound of any
    /// wait it was given (it ignores its timeout).
    WaiterPastBound,
    /// The run of the completion wait out no longer awaits (a poison abandoned it).
    Abandoned,
    /// The waiter answered the wait out with its completion event (or a drain's end).
    Waited,
    /// The waiter answered the wait out early (its own expiry, which the lane ignores) and
    /// the run still awaits.
    WaitedEarly,
    /// The waiter answered a wait that is no longer out (answered at its bound, replaced,
    /// abandoned).
    StaleWaited,
    /// The last handle is gone and the lane is not closed for it yet.
    Shutdown,
    /// Shut down, closed, with a stream the teardown left (S-7): one more destroy.
    TeardownLeft,
    /// The lane's next effect is runner host work (`PrepareRun`, `FinaliseRun`).
    HostWork,
    /// The next effect is the recovery drain (`DrainDevice`), a blocking device wait.
    Drain,
    /// The next effect is `ForceReset` (or `Hook(OnPoison)`, after which the runtime resets,
    /// L-24) and the waiter is in no device call.
    Reset,
    /// The next effect is `ForceReset` (or `Hook(OnPoison)`) and the waiter is inside a
    /// device call.
    ResetUnderWait,
    /// The next effect is `AwaitCompletion` (the executor notes the run, no device call).
    Await,
    /// The next effect is any other: a device or runner call on this thread.
    Call,
    /// No effect is left and the executor awaits a run's completion.
    Awaiting,
    /// The wait out's bound passed with no answer (the waiter is stuck in a call).
    BoundPassed,
    /// Nothing to do but the wait out.
    Waiting,
    /// No effect is left, nothing new to wait for, and host workers have jobs out.
    JobsOut,
    /// Nothing to do and nothing out: the lane is settled.
    Settled,
    /// Settled, and the last handle is gone.
    SettledShutdown,
}

impl DispatchInput {
    /// Every input, in table order.
    pub const ALL: [Self; 27] = [
        Self::WorkerAnswered,
        Self::HandedBack,
        Self::Notice,
        Self::WaitStarted,
        Self::Elsewhere,
        Self::Resume,
        Self::WaiterLeft,
        Self::WaiterInside,
        Self::WaiterPastBound,
        Self::Abandoned,
        Self::Waited,
        Self::WaitedEarly,
        Self::StaleWaited,
        Self::Shutdown,
        Self::TeardownLeft,
        Self::HostWork,
        Self::Drain,
        Self::Reset,
        Self::ResetUnderWait,
        Self::Await,
        Self::Call,
        Self::Awaiting,
        Self::BoundPassed,
        Self::Waiting,
        Self::JobsOut,
        Self::Settled,
        Self::SettledShutdown,
    ];
}

/// What the machine does with an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Act {
    /// Feed the answer (or the notice) to the lane and look again.
    Feed,
    /// Drop the answer: the lane no longer asks for it.
    Drop,
    /// Forget the wait out: its answer will be dropped.
    Forget,
    /// Feed the answer, then hand the same wait to the waiter again.
    FeedAndAgain,
    /// Close the lane for the shutdown.
    Close,
    /// Destroy the streams the teardown left once more.
    RetryTeardown,
    /// Execute the effect on this thread, then feed its event.
    Execute,
    /// Note the awaited run in the executor (no device call) and look again.
    Note,
    /// Hand the runner work to a host worker.
    ToWorker,
    /// Hand the device wait to the completion waiter.
    ToWaiter,
    /// Make the device wait on this thread (blocking): the zero-worker setting.
    WaitHere,
    /// Hold the reset until the waiter leaves its call (no wait is offered then: the state
    /// is `Free`).
    Hold,
    /// Take back the wait and answer it at its bound (the waiter is stuck).
    AnswerAtBound,
    /// Nothing to do until an answer, a command, or the next timer.
    Sleep,
    /// The lane is settled and shut down: the thread ends.
    Exit,
    /// A reset cannot be made safely: the lane ends, lost.
    Lose,
    /// Count the wait's bound from the start of the waiter's call, not from its hand-out.
    CountFromStart,
    /// Keep the recovery call for one of the lane's own threads, and let go of the steps.
    Defer,
    /// Let go of the steps: one of the lane's own threads makes the recovery.
    Leave,
    /// Take the deferred call back and route it as the lane's next effect.
    Route,
}

impl Act {
    /// What the action does, for the rendered table.
    #[must_use]
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Feed => "feed the lane",
            Self::Drop => "drop the answer",
            Self::Forget => "forget the wait (its answer is dropped)",
            Self::FeedAndAgain => "feed; hand the same wait again",
            Self::Close => "close the lane",
            Self::RetryTeardown => "destroy the streams left once more",
            Self::Execute => "execute here",
            Self::Note => "note the awaited run",
            Self::ToWorker => "hand to a host worker",
            Self::ToWaiter => "hand to the completion waiter",
            Self::WaitHere => "wait here (blocking)",
            Self::Hold => "hold the reset until the waiter leaves its call",
            Self::AnswerAtBound => "take back the wait; answer it at its bound",
            Self::Sleep => "sleep until an answer, a command or the next timer",
            Self::Exit => "end the thread",
            Self::Lose => "lose the lane (no reset under a wait)",
            Self::CountFromStart => "count the wait's bound from the call's start",
            Self::Defer => "keep the call for the lane's own threads; let go",
            Self::Leave => "let go; the lane's own threads make it",
            Self::Route => "take the deferred call back and route it",
        }
    }
}

/// Why [`dispatch_step`] refused an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DispatchRefusal {
    /// The input cannot happen in this state.
    NotExpected,
    /// The input cannot happen in this setting (no worker, no waiter).
    NotInSetting,
}

/// The one transition function of the dispatch machine: in `setting` and `state`, what
/// `input` leads to.
///
/// # Errors
///
/// [`DispatchRefusal`] for an input the state or the setting rules out.
pub const fn dispatch_step(
    setting: Setting,
    state: DispatchState,
    input: DispatchInput,
) -> Result<(DispatchState, Act), DispatchRefusal> {
    use DispatchInput as I;
    use DispatchState as S;
    let Setting { workers, waiter } = setting;
    Ok(match (state, input) {
        // Only a waiter's call can hold a reset, and only a threaded lane has submitters that
        // make no recovery.
        (S::ResetHeld | S::Deferred, _) | (_, I::Elsewhere | I::WaitStarted) if !waiter => {
            return Err(DispatchRefusal::NotInSetting);
        }
        // Answers are fed first, whatever the state: a poison they bring moves the lane on
        // before anything is handed out.
        (_, I::WorkerAnswered | I::HandedBack) if !workers => {
            return Err(DispatchRefusal::NotInSetting);
        }
        (_, I::WorkerAnswered) => (state, Act::Feed),
        (_, I::HandedBack) => (state, Act::Execute),
        (_, I::Notice) => (state, Act::Feed),
        // The waiter takes only the wait offered to it, which is the wait out.
        (S::WaitOut, I::WaitStarted) => (S::WaitOut, Act::CountFromStart),

        // Recovery is made only by the lane's own threads (a bound submitter leaves it).
        (S::ResetHeld | S::Deferred, I::Elsewhere) => (state, Act::Leave),
        (S::Free, I::Elsewhere) => (S::Deferred, Act::Defer),
        (S::Deferred, I::Resume) => (S::Free, Act::Route),
        (S::Deferred, _) => return Err(DispatchRefusal::NotExpected),

        // L-20: a force reset waits until the waiter is out of its device call.
        (S::ResetHeld, I::WaiterLeft) => (S::Free, Act::Execute),
        (S::ResetHeld, I::WaiterInside) => (S::ResetHeld, Act::Sleep),
        (S::ResetHeld, I::WaiterPastBound) => (S::ResetHeld, Act::Lose),
        (S::ResetHeld, _) => return Err(DispatchRefusal::NotExpected),

        (S::WaitOut, I::Abandoned) => (S::Free, Act::Forget),
        (S::WaitOut, I::Waited) => (S::Free, Act::Feed),
        (S::WaitOut, I::WaitedEarly) => (S::WaitOut, Act::FeedAndAgain),
        (S::Free | S::WaitOut, I::StaleWaited) if waiter => (state, Act::Drop),

        (S::Free | S::WaitOut, I::Shutdown) => (state, Act::Close),
        (S::Free | S::WaitOut, I::TeardownLeft) => (state, Act::RetryTeardown),

        (S::Free | S::WaitOut, I::HostWork) if workers => (state, Act::ToWorker),
        (S::Free | S::WaitOut, I::HostWork) => (state, Act::Execute),
        // A drain replaces a wait out (abandoned: its answer names an older ticket).
        (S::Free | S::WaitOut, I::Drain) if waiter => (S::WaitOut, Act::ToWaiter),
        (S::Free | S::WaitOut, I::Drain) => (state, Act::Execute),
        (S::Free, I::Reset) => (S::Free, Act::Execute),
        (S::Free, I::ResetUnderWait) if waiter => (S::ResetHeld, Act::Hold),
        (S::Free | S::WaitOut, I::Await) => (state, Act::Note),
        (S::Free | S::WaitOut, I::Call) => (state, Act::Execute),

        (S::Free, I::Awaiting) if waiter => (S::WaitOut, Act::ToWaiter),
        (S::Free, I::Awaiting) => (S::WaitOut, Act::WaitHere),
        (S::WaitOut, I::BoundPassed) if waiter => (S::Free, Act::AnswerAtBound),
        // A wait left for this thread is made by it; with a waiter, sleep until its answer.
        (S::WaitOut, I::Waiting) if waiter => (S::WaitOut, Act::Sleep),
        (S::WaitOut, I::Waiting) => (S::WaitOut, Act::WaitHere),
        (S::Free, I::JobsOut) if workers => (S::Free, Act::Sleep),
        (S::Free, I::Settled) => (S::Free, Act::Sleep),
        (S::Free, I::SettledShutdown) => (S::Free, Act::Exit),
        (_, I::StaleWaited | I::ResetUnderWait | I::BoundPassed | I::JobsOut) => {
            return Err(DispatchRefusal::NotInSetting);
        }
        _ => return Err(DispatchRefusal::NotExpected),
    })
}

/// Renders the machine as a Markdown table: one row per state and input that some setting
/// accepts, one column per [`Setting`], and per state one row of what each setting refuses
/// and why.
#[must_use]
pub fn dispatch_table() -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Dispatch machine\n");
    let _ = writeln!(
        out,
        "What the thread running a lane's steps does with what it finds \
         (`lane_driver::dispatch::dispatch_step`), in the order it looks. Each cell is \
         `next state: action`; `-` is an input the setting refuses in that state. A state's \
         last row, `*refuses*`, says why, per setting: the inputs it refuses grouped by the \
         reason, `every other input` being those with no cell and no group in its column (an \
         input no setting accepts in a state has no row). \
         Settings: `driver` is `Driver::turn` (no other thread), `waiter` a lane with a \
         completion waiter (lane-service's waiter thread, or, where the caller drives the \
         lane, whichever caller is inside `wait`), `workers + waiter` one with host workers \
         too. Inputs are pushed (`handle_*`) or found by `poll`; outputs are polled.\n"
    );
    let _ = write!(out, "| state | input |");
    for setting in Setting::ALL {
        let _ = write!(out, " {} |", setting.label());
    }
    let _ = write!(out, "\n|---|---|");
    for _ in Setting::ALL {
        let _ = write!(out, "---|");
    }
    out.push('\n');
    for state in DispatchState::ALL {
        for input in DispatchInput::ALL {
            let cells: Vec<_> =
                Setting::ALL.iter().map(|&setting| dispatch_step(setting, state, input)).collect();
            if cells.iter().all(Result::is_err) {
                continue;
            }
            let _ = write!(out, "| {state:?} | {input:?} |");
            for cell in cells {
                match cell {
                    Ok((next, act)) => {
                        let _ = write!(out, " {next:?}: {} |", act.describe());
                    }
                    Err(_) => {
                        let _ = write!(out, " - |");
                    }
                }
            }
            out.push('\n');
        }
        let _ = write!(out, "| {state:?} | *refuses* |");
        for setting in Setting::ALL {
            let _ = write!(out, " {} |", refusals(setting, state));
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "\n## Timers\n\nEvery deadline of the machine is in one `TimerTable`, derived from its \
         state after every poll:\n"
    );
    for timer in super::Timer::ALL {
        let _ = writeln!(out, "- `{timer:?}`: {}", timer.describe());
    }
    out
}

/// What `setting` refuses in `state`, grouped by the reason: the reason that refuses the
/// most (the first of them on a tie) as `every other input: reason.` (`every input` when the
/// setting accepts nothing there), after the others, each as `A, B: reason.`; `-` when it
/// refuses nothing.
fn refusals(setting: Setting, state: DispatchState) -> String {
    let mut reasons: Vec<(&'static str, Vec<String>)> = Vec::new();
    let mut refused = 0;
    for input in DispatchInput::ALL {
        let Err(refusal) = dispatch_step(setting, state, input) else {
            continue;
        };
        refused += 1;
        let reason = refusal.reason();
        match reasons.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, inputs)) => inputs.push(format!("{input:?}")),
            None => reasons.push((reason, vec![format!("{input:?}")])),
        }
    }
    if reasons.is_empty() {
        return "-".to_owned();
    }
    let mut usual = 0;
    for (at, (_, inputs)) in reasons.iter().enumerate() {
        if inputs.len() > reasons[usual].1.len() {
            usual = at;
        }
    }
    let (reason, _) = reasons.remove(usual);
    let mut groups: Vec<String> = reasons
        .iter()
        .map(|(reason, inputs)| format!("{}: {reason}.", inputs.join(", ")))
        .collect();
    groups.push(if !groups.is_empty() {
        format!("Every other input: {reason}.")
    } else if refused == DispatchInput::ALL.len() {
        format!("every input: {reason}.")
    } else {
        format!("every other input: {reason}.")
    });
    groups.join(" ")
}

impl DispatchRefusal {
    /// A one-line reason, for the table.
    #[must_use]
    pub const fn reason(self) -> &'static str {
        match self {
            Self::NotExpected => "not expected in this state",
            Self::NotInSetting => "not in this setting",
        }
    }
}
