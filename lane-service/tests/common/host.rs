//! A device whose runs complete at once and a runner whose host work may run on host
//! workers that sleep a seeded random short time: the service's threads without a
//! simulator (whose runner work is bound to its device), for the worker tests. Nothing here
//! allocates per run.

use lane_core::status_latch::{AclCode, RECORD_BYTES, RecordWrite, ReturnCode, encode_record};
use lane_core::stream_pair::StreamHandle;
use lane_core::{CodeRef, FinaliseFailure, RunId, SlotId, Timestamp};
use lane_driver::{
    CompletionWaiter, Concurrency, Device, DevicePtr, EventHandle, HostWorker, PrepareError,
    RunArgs, Runner,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// A device on which every run has completed by the time its events are waited for, with a
/// clean status header (all zeros), a plausible timing buffer, and the ok record its runner
/// published ([`Instant0::publish`]).
pub struct Instant0 {
    epoch: Instant,
    /// Each record region's last published epoch, shared with the waiter (which reads it).
    records: Records,
    next: u64,
    /// Status reads so far, the device's and the waiter's (which reads the status with the
    /// record), shared with the waiter.
    reads: Arc<AtomicU64>,
    /// Status reads the device made itself (a copy of their own, not the waiter's).
    status_copies: Arc<AtomicU64>,
    /// The status read with this number (from 1) fails with 507015 (an AICore exception: a
    /// poison). A read of the status with the record counts, and then fails the record's read.
    pub fail_read: Option<u64>,
    /// Gives no completion waiter (as `Device::completion_waiter`'s default: 207000).
    pub no_waiter: bool,
    /// The waiter's first event wait blocks this long, whatever its timeout (a driver call
    /// that never honours its bound), then succeeds.
    pub stuck_wait: Option<Duration>,
    /// The waiter's drain takes its whole timeout (a device that stays busy), instead of
    /// returning at once.
    pub slow_drain: bool,
    /// No run ever completes: the waiter's looks find none complete, and its event waits
    /// sleep their whole timeout and return 507047 (a hung kernel on a device that honours
    /// the wait's bound).
    pub hung: bool,
}

impl Instant0 {
    pub fn new() -> Self {
        Self {
            epoch: Instant::now(),
            records: Records::default(),
            next: 0,
            reads: Arc::new(AtomicU64::new(0)),
            status_copies: Arc::new(AtomicU64::new(0)),
            fail_read: None,
            no_waiter: false,
            stuck_wait: None,
            slow_drain: false,
            hung: false,
        }
    }

    fn id(&mut self) -> u64 {
        self.next += 1;
        self.next << 16
    }

    /// Every status read so far, the device's own and those the waiter made with a record.
    pub fn status_reads(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.reads)
    }

    /// The status reads the device made as copies of their own.
    pub fn status_copies(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.status_copies)
    }

    /// The runtime's device side publishing an ok record for the run stamped `epoch`.
    pub fn publish(&self, record: DevicePtr, epoch: u64) {
        self.records.lock().unwrap().insert(record.0, epoch);
    }
}

/// Record region address to the epoch last published there.
type Records = Arc<Mutex<BTreeMap<u64, u64>>>;

/// One more status read: `Err` when it is the one `fail_read` names.
fn status_read(reads: &AtomicU64, fail_read: Option<u64>) -> Result<(), AclCode> {
    let read = reads.fetch_add(1, Ordering::SeqCst) + 1;
    if Some(read) == fail_read {
        return Err(AclCode::from_raw(507_015).expect("a failure code"));
    }
    Ok(())
}

/// The status bytes every run leaves: the timing buffer (start 1, end 2) and a clean header
/// (zeros).
fn fill_status(dst: &mut [u8]) {
    dst.fill(0);
    if let Some(timing) = dst.get_mut(..16) {
        timing[..8].copy_from_slice(&1u64.to_le_bytes());
        timing[8..].copy_from_slice(&2u64.to_le_bytes());
    }
}

impl Device for Instant0 {
    fn now(&mut self) -> Timestamp {
        Timestamp(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
    fn launch_context(&mut self, _context: Option<lane_driver::LaunchContext>) {}
    fn set_device(&mut self) -> Result<(), AclCode> {
        Ok(())
    }
    fn synchronize_device(&mut self, _timeout_ms: i32) -> Result<(), AclCode> {
        Ok(())
    }
    fn reset_device_force(&mut self) -> Result<(), AclCode> {
        Ok(())
    }
    fn create_stream(&mut self) -> Result<StreamHandle, AclCode> {
        Ok(StreamHandle(self.id()))
    }
    fn destroy_stream(&mut self, _stream: StreamHandle) -> Result<(), AclCode> {
        Ok(())
    }
    fn destroy_stream_force(&mut self, _stream: StreamHandle) -> Result<(), AclCode> {
        Ok(())
    }
    fn create_event(&mut self) -> Result<EventHandle, AclCode> {
        Ok(EventHandle(self.id()))
    }
    fn record_event(&mut self, _event: EventHandle, _stream: StreamHandle) -> Result<(), AclCode> {
        Ok(())
    }
    fn synchronize_event(&mut self, _event: EventHandle, _timeout_ms: i32) -> Result<(), AclCode> {
        Ok(())
    }
    fn query_event(&mut self, _event: EventHandle) -> Result<bool, AclCode> {
        Ok(true)
    }
    fn synchronize_stream(
        &mut self,
        _stream: StreamHandle,
        _timeout_ms: i32,
    ) -> Result<(), AclCode> {
        Ok(())
    }
    fn stream_wait_event(
        &mut self,
        _stream: StreamHandle,
        _event: EventHandle,
    ) -> Result<(), AclCode> {
        Ok(())
    }
    fn destroy_event(&mut self, _event: EventHandle) -> Result<(), AclCode> {
        Ok(())
    }
    fn malloc(&mut self, _size: usize) -> Result<DevicePtr, AclCode> {
        Ok(DevicePtr(self.id()))
    }
    fn free(&mut self, _ptr: DevicePtr) -> Result<(), AclCode> {
        Ok(())
    }
    fn memcpy_to_device(&mut self, _dst: DevicePtr, _src: &[u8]) -> Result<(), AclCode> {
        Ok(())
    }
    fn memcpy_from_device(&mut self, dst: &mut [u8], _src: DevicePtr) -> Result<(), AclCode> {
        // The read is the status read: the timing buffer and the header.
        self.status_copies.fetch_add(1, Ordering::SeqCst);
        status_read(&self.reads, self.fail_read)?;
        fill_status(dst);
        Ok(())
    }
    fn completion_waiter(&mut self) -> Result<Box<dyn CompletionWaiter + Send>, AclCode> {
        if self.no_waiter {
            return Err(AclCode::RtFeatureNotSupport);
        }
        Ok(Box::new(Instant0Waiter {
            epoch: self.epoch,
            records: Arc::clone(&self.records),
            reads: Arc::clone(&self.reads),
            fail_read: self.fail_read,
            stuck: self.stuck_wait.take(),
            slow_drain: self.slow_drain,
            hung: self.hung,
        }))
    }
}

/// [`Instant0`]'s completion waiter: every run has completed when it looks (after its first
/// wait got stuck, if it does).
pub struct Instant0Waiter {
    epoch: Instant,
    records: Records,
    reads: Arc<AtomicU64>,
    fail_read: Option<u64>,
    stuck: Option<Duration>,
    slow_drain: bool,
    hung: bool,
}

impl CompletionWaiter for Instant0Waiter {
    fn now(&mut self) -> Timestamp {
        Timestamp(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
    fn synchronize_event(&mut self, _event: EventHandle, timeout_ms: i32) -> Result<(), AclCode> {
        if self.hung {
            thread::sleep(Duration::from_millis(
                u64::try_from(timeout_ms).unwrap_or(0),
            ));
            return Err(AclCode::RtEventSyncTimeout);
        }
        if let Some(stuck) = self.stuck.take() {
            thread::sleep(stuck);
        }
        Ok(())
    }
    fn query_event(&mut self, _event: EventHandle) -> Result<bool, AclCode> {
        Ok(self.stuck.is_none() && !self.hung)
    }
    fn synchronize_device(&mut self, timeout_ms: i32) -> Result<(), AclCode> {
        if self.slow_drain {
            thread::sleep(Duration::from_millis(
                u64::try_from(timeout_ms).unwrap_or(0),
            ));
        }
        Ok(())
    }
    fn synchronize_stream(
        &mut self,
        _stream: StreamHandle,
        _timeout_ms: i32,
    ) -> Result<(), AclCode> {
        Ok(())
    }
    fn memcpy_from_device(&mut self, dst: &mut [u8], src: DevicePtr) -> Result<(), AclCode> {
        // The record, read alone or (synchronous copies) behind the status bytes: the ok
        // record its runner published, else zeros.
        let (status, record) = dst.split_at_mut(dst.len().saturating_sub(RECORD_BYTES));
        if !status.is_empty() {
            status_read(&self.reads, self.fail_read)?;
            fill_status(status);
        }
        let at = src.0 + u64::try_from(status.len()).unwrap_or(u64::MAX);
        let published = self.records.lock().unwrap().get(&at).copied();
        record.fill(0);
        if let Some(epoch) = published {
            let bytes = encode_record(epoch, &RecordWrite::Ok);
            let len = record.len().min(bytes.len());
            record[..len].copy_from_slice(&bytes[..len]);
        }
        Ok(())
    }
}

/// What the runner's host work records: where it ran.
#[derive(Default)]
pub struct Seen {
    /// Prepares and finalises run on the lane thread.
    pub on_lane: AtomicU64,
    /// Prepares and finalises run on a host worker.
    pub on_worker: AtomicU64,
    /// A worker was dropped (its thread ended).
    pub worker_dropped: AtomicBool,
    /// Binds a worker failed (each hands its job back to the lane thread).
    pub binds_failed: AtomicU64,
}

/// The runner on the lane thread: kernels are no-ops on [`Instant0`]; host work, when it is
/// not on a worker, runs here.
pub struct HostRunner {
    pub concurrency: Concurrency,
    pub seen: Arc<Seen>,
}

impl Runner<Instant0> for HostRunner {
    fn prepare_run(
        &mut self,
        _device: &mut Instant0,
        _run: RunId,
        _slot: SlotId,
        _diagnostics: bool,
    ) -> Result<(), PrepareError> {
        self.seen.on_lane.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn launch_aicore(
        &mut self,
        _device: &mut Instant0,
        _stream: StreamHandle,
        _args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        Ok(())
    }
    fn launch_aicpu(
        &mut self,
        device: &mut Instant0,
        _stream: StreamHandle,
        args: &RunArgs,
    ) -> Result<(), ReturnCode> {
        device.publish(args.record, args.epoch);
        Ok(())
    }
    fn finalise_run(
        &mut self,
        _device: &mut Instant0,
        _run: RunId,
        _slot: SlotId,
        _copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        self.seen.on_lane.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn upload_code(&mut self, _device: &mut Instant0, _code: CodeRef) -> Result<(), ReturnCode> {
        Ok(())
    }
    fn concurrency(&self) -> Concurrency {
        self.concurrency
    }
}

/// Runner work off the lane thread on a seeded random schedule: each call sleeps
/// `0..max_sleep` (xorshift, no allocation), so answers come back in random order. A run
/// whose id is `panic_on` panics its prepare. With `fail_bind_every` n > 0, every n-th bind
/// fails (as `aclrtSetDevice` after a force reset may).
pub struct Sleepy {
    pub state: u64,
    pub max_sleep: Duration,
    pub seen: Arc<Seen>,
    pub panic_on: Option<u64>,
    pub fail_bind_every: u64,
    pub binds: u64,
}

impl Sleepy {
    pub fn new(seed: u64, max_sleep: Duration, seen: Arc<Seen>) -> Self {
        Self {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            max_sleep,
            seen,
            panic_on: None,
            fail_bind_every: 0,
            binds: 0,
        }
    }

    fn nap(&mut self) {
        self.seen.on_worker.fetch_add(1, Ordering::SeqCst);
        let max = u64::try_from(self.max_sleep.as_nanos()).unwrap_or(u64::MAX);
        if max == 0 {
            return;
        }
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        thread::sleep(Duration::from_nanos(self.state % max));
    }
}

impl Drop for Sleepy {
    fn drop(&mut self) {
        self.seen.worker_dropped.store(true, Ordering::SeqCst);
    }
}

impl HostWorker for Sleepy {
    fn bind(&mut self) -> Result<(), AclCode> {
        self.binds += 1;
        if self.fail_bind_every > 0 && self.binds % self.fail_bind_every == 0 {
            self.seen.binds_failed.fetch_add(1, Ordering::SeqCst);
            return Err(AclCode::RtInvalidDeviceId);
        }
        Ok(())
    }
    fn prepare_run(
        &mut self,
        run: RunId,
        _slot: SlotId,
        _diagnostics: bool,
    ) -> Result<(), PrepareError> {
        assert_ne!(
            Some(run.0),
            self.panic_on,
            "the worker panics on run {}",
            run.0
        );
        self.nap();
        Ok(())
    }
    fn finalise_run(
        &mut self,
        _run: RunId,
        _slot: SlotId,
        _copy_back: bool,
    ) -> Result<(), FinaliseFailure> {
        self.nap();
        Ok(())
    }
}

/// Runner work allowed off the lane thread, two prepares at once.
pub const OFF_LANE: Concurrency = Concurrency {
    off_lane_thread: true,
    prepares_at_once: 2,
};
