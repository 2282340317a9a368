//! What every simulated call and device step costs, in virtual nanoseconds.
//!
//! Each cost is one row of [`Cost::row`]: its name (as `--cost NAME=US` takes it), its
//! default and the source of that default, side by side. Row ids (A1, A5, ...) refer to
//! `reference/measured-figures.md` §1; "E" marks an estimate where no public measurement
//! exists (the reasoning is in the row).

use core::fmt::Write as _;

/// Declares [`Cost`] (each variant with its doc), [`Cost::ALL`] in declaration order and
/// [`Cost::row`], from one row per cost: `Variant "name" default_ns "source";`.
macro_rules! cost_table {
    ($($(#[doc = $doc:literal])* $variant:ident $name:literal $ns:literal $source:literal;)*) => {
        /// One configurable cost.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Cost {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Cost {
            /// Every cost, in table order.
            pub const ALL: [Cost; [$($name),*].len()] = [$(Self::$variant),*];

            /// The cost table: `(name, default in ns, source of the default)`.
            pub const fn row(self) -> (&'static str, u64, &'static str) {
                match self {
                    $(Self::$variant => ($name, $ns, $source),)*
                }
            }
        }
    };
}

cost_table! {
    /// Host time of `aclrtCreateStreamWithConfig`.
    StreamCreate "stream_create" 300_000 "A5: rtStreamCreate ~300 us (PR #1464, a2a3)";
    /// Host time of `aclrtDestroyStream`.
    StreamDestroy "stream_destroy" 300_000 "A5: rtStreamDestroy ~300 us (PR #1464, a2a3)";
    /// Host time of one kernel launch call (AICore or AICPU).
    KernelLaunch "kernel_launch" 5_500
        "A18: aclrtLaunchKernelWithHostArgs mean 5.5 us over 288,810 calls";
    /// Extra host time of the first AICore launch after a device reset or a code upload
    /// (lazy binary load inside the launch call).
    FirstAicoreLaunch "first_aicore_launch" 400_000
        "A7: first AICore launch loads the binary lazily, ~0.4 ms on an idle device";
    /// Host time of `aclrtRecordEvent`.
    EventRecord "event_record" 2_000
        "E: unmeasured (measured-figures §1 'not found'); §5(b) says assume a few us";
    /// Host time of a non-blocking event call (`aclrtQueryEventStatus`, or a synchronise on
    /// an event that is already complete).
    EventQuery "event_query" 2_000
        "E: unmeasured; a non-blocking runtime call, taken equal to a record";
    /// Host time of `aclrtCreateEventExWithFlag`.
    EventCreate "event_create" 20_000
        "E: A21 shows event creation dominating a 0.35 ms op; created once per slot here";
    /// Host time of `aclrtDestroyEvent`.
    EventDestroy "event_destroy" 2_000 "E: non-blocking (ascend-cl.md §2.4)";
    /// Host time between a blocking wait's event completing and the host thread running.
    HostWakeup "host_wakeup" 5_000
        "A15/H11: a futex or pipe wake costs ~4.4-10 us on bare metal (measured-figures §4)";
    /// Host time of a small synchronous device-to-host `aclrtMemcpy`.
    ReadD2h "read_d2h" 9_500 "A1: small D2H aclrtMemcpy median 9.53-9.89 us, flat in size";
    /// Host time of a small synchronous host-to-device `aclrtMemcpy`.
    WriteH2d "write_h2d" 9_500
        "E: taken equal to A1 (a small synchronous copy is a driver round trip)";
    /// Host time of `aclrtMalloc`.
    Malloc "malloc" 8_000 "E: A3 measures rtMalloc + a 2.5 KB H2D at ~17 us; half of it";
    /// Host time of `aclrtFree`.
    Free "free" 5_000 "E: no public figure; cheaper than a malloc";
    /// Host time of `aclrtSetDevice`.
    SetDevice "set_device" 50_000
        "E: no public figure; re-binding after a reset re-initialises the context";
    /// Host time of `aclrtResetDeviceForce`.
    ResetDevice "reset_device" 200_000_000
        "E: no public figure; a force reset tears the context down (100s of ms)";
    /// Host time of the call part of `aclrtSynchronizeDeviceWithTimeout` (the wait is extra).
    SynchronizeDevice "synchronize_device" 2_000
        "E: the call itself; the wait for the device is added to it";
    /// Host time of a warm per-run prepare (host runtime buffer, arena, args upload).
    Prepare "prepare" 70_000 "A11: warm prepare_execution batch medians 59.1-77.1 us";
    /// Host time of finalise (copy-back, validation, frees).
    Finalise "finalise" 20_000
        "E: measured-figures §5(b): validate and finalise add D2H reads of >=9.5 us each; two of them";
    /// Host time of a code upload (publication).
    Upload "upload" 50_000
        "E: A3/A4 small H2D uploads cost 17-39 us; a code image is a few of them";
    /// Device time from a kernel's enqueue to its start on an idle stream.
    KernelStartLatency "kernel_start_latency" 5_000
        "E: unmeasured (measured-figures §1 'not found'); §5(a) lists it as part of the host round trip";
    /// Device time between two consecutive tasks on one stream.
    TaskSwitch "task_switch" 1_400
        "A19: 50 queued AICPU ops retire at 1.3-1.4 us/op, execution included";
    /// Device time of an event-record task on a stream.
    EventTask "event_task" 1_000
        "E: measured-figures §5(a) estimates the per-run event-record task at <=1 us";
    /// Device time of a run's preamble (AICPU init and AICore handshake) before its work.
    RunPreamble "run_preamble" 9_000 "A8: per-run device preamble ~9 us after PR #1323";
    /// Host time of enqueueing a small `aclrtMemcpyAsync` from or to pinned memory.
    CopyEnqueue "copy_enqueue" 2_000
        "E: unmeasured; a small async enqueue is a non-blocking runtime call, taken equal to a record";
    /// Device time of a small async copy task on a stream.
    CopyTask "copy_task" 1_000
        "E: unmeasured; a small copy task on a stream, taken equal to an event-record task";
    /// Host time of `aclrtStreamWaitEvent`.
    StreamWait "stream_wait" 2_000
        "E: unmeasured; aclrtStreamWaitEvent is a non-blocking enqueue, taken equal to a record";
}

impl Cost {
    /// The cost's name, as `--cost NAME=US` and scenario `[costs]` take it.
    pub const fn name(self) -> &'static str {
        self.row().0
    }

    /// The default, in nanoseconds.
    pub const fn default_ns(self) -> u64 {
        self.row().1
    }

    /// Where the default comes from.
    pub const fn source(self) -> &'static str {
        self.row().2
    }

    /// The cost with this name, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// Every cost's value, starting from the calibrated defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Costs {
    values: [u64; Cost::ALL.len()],
}

impl Default for Costs {
    fn default() -> Self {
        let mut values = [0; Cost::ALL.len()];
        for cost in Cost::ALL {
            values[cost.index()] = cost.default_ns();
        }
        Self { values }
    }
}

impl Costs {
    /// The value of `cost`, in nanoseconds.
    pub const fn get(&self, cost: Cost) -> u64 {
        self.values[cost.index()]
    }

    /// Sets `cost` to `ns` nanoseconds.
    pub const fn set(&mut self, cost: Cost, ns: u64) {
        self.values[cost.index()] = ns;
    }

    /// The defaults with `overrides` (ns) set, in order.
    pub fn with_overrides(overrides: &[(Cost, u64)]) -> Self {
        let mut costs = Self::default();
        for (cost, ns) in overrides {
            costs.set(*cost, *ns);
        }
        costs
    }

    /// The table of costs and their sources, for `lane-sim costs` (values in us).
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{:<22} {:>12} {:>12}  source", "cost", "us", "default us");
        for cost in Cost::ALL {
            let _ = writeln!(
                out,
                "{:<22} {:>12} {:>12}  {}",
                cost.name(),
                crate::stats::fmt_us(self.get(cost)),
                crate::stats::fmt_us(cost.default_ns()),
                cost.source()
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cost_has_a_unique_name_and_a_source() {
        for (i, a) in Cost::ALL.into_iter().enumerate() {
            assert_eq!(a.index(), i, "ALL is in declaration order");
            assert!(!a.source().is_empty());
            assert_eq!(Cost::from_name(a.name()), Some(a));
            for b in Cost::ALL.into_iter().skip(i + 1) {
                assert_ne!(a.name(), b.name());
            }
        }
    }

    #[test]
    fn defaults_match_the_issue_calibration() {
        let c = Costs::default();
        assert_eq!(c.get(Cost::StreamCreate), 300_000);
        assert_eq!(c.get(Cost::StreamDestroy), 300_000);
        assert_eq!(c.get(Cost::KernelLaunch), 5_500);
        assert_eq!(c.get(Cost::ReadD2h), 9_500);
        assert_eq!(c.get(Cost::RunPreamble), 9_000);
        assert!((60_000..=80_000).contains(&c.get(Cost::Prepare)));
    }
}
