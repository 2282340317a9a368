//! A handle `AclDevice` did not issue, or no longer holds (destroyed, freed, or from before a
//! force reset), is refused with a code and a message before any ACL call: it never reaches
//! the library as a pointer. Each call is proven unmade by a failure armed on its symbol that
//! is still pending afterwards.

mod common;

use backend_acl::AclDevice;
use lane_core::status_latch::AclCode;
use lane_core::stream_pair::StreamHandle;
use lane_driver::{Device, EventHandle, PinnedCopies};

use common::Handles;

/// A code no call returns on its own, so a failure is the armed one.
const CODE: i32 = 507_899;

/// One handle-taking call with the handles it is given.
type Call = fn(&mut AclDevice, &Handles) -> Result<(), AclCode>;

/// Every `Device` and `PinnedCopies` call that hands a stream, an event or a device range to
/// ACL, with the symbol it calls.
const CALLS: [(&str, Call); 12] = [
    ("aclrtDestroyStream", |d, h| d.destroy_stream(h.stream)),
    ("aclrtDestroyStreamForce", |d, h| d.destroy_stream_force(h.stream)),
    ("aclrtRecordEvent", |d, h| d.record_event(h.event, h.stream)),
    ("aclrtSynchronizeEventWithTimeout", |d, h| d.synchronize_event(h.event, 1_000)),
    ("aclrtSynchronizeStreamWithTimeout", |d, h| d.synchronize_stream(h.stream, 1_000)),
    ("aclrtStreamWaitEvent", |d, h| d.stream_wait_event(h.stream, h.event)),
    ("aclrtDestroyEvent", |d, h| d.destroy_event(h.event)),
    ("aclrtFree", |d, h| d.free(h.ptr)),
    ("aclrtMemcpy", |d, h| d.memcpy_to_device(h.ptr, &[1; 8])),
    ("aclrtMemcpy", |d, h| d.memcpy_from_device(&mut [0; 8], h.ptr)),
    ("aclrtMemcpyAsync", |d, h| d.memcpy_to_device_async(h.ptr, h.host, 8, h.stream)),
    ("aclrtMemcpyAsync", |d, h| d.memcpy_from_device_async(h.host, h.ptr, 8, h.stream)),
];

/// `call` with `bad` handles is refused with `expected` and a message naming the refusal,
/// and its symbol was never called: the failure armed on it is still pending, and the same
/// call with the `good` handles spends it.
fn assert_refused(
    fake: &common::Fake,
    d: &mut AclDevice,
    (symbol, call): (&str, Call),
    (bad, good): (&Handles, &Handles),
    expected: AclCode,
    case: &str,
) {
    fake.control.fail_call(symbol, CODE, 0, 1).unwrap();
    assert_eq!(call(d, bad), Err(expected), "{case}: {symbol}");
    let message = d.recent_error_message().unwrap_or_default();
    assert!(message.contains("refused before any ACL call"), "{case}: {symbol}: {message}");
    assert_eq!(
        call(d, good),
        Err(AclCode::from_raw(CODE).unwrap()),
        "{case}: {symbol} was called with the bad handle"
    );
    drop(d.recent_error_message());
}

/// The code a bad handle of each call is refused with: a stream or an event 107017, a
/// device range 107000.
fn refusal(symbol: &str, bad_stream: bool) -> AclCode {
    match symbol {
        "aclrtFree" | "aclrtMemcpy" => AclCode::RtParamInvalid,
        "aclrtMemcpyAsync" if !bad_stream => AclCode::RtParamInvalid,
        _ => AclCode::RtInvalidHandle,
    }
}

#[test]
fn forged_handles_are_refused_and_never_reach_the_library() {
    let (fake, mut d) = common::opened();
    let good = Handles::live(&mut d);
    let forged = Handles {
        stream: StreamHandle(0xdead_0000),
        event: EventHandle(0x10),
        // One byte past the end of the allocation: a range it does not hold.
        ptr: good.ptr.at(57),
        host: good.host,
    };
    for call in CALLS {
        let expected = refusal(call.0, false);
        assert_refused(&fake, &mut d, call, (&forged, &good), expected, "forged");
    }
    // A forged stream beside a live range is the stream's refusal.
    let forged_stream = Handles { stream: StreamHandle(0xdead_0000), ..good };
    for call in CALLS.into_iter().filter(|(s, _)| *s == "aclrtMemcpyAsync") {
        let expected = refusal(call.0, true);
        assert_refused(&fake, &mut d, call, (&forged_stream, &good), expected, "forged stream");
    }
    good.release(&mut d);
    fake.assert_balanced();
}

#[test]
fn destroyed_handles_are_refused_and_never_reach_the_library() {
    let (fake, mut d) = common::opened();
    // Made before the others are destroyed, so the library cannot hand their addresses out
    // again to these.
    let good = Handles::live(&mut d);
    let gone = Handles::live(&mut d);
    d.destroy_event(gone.event).unwrap();
    d.destroy_stream(gone.stream).unwrap();
    d.free(gone.ptr).unwrap();
    let stale = Handles { host: good.host, ..gone };
    d.free_host(gone.host).unwrap();
    for call in CALLS {
        let expected = refusal(call.0, false);
        assert_refused(&fake, &mut d, call, (&stale, &good), expected, "destroyed");
    }
    good.release(&mut d);
    fake.assert_balanced();
}

#[test]
fn handles_from_before_a_force_reset_are_refused_and_never_reach_the_library() {
    let (fake, mut d) = common::opened();
    let old = Handles::live(&mut d);
    d.reset_device_force().unwrap();
    // Live handles at addresses none of the old ones had (the library may reuse a reclaimed
    // address; such a set is kept aside and released at the end).
    let mut aside = Vec::new();
    let good = loop {
        let fresh = Handles::live(&mut d);
        if fresh.stream != old.stream && fresh.event != old.event && fresh.ptr != old.ptr {
            break fresh;
        }
        aside.push(fresh);
        assert!(aside.len() < 4, "the library keeps reusing the old addresses");
    };
    let stale = Handles { host: good.host, ..old };
    for call in CALLS {
        let expected = refusal(call.0, false);
        assert_refused(&fake, &mut d, call, (&stale, &good), expected, "before the reset");
    }
    good.release(&mut d);
    for handles in aside {
        handles.release(&mut d);
    }
    fake.assert_balanced();
}

#[test]
fn the_completion_waiter_refuses_a_handle_the_device_does_not_hold() {
    let (fake, mut d) = common::opened();
    let good = Handles::live(&mut d);
    let mut waiter = d.completion_waiter().unwrap();
    waiter.bind().unwrap();
    fake.control.fail_call("aclrtSynchronizeEventWithTimeout", CODE, 0, 1).unwrap();
    assert_eq!(waiter.synchronize_event(EventHandle(0x10), 1_000), Err(AclCode::RtInvalidHandle));
    let message = waiter.recent_error_message().unwrap_or_default();
    assert!(message.contains("refused before any ACL call"), "{message}");
    assert_eq!(
        waiter.synchronize_stream(StreamHandle(0xdead_0000), 1_000),
        Err(AclCode::RtInvalidHandle)
    );
    assert_eq!(
        waiter.memcpy_from_device(&mut [0; 8], good.ptr.at(60)),
        Err(AclCode::RtParamInvalid)
    );
    // The armed failure is still pending: the forged event never reached the library.
    assert_eq!(waiter.synchronize_event(good.event, 1_000), Err(AclCode::from_raw(CODE).unwrap()));
    drop(waiter);
    good.release(&mut d);
    fake.assert_balanced();
}

#[test]
fn lanes_on_their_own_threads_create_use_and_destroy_handles_at_once_and_each_sees_only_its_own() {
    // The table of issued handles is shared by every lane of the process; lookups share its
    // lock and creates and destroys write it. Four lanes, each on a thread and a device of its
    // own, take turns with no order between them: every live handle of a lane works on it, a
    // destroyed one is refused, and another lane's live stream is refused as another device's.
    const LANES: i32 = 4;
    const ROUNDS: usize = 60;
    let fake = common::fake();
    let config = fake.config();
    let published: Vec<std::sync::Mutex<Option<StreamHandle>>> =
        (0..LANES).map(|_| std::sync::Mutex::new(None)).collect();
    let published = &published;
    let done = &std::sync::Barrier::new(usize::try_from(LANES).unwrap());
    std::thread::scope(|s| {
        for id in 0..LANES {
            let config = backend_acl::AclConfig { device_id: id, ..config.clone() };
            s.spawn(move || {
                let (mut d, _) = AclDevice::open(config).unwrap_or_else(|e| panic!("{e}"));
                let keep = d.create_stream().unwrap();
                *published[usize::try_from(id).unwrap()].lock().unwrap() = Some(keep);
                for round in 0..ROUNDS {
                    let stream = d.create_stream().unwrap();
                    let event = d.create_event().unwrap();
                    let ptr = d.malloc(64).unwrap();
                    d.memcpy_to_device(ptr, &[u8::try_from(round % 256).unwrap(); 8]).unwrap();
                    d.record_event(event, stream).unwrap();
                    d.synchronize_event(event, 30_000).unwrap();
                    d.destroy_event(event).unwrap();
                    d.destroy_stream(stream).unwrap();
                    d.free(ptr).unwrap();
                    assert_eq!(d.destroy_stream(stream), Err(AclCode::RtInvalidHandle));
                    assert_eq!(d.destroy_event(event), Err(AclCode::RtInvalidHandle));
                    assert_eq!(d.free(ptr), Err(AclCode::RtParamInvalid));
                    // Another lane's stream, live on its own device: never this device's.
                    let other =
                        usize::try_from((id + 1 + i32::try_from(round).unwrap()) % LANES).unwrap();
                    if other != usize::try_from(id).unwrap() {
                        if let Some(theirs) = *published[other].lock().unwrap() {
                            assert_eq!(
                                d.synchronize_stream(theirs, 1_000),
                                Err(AclCode::RtStreamContext),
                                "lane {id}, round {round}: lane {other}'s stream"
                            );
                        }
                    }
                }
                // Every lane's kept stream stays live until all are done with the lookups.
                done.wait();
                d.destroy_stream(keep).unwrap();
            });
        }
    });
    for id in 0..LANES {
        assert!(published[usize::try_from(id).unwrap()].lock().unwrap().is_some(), "lane {id} ran");
    }
    fake.assert_balanced();
}
