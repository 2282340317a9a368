//! [`Answer`]: an event with the device's text about the failed call behind it, the one
//! shape in which error text travels from the call that failed to the outcome it explains.

use lane_core::Event;

/// The event that answers an effect, with the device's text about the failed call behind it
/// (`aclGetRecentErrMsg`, read on the thread that made the call, right after it). Every
/// producer of an answer returns one: the [`Executor`](crate::Executor), a completion
/// waiter's [`run_device_wait`](crate::run_device_wait), a host worker's
/// [`run_host_work`](crate::run_host_work). [`LaneSteps::feed`](crate::LaneSteps::feed)
/// attaches the text to the outcome whose cause the event's failure is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The event.
    pub event: Event,
    /// The device's text about the failed call, if the event reports one and the device had
    /// text for it. Only a failure allocates it.
    pub text: Option<String>,
}

impl Answer {
    /// `event` with no text.
    #[must_use]
    pub const fn new(event: Event) -> Self {
        Self { event, text: None }
    }
}

impl From<Event> for Answer {
    fn from(event: Event) -> Self {
        Self::new(event)
    }
}
