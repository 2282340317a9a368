//! The process's threads (by name), open descriptors, memory mappings and resident memory,
//! read from `/proc/self`, and waits for them to settle.

use std::thread;
use std::time::{Duration, Instant};

use super::BOUND;

/// The process's threads, open descriptors and resident memory, from `/proc/self`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    /// `Threads` of /proc/self/status.
    pub(crate) threads: u64,
    /// Entries of /proc/self/fd (the listing's own descriptor included, every time alike).
    pub(crate) fds: u64,
    /// `VmRSS` of /proc/self/status, KiB.
    pub(crate) rss_kib: u64,
    /// Lines of /proc/self/maps: the process's memory mappings (thread stacks among them).
    pub(crate) mappings: u64,
    /// Threads named `lane`, `lane-waiter` or `lane-worker-N` (lane-service's).
    pub(crate) lane_threads: u64,
    /// Threads named `fake-acl-...`: the fake's stream workers (a real libascendcl has none).
    pub(crate) fake_stream_threads: u64,
    /// Every thread's name (`/proc/self/task/*/comm`, at most 15 bytes).
    pub(crate) names: Vec<String>,
}

impl Usage {
    /// Threads whose name starts with `prefix`.
    pub(crate) fn named(&self, prefix: &str) -> u64 {
        self.names.iter().filter(|n| n.starts_with(prefix)).count() as u64
    }
}

fn status_field(status: &str, field: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("/proc/self/status has no {field}"))
}

/// The process's [`Usage`] now.
pub(crate) fn usage() -> Usage {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let fds = std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count() as u64;
    let (mut lane_threads, mut fake_stream_threads) = (0, 0);
    let mut names = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let Ok(task) = task else { continue };
        // A thread that ended between the listing and the read has no comm: not counted.
        let Ok(name) = std::fs::read_to_string(task.path().join("comm")) else {
            continue;
        };
        let name = name.trim_end().to_owned();
        if name == "lane" || name.starts_with("lane-") {
            lane_threads += 1;
        } else if name.starts_with("fake-acl-") {
            fake_stream_threads += 1;
        }
        names.push(name);
    }
    Usage {
        threads: status_field(&status, "Threads:"),
        fds,
        rss_kib: status_field(&status, "VmRSS:"),
        mappings: std::fs::read_to_string("/proc/self/maps")
            .expect("/proc/self/maps")
            .lines()
            .count() as u64,
        lane_threads,
        fake_stream_threads,
        names,
    }
}

/// Waits (at most [`BOUND`]) until the process's usage satisfies `settled`, and returns it.
/// Two things settle shortly after the call that causes them: a new thread takes its name
/// (`lane-waiter`, say) once it runs, not when it is spawned, and a destroyed stream's worker
/// in the fake ends once woken, after the destroy returned.
pub(crate) fn wait_for_usage(what: &str, settled: impl Fn(&Usage) -> bool) -> Usage {
    let start = Instant::now();
    loop {
        let now = usage();
        if settled(&now) {
            return now;
        }
        assert!(start.elapsed() < BOUND, "{what}, after {BOUND:?}: {now:?}");
        thread::yield_now();
    }
}

/// How long a joined thread may stay listed in `/proc/self/task`: the kernel wakes the
/// joiner as the thread exits and drops its entry a moment later, once the exiting thread
/// is scheduled again (on a loaded machine, later). A thread destroy failed to join keeps
/// running, and outlives any grace.
pub(crate) const REAP_GRACE: Duration = Duration::from_secs(5);

/// Waits at most [`REAP_GRACE`] for the process to list no lane thread, and returns the
/// usage then: what a destroy that joined its lane's threads leaves.
pub(crate) fn wait_for_lane_threads_joined(what: &str) -> Usage {
    let start = Instant::now();
    loop {
        let now = usage();
        if now.lane_threads == 0 {
            return now;
        }
        assert!(
            start.elapsed() < REAP_GRACE,
            "{what}: {} lane threads still listed {REAP_GRACE:?} after destroy returned: {:?}",
            now.lane_threads,
            now.names
        );
        thread::yield_now();
    }
}

/// [`wait_for_usage`] until the process has no lane thread (a destroy joins them) and no
/// fake stream thread.
pub(crate) fn wait_for_no_lane_threads() -> Usage {
    wait_for_usage("no lane or fake stream thread left", |u| {
        u.lane_threads == 0 && u.fake_stream_threads == 0
    })
}
