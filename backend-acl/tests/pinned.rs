//! The copies on the streams against the fake libascendcl: pinned host memory
//! (`malloc_host`, `free_host`, `write_host`, `read_host` and their range check), the async
//! copies both ways, `stream_wait_event`, their failures, a reset that forgets pinned memory,
//! and the worker binding.

mod common;

use std::time::Duration;

use ascend_cl_sys::types::{ACL_ERROR_RT_CONTEXT_NULL, ACL_MEM_MALLOC_HUGE_FIRST, ACL_SUCCESS};
use backend_acl::{AclDevice, WorkerBinding};
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{Device, DevicePtr, HostPtr, PinnedCopies};
use run_lane_fake_ascendcl::{ENGINE_AICORE, Outcome};

use common::Handles;

/// A code no call returns on its own, so a failure is the injected one.
const CODE: i32 = 507_899;
/// A generous event wait for a loaded machine.
const LONG_MS: i32 = 30_000;
/// What a kernel writes as its "status header" in these tests.
const HEADER: [u8; 8] = [9, 8, 7, 6, 5, 4, 3, 2];

fn code() -> AclCode {
    AclCode::from_raw(CODE).unwrap()
}

/// Queues a 20 ms AICore kernel on `stream` that writes [`HEADER`] at `header` when it ends.
fn launch_writing_header(fake: &common::Fake, stream: StreamHandle, header: DevicePtr) {
    fake.control
        .launch(
            common::raw_stream(stream),
            ENGINE_AICORE,
            Duration::from_millis(20),
            Outcome::Ok,
            std::ptr::null_mut(),
            header.0 as usize as *mut core::ffi::c_void,
            &HEADER,
        )
        .expect("launch");
}

#[test]
fn pinned_memory_round_trips_through_both_async_copies_and_host_access() {
    let (fake, mut d) = common::opened();
    let h = Handles::live(&mut d);
    let (stream, event, dev, pinned) = (h.stream, h.event, h.ptr, h.host);
    d.write_host(pinned, &[1, 2, 3, 4]).unwrap();
    d.memcpy_to_device_async(dev.at(8), pinned, 4, stream).unwrap();
    d.memcpy_from_device_async(pinned.at(16), dev.at(7), 6, stream).unwrap();
    d.record_event(event, stream).unwrap();
    d.synchronize_event(event, LONG_MS).unwrap();
    let mut back = [0xAA_u8; 6];
    d.read_host(&mut back, pinned.at(16)).unwrap();
    assert_eq!(back, [0, 1, 2, 3, 4, 0], "H2D then D2H, in stream order");
    h.release(&mut d);
    assert_eq!(d.recent_error_message(), None, "nothing failed");
    let c = fake.counters();
    assert_eq!((c.host_mallocs, c.host_frees, c.async_copies), (1, 1, 2));
    fake.assert_balanced();
}

#[test]
fn a_d2h_enqueued_after_a_kernel_returns_the_kernels_bytes_once_an_event_after_it_passes() {
    let (fake, mut d) = common::opened();
    let h = Handles::live(&mut d);
    let (stream, event, dev, readback) = (h.stream, h.event, h.ptr, h.host);
    // As the executor does: a copy that never landed must not look like a clean header.
    d.write_host(readback, &[0xFF; 8]).unwrap();
    launch_writing_header(&fake, stream, dev);
    d.memcpy_from_device_async(readback, dev, HEADER.len(), stream).unwrap();
    d.record_event(event, stream).unwrap();
    d.synchronize_event(event, LONG_MS).unwrap();
    let mut got = [0_u8; 8];
    d.read_host(&mut got, readback).unwrap();
    assert_eq!(got, HEADER, "the copy ran after the kernel, before the event");
    h.release(&mut d);
    fake.assert_balanced();
}

#[test]
fn stream_wait_event_orders_a_copy_on_stream_b_after_a_kernel_on_stream_a() {
    let (fake, mut d) = common::opened();
    let a = d.create_stream().unwrap();
    let b = d.create_stream().unwrap();
    let on_a = d.create_event().unwrap();
    let on_b = d.create_event().unwrap();
    let dev = d.malloc(HEADER.len()).unwrap();
    let readback = d.malloc_host(HEADER.len()).unwrap();
    launch_writing_header(&fake, a, dev);
    d.record_event(on_a, a).unwrap();
    d.stream_wait_event(b, on_a).unwrap();
    d.memcpy_from_device_async(readback, dev, HEADER.len(), b).unwrap();
    d.record_event(on_b, b).unwrap();
    // Only stream B's event is awaited: the wait alone orders B's copy after A's kernel.
    d.synchronize_event(on_b, LONG_MS).unwrap();
    let mut got = [0_u8; 8];
    d.read_host(&mut got, readback).unwrap();
    assert_eq!(got, HEADER);
    assert_eq!(fake.counters().stream_waits, 1);
    d.free_host(readback).unwrap();
    d.free(dev).unwrap();
    for event in [on_a, on_b] {
        d.destroy_event(event).unwrap();
    }
    for stream in [a, b] {
        d.destroy_stream(stream).unwrap();
    }
    fake.assert_balanced();
}

#[test]
fn host_access_and_async_copies_outside_pinned_memory_are_invalid_param_and_touch_nothing() {
    let (fake, mut d) = common::opened();
    let stream = d.create_stream().unwrap();
    let dev = d.malloc(64).unwrap();
    let pinned = d.malloc_host(16).unwrap();
    // The last bytes of the allocation are inside; one byte further is not.
    d.write_host(pinned.at(12), &[1, 2, 3, 4]).unwrap();
    let mut four = [0_u8; 4];
    d.read_host(&mut four, pinned.at(12)).unwrap();
    assert_eq!(four, [1, 2, 3, 4]);
    let mut local = [0_u8; 4];
    let pageable = HostPtr(local.as_mut_ptr() as u64);
    let outside: [(&str, Result<(), AclCode>); 7] = [
        ("write past the end", d.write_host(pinned.at(13), &[0; 4])),
        ("read past the end", d.read_host(&mut four, pinned.at(13))),
        ("read before the start", d.read_host(&mut [0; 1], HostPtr(pinned.0.wrapping_sub(1)))),
        ("write to an unknown address", d.write_host(HostPtr(0x10), &[0])),
        ("H2D past the end", d.memcpy_to_device_async(dev, pinned.at(8), 9, stream)),
        ("D2H into pageable memory", d.memcpy_from_device_async(pageable, dev, 4, stream)),
        ("free inside an allocation", d.free_host(pinned.at(1))),
    ];
    for (what, result) in outside {
        assert_eq!(result, Err(AclCode::InvalidParam), "{what}");
    }
    assert!(d.recent_error_message().is_some_and(|m| m.contains("pinned")), "a refusal says why");
    assert_eq!(fake.counters().async_copies, 0, "no refused copy reached ACL");
    d.free_host(pinned).unwrap();
    assert_eq!(
        d.read_host(&mut four, pinned),
        Err(AclCode::InvalidParam),
        "freed pinned memory is forgotten"
    );
    d.free(dev).unwrap();
    d.destroy_stream(stream).unwrap();
    fake.assert_balanced();
}

/// One pinned-path call, made on a device with the handles it needs.
type Call = fn(&mut AclDevice, &Handles) -> Result<(), AclCode>;

#[test]
fn each_failing_pinned_call_returns_the_injected_code_and_the_librarys_message() {
    let calls: [(&str, Call); 5] = [
        ("aclrtMallocHost", |d, _| d.malloc_host(8).map(|_| ())),
        ("aclrtFreeHost", |d, r| d.free_host(r.host)),
        ("aclrtMemcpyAsync", |d, r| d.memcpy_to_device_async(r.ptr, r.host, 8, r.stream)),
        ("aclrtMemcpyAsync", |d, r| d.memcpy_from_device_async(r.host, r.ptr, 8, r.stream)),
        ("aclrtStreamWaitEvent", |d, r| d.stream_wait_event(r.stream, r.event)),
    ];
    for (name, call) in calls {
        let (fake, mut d) = common::opened();
        let r = Handles::live(&mut d);
        fake.control.fail_call(name, CODE, 0, 1).unwrap();
        assert_eq!(call(&mut d, &r), Err(code()), "{name}");
        let message = d.recent_error_message();
        assert!(message.as_deref().is_some_and(|m| m.contains(name)), "{name}: {message:?}");
        // A failed free keeps the allocation tracked, so the real free below still works.
        r.release(&mut d);
        fake.assert_balanced();
    }
}

#[test]
fn a_copy_that_fails_on_its_stream_lands_no_byte_and_only_the_stream_synchronize_reports_it() {
    let (fake, mut d) = common::opened();
    let stream = d.create_stream().unwrap();
    let event = d.create_event().unwrap();
    let dev = d.malloc(8).unwrap();
    let readback = d.malloc_host(8).unwrap();
    d.write_host(readback, &[0xFF; 8]).unwrap();
    fake.control.fault_copy(CODE, 0, 1).unwrap();
    d.memcpy_from_device_async(readback, dev, 8, stream).unwrap();
    d.record_event(event, stream).unwrap();
    // The event completes (device-truth §1); the stream's code is materialized only by its
    // synchronize.
    assert_eq!(d.synchronize_event(event, LONG_MS), Ok(()));
    assert_eq!(d.synchronize_stream(stream, LONG_MS), Err(code()));
    let mut got = [0_u8; 8];
    d.read_host(&mut got, readback).unwrap();
    assert_eq!(got, [0xFF; 8], "the readback still holds the fill");
    d.free_host(readback).unwrap();
    d.free(dev).unwrap();
    d.destroy_event(event).unwrap();
    d.destroy_stream_force(stream).unwrap();
    fake.assert_balanced();
}

#[test]
fn a_reset_forgets_pinned_memory_without_freeing_or_touching_it() {
    let (fake, mut d) = common::opened();
    let binding = d.worker_binding();
    let pinned = d.malloc_host(16).unwrap();
    // The count is the device id's, for the whole process: earlier tests' resets count too.
    let before = binding.resets();
    d.reset_device_force().unwrap();
    assert_eq!(binding.resets(), before + 1, "workers learn they must bind again");
    let mut back = [0_u8; 4];
    assert_eq!(d.read_host(&mut back, pinned), Err(AclCode::InvalidParam));
    assert_eq!(d.write_host(pinned, &[1]), Err(AclCode::InvalidParam));
    assert_eq!(d.free_host(pinned), Err(AclCode::InvalidParam));
    let c = fake.counters();
    assert_eq!((c.host_frees, c.host_allocations_reclaimed), (0, 1));
    fake.assert_balanced();
}

#[test]
fn a_worker_thread_bound_through_the_worker_binding_makes_calls_an_unbound_thread_cannot() {
    fn shareable<T: Clone + Send + Sync>(_: &T) {}
    let (fake, d) = common::opened();
    let binding: WorkerBinding = d.worker_binding();
    shareable(&binding);
    assert_eq!(binding.device_id(), d.device_id());
    let worker = binding.clone();
    let (unbound, bound, freed) = std::thread::spawn(move || {
        let malloc = || {
            let mut ptr = std::ptr::null_mut();
            // SAFETY: `ptr` is a writable pointer slot.
            let code = unsafe { worker.acl().aclrtMalloc(&mut ptr, 64, ACL_MEM_MALLOC_HUGE_FIRST) };
            (code, ptr)
        };
        let (unbound, _) = malloc();
        worker.bind().expect("bind the worker thread");
        let (bound, ptr) = malloc();
        // SAFETY: the allocation just made on this thread.
        let freed = unsafe { worker.acl().aclrtFree(ptr) };
        (unbound, bound, freed)
    })
    .join()
    .unwrap();
    assert_eq!(unbound, ACL_ERROR_RT_CONTEXT_NULL, "the fake checks binding");
    assert_eq!((bound, freed), (ACL_SUCCESS, ACL_SUCCESS));
    fake.control.fail_call("aclrtSetDevice", CODE, 0, 1).unwrap();
    assert_eq!(binding.bind(), Err(code()), "a failed bind is its code");
    drop(d);
    fake.assert_balanced();
}
