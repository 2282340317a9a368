// The runner loops an onboard runner uses, measured through the C ABI (run_lane.h and the
// static library, release build) on the fake libascendcl, in real time.
//
// Usage: fake_bench FAKE_LIB RUNS SKIP KERNEL_US[,KERNEL_US...]
//        fake_bench --lanes FAKE_LIB RUNS SKIP KERNEL_US REPEATS
//
// For each kernel length it measures, in one process:
//   floor   the fake's own floor: RUNS kernels already queued on one stream, back to back;
//   depth2  the lane at launch depth two (run N+1 queued while N executes), and
//   depth1  the lane at launch depth one (N+1 launched after N retired, config.launch_depth 1),
// each driven by three loops:
//   a  "kept full": runs submitted until FULL up front, then each next run submitted from the
//      outcome callback, on the lane thread, the moment a slot frees (no thread hop);
//   b  the documented loop: submit until FULL, then wait for the oldest outcome, repeat (no
//      outcome callback, as documented: only loop (a) sets one);
//   c  a successor submitted a third of a kernel after its predecessor's outcome.
// From each run's own timing buffer (device start and end, written by the fake's AICPU
// kernel) it takes the inter-run device gaps, the first SKIP runs skipped, and prints one line
// per measurement:
//   floor KERNEL_US GAPS MEDIAN_NS P99_NS
//   arm KERNEL_US LOOP DEPTH RUNS OK MEDIAN_NS P99_NS
// Loop (b) runs twice more at each depth, with `config.submitters_bound` on (this thread
// bound to the device: a submit that finds no thread running the lane's steps prepares and
// launches here), its lines' DEPTH `depth2-bound` and `depth1-bound`, and twice more with the
// caller driving the lane (`config.drive = RUN_LANE_DRIVE_CALLER`: no thread of the lane's
// own; every call runs its steps on this thread, bound to the lane's device, and
// `run_lane_wait` makes the device wait here), DEPTH `depth2-caller` and `depth1-caller`.
// and, at depth two, how long after its submit each run's launch onto the pair has been made
// (from just before `run_lane_submit` to the return of its `launch_aicpu` callback, the
// launch's last call; the first SKIP runs skipped):
//   latency KERNEL_US LOOP MEDIAN_NS P99_NS
// Loop (b), the loop they are compared with, runs beside the two hand-written anchors: the
// same runs with no lane, the calls a lane makes for them (the arm copy, the two kernels,
// their events, the boundary's wait, the record and status reads, on the lane's slot layout)
// made on the fake's ACL calls directly from this thread, their gaps taken as the arms' are:
//   depth1  launch a run, wait for its boundary, read it, launch the next;
//   queued  two in flight: run N+1 launched before N's wait, then wait for the oldest, read
//           it, launch the next (the queued loop on the submitting thread);
//   handoff depth one on two threads, the shape of a lane whose submitting thread is not
//           the device's: this thread submits (up to two runs ahead) and waits for each
//           outcome; a device thread launches each run once the one before was read, then
//           hands the read run's outcome over, then waits (launch, then deliver, as the
//           lane's completion waiter does);
//   anchor KERNEL_US KIND RUNS MEDIAN_NS P99_NS
// and where a depth-one gap goes (medians, ns, of each run after SKIP whose predecessor ran in
// its block), for the depth-one anchor and loop (b) at depth one, option off and on: from the
// predecessor's device end to the AICore launch's start (the wait's return, the reads, the
// arm), from there to the AICPU launch's return (the launch's calls), and from there to the
// run's device start (the fake's device clock placed on the host's, runlanefake_device_clock_ns),
// and the cycle those parts sit in: from the predecessor's device start to the run's (PERIOD),
// and the run's device span, its start to its end (SPAN), both on the device's clock alone:
//   depth1-split KERNEL_US KIND REACT_NS LAUNCH_NS START_NS PERIOD_NS SPAN_NS
//   (KIND: anchor, lane, lane-bound, lane-caller)
// Paired: loop (b)'s six lanes (depth two and one, `submitters_bound` off, on, and the caller
// driving) and the anchor's streams are opened first, then the nine arms take turns, a block of
// 20 runs each from idle to idle, until each has RUNS; the gaps are taken within blocks (none across a
// switch), the first SKIP runs of each arm skipped. The lines are printed as before, in the
// same order (the anchors' first).
// And last, an idle lane (each run submitted once its predecessor retired and a pause of
// 1 ms passed, nothing in flight): from just before `run_lane_submit` to the return of its
// `launch_aicpu` callback; beside it the same launch's calls made directly from this thread,
// idle alike (from the arm copy to the AICPU launch's return), and of those the two kernel
// launches alone (the first SKIP runs of each skipped):
//   idle KERNEL_US RUNS LANE_MEDIAN_NS LANE_P99_NS CALLS_MEDIAN_NS CALLS_P99_NS
//        LAUNCHES_MEDIAN_NS LAUNCHES_P99_NS
// then the idle lane again with `config.submitters_bound` on (this thread bound), and the idle
// lane the caller drives; the four (option off, on, caller-driven, the calls) take turns, one
// run each, every lane open from the start:
//   idle-bound KERNEL_US RUNS LANE_MEDIAN_NS LANE_P99_NS
// and where the idle figures' time goes before the AICore launch begins (medians, ns): from
// the submit to the `launch_aicore` callback's start, with the option off and on, and the
// anchor's from its arm copy's start to its AICore launch's start:
//   idle-split KERNEL_US OFF_MEDIAN_NS BOUND_MEDIAN_NS ANCHOR_MEDIAN_NS
// and the caller-driven idle lane's submit to launch, and its submit to the AICore launch's
// start (median):
//   idle-caller KERNEL_US RUNS LANE_MEDIAN_NS LANE_P99_NS BEFORE_CORE_MEDIAN_NS
//
// With --lanes it runs sixteen lanes at once, one per device of the fake (ids 0 to 15), each
// driven from its own thread with loop (b), REPEATS times each of two cases, alternating:
//   healthy  every lane runs RUNS runs;
//   faulty   device 14's AICore kernels all hang (each run ends at the 200 ms op timeout and
//            poisons; the lane recovers and the next hangs again) and device 15 has one AICore
//            exception (run RUNS/3 + 1 poisons) while the other fourteen run RUNS runs each.
// In both cases it pools the gaps of devices 0 to 13 (the first SKIP runs of each skipped)
// and prints
//   lanes healthy REPEAT KERNEL_US RUNS OK MEDIAN_NS P99_NS
//   lanes faulty REPEAT KERNEL_US RUNS OK MEDIAN_NS P99_NS HUNG_RUNS HUNG_OK HUNG_POISONS
//                POISONED_RUNS POISONED_OK POISONED_POISONS
// (OK: the fourteen's Ok outcomes, all of them), and once, for the first healthy case, what
// the process of sixteen lanes costs (/proc/self/status Threads and VmRSS in KiB: before the
// lanes, once created, once they ran (alive, streams created), after destroy; and the threads
// named `lane*` and `fake-acl-*` once they ran):
//   lanes-cost THREADS_BEFORE THREADS_CREATED THREADS_RAN THREADS_AFTER RSS_BEFORE RSS_CREATED
//              RSS_RAN RSS_AFTER LANE_THREADS FAKE_STREAM_THREADS
// `cargo xtask fake-bench` builds it, runs it and writes the table into docs/performance.md.
// Exits 1 (with the reason on stderr) when a call fails or a run does not end as expected.

#include "run_lane.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dirent.h>
#include <dlfcn.h>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

// The fake's kernel launch (runlanefake_launch): stream, engine (0 AICore, 1 AICPU), duration,
// outcome (0 ok), timing buffer, status header, header bytes and length. The floor's kernels.
using FakeLaunch = int32_t (*)(void *, uint32_t, uint64_t, uint32_t, void *, void *, const uint8_t *, size_t);
// A lane run's kernel (runlanefake_launch_run): as above, then the run's handshake (links its
// two kernels), its result record and its epoch; the fake publishes the record when both end
// on their normal path, as a runtime's device code does.
using FakeLaunchRun = int32_t (*)(void *, uint32_t, uint64_t, uint32_t, void *, void *, const uint8_t *, size_t,
                                  void *, void *, uint64_t);
// The ACL calls the floor makes (acl-fake implements them as libascendcl does).
using SetDevice = int32_t (*)(int32_t);
using CreateStream = int32_t (*)(void **, uint32_t, uint32_t);
using DestroyStream = int32_t (*)(void *);
using Malloc = int32_t (*)(void **, size_t, int32_t);
using Free = int32_t (*)(void *);
using Memcpy = int32_t (*)(void *, size_t, const void *, size_t, int32_t);
using CreateEvent = int32_t (*)(void **, uint32_t);
using RecordEvent = int32_t (*)(void *, void *);
using StreamWaitEvent = int32_t (*)(void *, void *);
using SyncEvent = int32_t (*)(void *, int32_t);
using DestroyEvent = int32_t (*)(void *);
// The fake's per-device kernel fault rules and its reset (test-only control functions).
using FaultKernelOn = int32_t (*)(int32_t, uint32_t, uint32_t, uint32_t, uint32_t, const uint8_t *, size_t);
using Reset = int32_t (*)();
// The fake's count of force resets made while a thread was inside a device wait, since the
// process loaded it (runlanefake_reset keeps it): each is a use-after-free on real ACL.
using ResetsUnderWait = int32_t (*)(uint64_t *);
// The fake's device clock now (the ns of every timing buffer).
using DeviceClock = int32_t (*)(uint64_t *);

constexpr uint32_t kAicore = 0;
constexpr uint32_t kAicpu = 1;
constexpr int32_t kMemcpyHostToDevice = 1;
constexpr int32_t kMemcpyDeviceToHost = 2;
constexpr uint32_t kEventSync = 1;

[[noreturn]] void fail(const std::string &what) {
    std::fprintf(stderr, "fake_bench: %s (last error: %s)\n", what.c_str(), run_lane_last_error());
    std::exit(1);
}

template <typename F>
F symbol(void *lib, const char *name) {
    void *found = dlsym(lib, name);
    if (found == nullptr) {
        fail(std::string("the fake has no ") + name);
    }
    return reinterpret_cast<F>(found);
}

// SPEC L-20 for the whole run: no force reset was made while a thread of a lane was inside a
// device wait. Prints "fake_bench: resets_under_wait N" on stderr (stdout is the figures)
// and fails the bench unless N is 0; returns the exit code of a bench that passed.
int resets_under_wait_checked(void *fake_lib) {
    uint64_t count = UINT64_MAX;
    if (symbol<ResetsUnderWait>(fake_lib, "runlanefake_resets_under_wait")(&count) != 0) {
        fail("read the fake's resets under a wait");
    }
    std::fprintf(stderr, "fake_bench: resets_under_wait %llu\n", (unsigned long long)count);
    if (count != 0) {
        fail("a force reset was made while a thread was inside a device wait (SPEC L-20)");
    }
    return 0;
}

// The ACL calls the floor and the anchors make (acl-fake implements them as libascendcl does).
struct Acl {
    SetDevice set_device;
    CreateStream create_stream;
    DestroyStream destroy_stream;
    Malloc malloc_device;
    Free free_device;
    Memcpy memcpy_sync;
    CreateEvent create_event;
    RecordEvent record_event;
    StreamWaitEvent stream_wait_event;
    SyncEvent sync_event;
    DestroyEvent destroy_event;
};

Acl load_acl(void *fake) {
    return {symbol<SetDevice>(fake, "aclrtSetDevice"),
            symbol<CreateStream>(fake, "aclrtCreateStreamWithConfig"),
            symbol<DestroyStream>(fake, "aclrtDestroyStream"),
            symbol<Malloc>(fake, "aclrtMalloc"),
            symbol<Free>(fake, "aclrtFree"),
            symbol<Memcpy>(fake, "aclrtMemcpy"),
            symbol<CreateEvent>(fake, "aclrtCreateEventExWithFlag"),
            symbol<RecordEvent>(fake, "aclrtRecordEvent"),
            symbol<StreamWaitEvent>(fake, "aclrtStreamWaitEvent"),
            symbol<SyncEvent>(fake, "aclrtSynchronizeEventWithTimeout"),
            symbol<DestroyEvent>(fake, "aclrtDestroyEvent")};
}

uint64_t ns_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

// The gaps' median and 99th percentile (nearest rank), in ns.
std::pair<uint64_t, uint64_t> spread(std::vector<uint64_t> gaps) {
    if (gaps.empty()) {
        return {0, 0};
    }
    std::sort(gaps.begin(), gaps.end());
    size_t last = gaps.size() - 1;
    return {gaps[last / 2], gaps[(last * 99 + 99) / 100]};
}

// What the callbacks see: the kernel length, the fake's launch, and for loop (a) the lane
// to refill and the outcomes so far.
struct Bench {
    FakeLaunchRun launch = nullptr;
    DeviceClock device_clock = nullptr;  // places device times on the host's clock
    SetDevice set_device = nullptr;  // binds this thread before a submitters_bound lane
    int32_t device = 0;              // the lane's device id (one lane per id, SPEC L-25)
    bool bound = false;              // the lane runs with submitters_bound
    bool caller = false;             // the caller drives the lane (RUN_LANE_DRIVE_CALLER)
    uint64_t kernel_ns = 0;
    // By run tag (its index in the arm): when its submit began, when its launch returned.
    std::vector<std::chrono::steady_clock::time_point> submitted;
    std::vector<std::chrono::steady_clock::time_point> launched;
    std::vector<std::chrono::steady_clock::time_point> core_began;  // launch_aicore's start
    uint64_t next_tag = 0;
    std::mutex mutex;
    std::condition_variable changed;
    RunLane *refill = nullptr;  // loop (a): submit from on_outcome while `left` > 0
    int left = 0;
    int seen = 0;
    bool refused = false;
};

int32_t launch_aicore(void *user, void *stream, const RunLaneRunArgs *args) {
    auto *b = static_cast<Bench *>(user);
    if (args->info.has_tag && args->info.tag < b->core_began.size()) {
        b->core_began[args->info.tag] = std::chrono::steady_clock::now();
    }
    return b->launch(stream, kAicore, b->kernel_ns, 0, nullptr, nullptr, nullptr, 0, args->handshake, nullptr,
                     args->epoch);
}

int32_t launch_aicpu(void *user, void *stream, const RunLaneRunArgs *args) {
    auto *b = static_cast<Bench *>(user);
    int32_t code = b->launch(stream, kAicpu, b->kernel_ns, 0, args->timing, nullptr, nullptr, 0, args->handshake,
                             args->record, args->epoch);
    if (args->info.has_tag && args->info.tag < b->launched.size()) {
        b->launched[args->info.tag] = std::chrono::steady_clock::now();
    }
    return code;
}

// Submits the bench's next run, tagged with its index; its submit time is taken just before
// the call (its callbacks may come before the call returns), again on a retry after FULL.
RunLaneStatus submit(Bench &bench, RunLane *lane, uint64_t *run) {
    RunLaneSubmit request; RUN_LANE_INIT(request);
    request.has_tag = true;
    request.tag = bench.next_tag;
    if (request.tag < bench.submitted.size()) {
        bench.submitted[request.tag] = std::chrono::steady_clock::now();
    }
    RunLaneStatus status = run_lane_submit(lane, &request, run);
    if (status == RUN_LANE_STATUS_OK) {
        ++bench.next_tag;
    }
    return status;
}

void on_outcome(void *user, const RunLaneOutcome *) {
    auto *b = static_cast<Bench *>(user);
    std::lock_guard<std::mutex> lock(b->mutex);
    ++b->seen;
    if (b->refill != nullptr && b->left > 0) {
        uint64_t run = 0;
        // Re-entering submit from a callback is allowed; the slot this outcome freed takes it.
        if (submit(*b, b->refill, &run) == RUN_LANE_STATUS_OK) {
            --b->left;
        } else {
            b->refused = true;
        }
    }
    b->changed.notify_all();
}

RunLaneOutcome wait(RunLane *lane, uint64_t id) {
    RunLaneOutcome outcome;
    RUN_LANE_INIT(outcome);
    if (run_lane_wait(lane, id, 60000, &outcome) != RUN_LANE_STATUS_OK) {
        fail("wait for run " + std::to_string(id));
    }
    return outcome;
}

// A lane on a2a3 at launch depth `depth` (0: the profile's, two) with the bench's runner, and
// the bench ready for `runs` tagged runs; with `bound`, `submitters_bound` on and this thread
// (the only one that submits) bound to the lane's device first, as the option requires;
// with `callback`, the bench's outcome callback set (only loop (a) uses one: a set callback
// wakes the lane thread at every outcome the completion waiter delivers); with `caller`, no
// thread of the lane's own (RUN_LANE_DRIVE_CALLER): every call runs its steps on this thread,
// bound to the lane's device first, as the mode requires of every calling thread. Lanes alive
// at once take different `device` ids: the library gives a device id one lane (SPEC L-25).
RunLane *create_lane(Bench &bench, const char *fake, uint8_t depth, int runs, bool bound = false,
                     bool callback = false, int32_t device = 0, bool caller = false) {
    RunLaneConfig config;
    RUN_LANE_INIT(config);
    if (run_lane_config_default(&config) != RUN_LANE_STATUS_OK) {
        fail("config_default");
    }
    config.backend = RUN_LANE_BACKEND_ACL;
    config.acl_library_path = fake;
    config.profile = RUN_LANE_PROFILE_A2A3;
    config.launch_depth = depth;
    config.completion_timeout_ms = 10000;
    config.device_op_timeout_ms = 5000;
    config.runner.user = &bench;
    config.runner.launch_aicore = launch_aicore;
    config.runner.launch_aicpu = launch_aicpu;
    config.runner.on_outcome = callback ? on_outcome : nullptr;
    config.submitters_bound = bound;
    config.drive = caller ? RUN_LANE_DRIVE_CALLER : RUN_LANE_DRIVE_LANE_THREADS;
    config.device_id = device;
    bench.device = device;
    bench.bound = bound;
    bench.caller = caller;
    if ((bound || caller) && (bench.set_device == nullptr || bench.set_device(device) != 0)) {
        fail("bind the submitting thread to the lane's device");
    }
    RunLane *lane = nullptr;
    if (run_lane_create(&config, &lane) != RUN_LANE_STATUS_OK) {
        fail("create");
    }
    {
        std::lock_guard<std::mutex> lock(bench.mutex);
        bench.seen = 0;
        bench.refused = false;
        bench.refill = nullptr;
        bench.left = 0;
        bench.next_tag = 0;
        bench.submitted.assign(static_cast<size_t>(runs), {});
        bench.launched.assign(static_cast<size_t>(runs), {});
        bench.core_began.assign(static_cast<size_t>(runs), {});
    }
    return lane;
}

// One arm: `runs` runs of the bench's kernel through `loop` on a2a3 at launch depth `depth`
// (with `bound`, submitters_bound on); its outcomes in submission order.
std::vector<RunLaneOutcome> arm(Bench &bench, const char *fake, uint8_t depth, char loop, int runs,
                                bool bound = false) {
    RunLane *lane = create_lane(bench, fake, depth, runs, bound, loop == 'a');
    std::vector<RunLaneOutcome> outcomes;
    std::deque<uint64_t> in_flight;
    int submitted = 0;
    // Every loop starts by filling the lane.
    auto fill = [&]() {
        while (submitted < runs) {
            uint64_t run = 0;
            RunLaneStatus status = submit(bench, lane, &run);
            if (status == RUN_LANE_STATUS_FULL) {
                return;
            }
            if (status != RUN_LANE_STATUS_OK) {
                fail("submit");
            }
            ++submitted;
            in_flight.push_back(run);
        }
    };
    auto take_oldest = [&]() {
        outcomes.push_back(wait(lane, in_flight.front()));
        in_flight.pop_front();
    };
    if (loop == 'a') {
        // The main thread fills the lane and the callback refills it, both under the bench's
        // lock, so between them exactly `runs` runs are submitted.
        std::unique_lock<std::mutex> lock(bench.mutex);
        bench.refill = lane;
        bench.left = runs;
        while (bench.left > 0) {
            uint64_t run = 0;
            RunLaneStatus status = submit(bench, lane, &run);
            if (status == RUN_LANE_STATUS_FULL) {
                break;
            }
            if (status != RUN_LANE_STATUS_OK) {
                fail("submit");
            }
            --bench.left;
        }
        bench.changed.wait(lock, [&] { return bench.seen >= runs || bench.refused; });
        bench.refill = nullptr;
        if (bench.refused) {
            fail("a submit from the outcome callback was refused");
        }
        lock.unlock();
        // Every run has its outcome: take them in order.
        for (int i = 0; i < runs; ++i) {
            RunLaneOutcome outcome;
            RUN_LANE_INIT(outcome);
            if (run_lane_poll(lane, &outcome) != RUN_LANE_STATUS_OK) {
                fail("poll");
            }
            outcomes.push_back(outcome);
        }
    } else {
        const auto third = std::chrono::nanoseconds(bench.kernel_ns / 3);
        fill();
        while (!in_flight.empty()) {
            take_oldest();
            if (loop == 'c' && submitted < runs) {
                // A third of a kernel after the predecessor's outcome: the next run is then
                // submitted while the run behind that one executes.
                std::this_thread::sleep_for(third);
            }
            fill();
        }
    }
    if (run_lane_destroy(lane) != RUN_LANE_STATUS_OK) {
        fail("destroy");
    }
    return outcomes;
}

// From each run's submit to its launch's return, the runs after `skip` (the lane joined, so
// every callback's write is seen).
std::vector<uint64_t> latencies(const Bench &bench, int skip) {
    std::vector<uint64_t> out;
    for (size_t i = static_cast<size_t>(skip); i < bench.launched.size(); ++i) {
        out.push_back(ns_between(bench.submitted[i], bench.launched[i]));
    }
    return out;
}

// A run's device start and end (ns), from its timing buffer.
using DeviceSpan = std::pair<uint64_t, uint64_t>;

// The device gaps between consecutive runs after `skip`: the lane's arms and the anchors
// alike, so their figures compare.
std::vector<uint64_t> span_gaps(const std::vector<DeviceSpan> &runs, int skip) {
    std::vector<uint64_t> out;
    for (size_t i = 1; i < runs.size(); ++i) {
        if (static_cast<int>(i) > skip) {
            uint64_t start = runs[i].first;
            uint64_t end = runs[i - 1].second;
            out.push_back(start > end ? start - end : 0);
        }
    }
    return out;
}

// The device gaps between consecutive runs after `skip`, from their timing buffers.
std::vector<uint64_t> gaps(const std::vector<RunLaneOutcome> &outcomes, int skip, int *ok) {
    std::vector<DeviceSpan> spans;
    *ok = 0;
    for (const RunLaneOutcome &o : outcomes) {
        if (o.verdict != RUN_LANE_VERDICT_OK || !o.has_timing) {
            fail("run " + std::to_string(o.id) + " did not end OK: " + o.failure_line);
        }
        ++*ok;
        spans.emplace_back(o.device_start_ns, o.device_end_ns);
    }
    return span_gaps(spans, skip);
}

// The fake's floor: `runs` kernels queued back to back on one stream before the first ends.
std::vector<uint64_t> floor_gaps(const Acl &acl, FakeLaunch launch, uint64_t kernel_ns, int runs, int skip) {
    void *stream = nullptr;
    void *timing = nullptr;
    void *event = nullptr;
    const size_t bytes = 16 * static_cast<size_t>(runs);
    if (acl.set_device(0) != 0 || acl.create_stream(&stream, 0, 0) != 0 || acl.malloc_device(&timing, bytes, 0) != 0 ||
        acl.create_event(&event, kEventSync) != 0) {
        fail("the floor's stream, buffer or event");
    }
    for (int i = 0; i < runs; ++i) {
        void *slot = static_cast<char *>(timing) + 16 * i;
        if (launch(stream, kAicpu, kernel_ns, 0, slot, nullptr, nullptr, 0) != 0) {
            fail("a floor kernel");
        }
    }
    std::vector<uint64_t> times(2 * static_cast<size_t>(runs));
    if (acl.record_event(event, stream) != 0 || acl.sync_event(event, 600000) != 0 ||
        acl.memcpy_sync(times.data(), bytes, timing, bytes, kMemcpyDeviceToHost) != 0) {
        fail("the floor's wait or read");
    }
    acl.destroy_event(event);
    acl.free_device(timing);
    acl.destroy_stream(stream);
    std::vector<DeviceSpan> spans;
    for (int i = 0; i < runs; ++i) {
        spans.emplace_back(times[2 * i], times[2 * i + 1]);
    }
    return span_gaps(spans, skip);
}

// ----- The anchors: the same runs by hand, no lane -------------------------------------------

// The lane's slot layout (lane-driver's driver.rs), kept so the anchors' copies are the
// lane's: handshake (64 bytes), timing buffer (16), status header (1024 reserved), result
// record (280). The arm clears the first three in one copy; after completion one copy reads
// the timing buffer, the header region and the record (the lane's completion waiter's read,
// whose status bytes its status read answers from).
constexpr size_t kTimingOffset = 64;
constexpr size_t kRecordOffset = kTimingOffset + 16 + 1024;
constexpr size_t kRecordBytes = 280;
constexpr size_t kArmBytes = kRecordOffset;
constexpr size_t kReadBytes = kRecordOffset + kRecordBytes - kTimingOffset;
// Record fields (status-latch's record.rs): the epoch it was published for, the verdict.
constexpr size_t kRecordVerdictAt = 12;
constexpr uint32_t kRecordOk = 1;
// Before each idle submit: long enough for the lane's threads (and the fake's) to sleep.
constexpr auto kIdlePause = std::chrono::milliseconds(1);

struct AnchorSlot {
    void *buffer = nullptr;
    void *core_done = nullptr;
    void *boundary = nullptr;
    uint64_t epoch = 0;
};

// A hand-written runner on the fake's ACL calls: a pair of streams and two slots, as a lane
// on a2a3 has, driven from the calling thread.
struct Anchor {
    Acl acl = {};
    FakeLaunchRun launch = nullptr;
    uint64_t kernel_ns = 0;
    void *aicpu = nullptr;
    void *aicore = nullptr;
    AnchorSlot slots[2];
    std::vector<uint8_t> zeros = std::vector<uint8_t>(kArmBytes, 0);
    uint64_t epochs = 0;
};

// The pair and the slots, made as the lane makes them (each record zeroed once: a record
// counts only when stamped with its run's epoch).
void anchor_open(Anchor &a) {
    const Acl &acl = a.acl;
    if (acl.set_device(0) != 0 || acl.create_stream(&a.aicpu, 0, 0) != 0 || acl.create_stream(&a.aicore, 0, 0) != 0) {
        fail("the anchor's streams");
    }
    for (AnchorSlot &s : a.slots) {
        if (acl.malloc_device(&s.buffer, kRecordOffset + kRecordBytes, 0) != 0 ||
            acl.create_event(&s.core_done, kEventSync) != 0 || acl.create_event(&s.boundary, kEventSync) != 0 ||
            acl.memcpy_sync(static_cast<char *>(s.buffer) + kRecordOffset, kRecordBytes, a.zeros.data(), kRecordBytes,
                            kMemcpyHostToDevice) != 0) {
            fail("the anchor's slots");
        }
    }
}

void anchor_close(Anchor &a) {
    for (AnchorSlot &s : a.slots) {
        a.acl.destroy_event(s.boundary);
        a.acl.destroy_event(s.core_done);
        a.acl.free_device(s.buffer);
    }
    a.acl.destroy_stream(a.aicore);
    a.acl.destroy_stream(a.aicpu);
}

// When a launch began, and when each of its two kernel launches began and returned.
struct LaunchTimes {
    std::chrono::steady_clock::time_point begin, core_begin, core_end, cpu_begin, cpu_end;
};

// The lane's launch order (executor.rs, synchronous copies): the arm, a wait on the
// predecessor's boundary while it is in flight, the AICore kernel, `core_done`, the AICPU
// kernel (the bench's callbacks' arguments), the AICPU stream's wait on `core_done`, the
// boundary.
LaunchTimes anchor_launch(Anchor &a, AnchorSlot &s, const AnchorSlot *in_flight) {
    const Acl &acl = a.acl;
    char *base = static_cast<char *>(s.buffer);
    s.epoch = ++a.epochs;
    LaunchTimes t;
    t.begin = std::chrono::steady_clock::now();
    if (acl.memcpy_sync(base, kArmBytes, a.zeros.data(), kArmBytes, kMemcpyHostToDevice) != 0 ||
        (in_flight != nullptr && acl.stream_wait_event(a.aicore, in_flight->boundary) != 0)) {
        fail("an anchor's arm");
    }
    t.core_begin = std::chrono::steady_clock::now();
    int32_t core = a.launch(a.aicore, kAicore, a.kernel_ns, 0, nullptr, nullptr, nullptr, 0, base, nullptr, s.epoch);
    t.core_end = std::chrono::steady_clock::now();
    if (core != 0 || acl.record_event(s.core_done, a.aicore) != 0) {
        fail("an anchor's AICore launch");
    }
    t.cpu_begin = std::chrono::steady_clock::now();
    int32_t cpu = a.launch(a.aicpu, kAicpu, a.kernel_ns, 0, base + kTimingOffset, nullptr, nullptr, 0, base,
                           base + kRecordOffset, s.epoch);
    t.cpu_end = std::chrono::steady_clock::now();
    if (cpu != 0 || acl.stream_wait_event(a.aicpu, s.core_done) != 0 || acl.record_event(s.boundary, a.aicpu) != 0) {
        fail("an anchor's AICPU launch");
    }
    return t;
}

// The lane's retire: the boundary's wait, then one read of the timing buffer, the header and
// the record (its completion waiter's); the run must have published an ok record, as the
// lane's must.
DeviceSpan anchor_retire(Anchor &a, const AnchorSlot &s) {
    const Acl &acl = a.acl;
    const char *base = static_cast<const char *>(s.buffer);
    uint8_t bytes[kReadBytes];
    if (acl.sync_event(s.boundary, 60000) != 0 ||
        acl.memcpy_sync(bytes, kReadBytes, base + kTimingOffset, kReadBytes, kMemcpyDeviceToHost) != 0) {
        fail("an anchor's wait or read");
    }
    const uint8_t *record = bytes + (kRecordOffset - kTimingOffset);
    const uint8_t *status = bytes;
    uint64_t published = 0;
    uint32_t verdict = 0;
    std::memcpy(&published, record, sizeof published);
    std::memcpy(&verdict, record + kRecordVerdictAt, sizeof verdict);
    if (published != s.epoch || verdict != kRecordOk) {
        fail("an anchor's run did not publish an ok record");
    }
    DeviceSpan span;
    std::memcpy(&span.first, status, 8);
    std::memcpy(&span.second, status + 8, 8);
    return span;
}

// One depth-one run, for where its gap goes: when its AICore launch began and its AICPU launch
// returned (the host's clock), its device span (the device's), and whether the run before it
// ran in the same block (a gap is taken only then).
struct SplitRun {
    std::chrono::steady_clock::time_point core_begin, launched;
    DeviceSpan span;
    bool follows = false;
};

// An anchor's `runs` runs, in order: at depth one (launch, wait, read, launch the next) or
// queued (two in flight: N+1 launched before N's wait; wait for the oldest, read, launch).
// At depth one each run is also appended to `split`, when given.
std::vector<DeviceSpan> anchor_loop(Anchor &a, bool queued, int runs, std::vector<SplitRun> *split = nullptr) {
    // A bound lane's block may have bound this thread to its own device since.
    if (a.acl.set_device(0) != 0) {
        fail("bind the anchor's thread to device 0");
    }
    std::vector<DeviceSpan> spans;
    if (!queued) {
        for (int i = 0; i < runs; ++i) {
            LaunchTimes t = anchor_launch(a, a.slots[i % 2], nullptr);
            spans.push_back(anchor_retire(a, a.slots[i % 2]));
            if (split != nullptr) {
                split->push_back({t.core_begin, t.cpu_end, spans.back(), i > 0});
            }
        }
        return spans;
    }
    anchor_launch(a, a.slots[0], nullptr);
    if (runs > 1) {
        anchor_launch(a, a.slots[1], &a.slots[0]);
    }
    for (int i = 0; i < runs; ++i) {
        spans.push_back(anchor_retire(a, a.slots[i % 2]));
        if (i + 2 < runs) {
            anchor_launch(a, a.slots[i % 2], &a.slots[(i + 1) % 2]);
        }
    }
    return spans;
}

// One run submitted to an idle lane: the pause first, so its threads (and the fake's) sleep,
// then the submit, then its outcome (nothing is left in flight).
// Binds this thread to a submitters_bound or caller-driven lane's device again: the anchor's
// calls on this thread (and the other lanes' blocks) bind it to another device in between,
// behind the library's back.
void rebind(const Bench &bench) {
    if ((bench.bound || bench.caller) && bench.set_device(bench.device) != 0) {
        fail("bind the submitting thread to the lane's device");
    }
}

void idle_submit(Bench &bench, RunLane *lane) {
    rebind(bench);
    std::this_thread::sleep_for(kIdlePause);
    uint64_t run = 0;
    if (submit(bench, lane, &run) != RUN_LANE_STATUS_OK) {
        fail("submit to an idle lane");
    }
    RunLaneOutcome outcome = wait(lane, run);
    if (outcome.verdict != RUN_LANE_VERDICT_OK) {
        fail("run " + std::to_string(outcome.id) + " did not end OK: " + outcome.failure_line);
    }
}

// An idle lane's figures once its runs are done (the lane destroyed, so every callback's write
// is seen): from each submit to its launch's return, and to its AICore launch's start.
std::pair<std::vector<uint64_t>, std::vector<uint64_t>> idle_figures(const Bench &bench, int skip) {
    std::vector<uint64_t> before_core;
    for (size_t i = static_cast<size_t>(skip); i < bench.core_began.size(); ++i) {
        before_core.push_back(ns_between(bench.submitted[i], bench.core_began[i]));
    }
    return {latencies(bench, skip), before_core};
}

// The same launches made directly from this thread, idle alike: per run after `skip`, from
// the arm copy to the AICPU launch's return (the launch's calls), the two kernel launches
// alone, and from the arm copy to the AICore launch's start.
struct IdleCalls {
    std::vector<uint64_t> calls, launches, before_core;
};

// The anchor's run `i` of the idle figure, after the same pause as the lane's.
void idle_anchor_run(Anchor &a, int i, int skip, IdleCalls &out) {
    if (a.acl.set_device(0) != 0) {
        fail("bind the anchor's thread to device 0");
    }
    std::this_thread::sleep_for(kIdlePause);
    LaunchTimes t = anchor_launch(a, a.slots[i % 2], nullptr);
    anchor_retire(a, a.slots[i % 2]);
    if (i >= skip) {
        out.calls.push_back(ns_between(t.begin, t.cpu_end));
        out.launches.push_back(ns_between(t.core_begin, t.core_end) + ns_between(t.cpu_begin, t.cpu_end));
        out.before_core.push_back(ns_between(t.begin, t.core_begin));
    }
}

// The hand-off anchor: the depth-one anchor's calls on a device thread of its own, each run's
// outcome handed to the submitting thread, which submits up to two runs ahead (a submitted
// run is launched once the one before it was read). One device thread serves every block.
struct HandOff {
    Anchor &anchor;
    std::vector<DeviceSpan> spans;  // by run, over every block
    std::mutex mutex;
    std::condition_variable to_device, to_submitter;
    int submitted = 0;  // runs submitted so far (over every block)
    int delivered = 0;  // runs whose outcome was handed over
    bool stop = false;
    std::thread device;

    HandOff(Anchor &a, int runs) : anchor(a), spans(static_cast<size_t>(runs)) {
        device = std::thread([this] { serve(); });
    }
    ~HandOff() {
        {
            std::lock_guard<std::mutex> lock(mutex);
            stop = true;
        }
        to_device.notify_one();
        device.join();
    }

    // The device thread: waits for a submitted run, launches it; after each read, launches
    // the next submitted run (if any), then hands the read run's outcome over.
    void serve() {
        if (anchor.acl.set_device(0) != 0) {
            fail("bind the hand-off anchor's device thread");
        }
        int next = 0;
        int in_flight = -1;
        for (;;) {
            if (in_flight < 0) {
                std::unique_lock<std::mutex> lock(mutex);
                to_device.wait(lock, [&] { return stop || submitted > next; });
                if (submitted <= next) {
                    return;
                }
                lock.unlock();
                anchor_launch(anchor, anchor.slots[next % 2], nullptr);
                in_flight = next++;
            }
            spans[static_cast<size_t>(in_flight)] = anchor_retire(anchor, anchor.slots[in_flight % 2]);
            const int read = in_flight;
            in_flight = -1;
            bool more = false;
            {
                std::lock_guard<std::mutex> lock(mutex);
                more = submitted > next;
            }
            if (more) {
                anchor_launch(anchor, anchor.slots[next % 2], nullptr);
                in_flight = next++;
            }
            {
                std::lock_guard<std::mutex> lock(mutex);
                delivered = read + 1;
            }
            to_submitter.notify_all();
        }
    }

    // One block of `n` runs from idle to idle: submit, and from the second run on wait for the
    // outcome of the run before it first (two runs ahead at most); their spans in order.
    std::vector<DeviceSpan> block(int n) {
        int first = 0;
        {
            std::lock_guard<std::mutex> lock(mutex);
            first = submitted;
        }
        for (int i = 0; i < n; ++i) {
            {
                std::lock_guard<std::mutex> lock(mutex);
                submitted = first + i + 1;
            }
            to_device.notify_one();
            if (i > 0) {
                std::unique_lock<std::mutex> lock(mutex);
                to_submitter.wait(lock, [&] { return delivered >= first + i; });
            }
        }
        std::unique_lock<std::mutex> lock(mutex);
        to_submitter.wait(lock, [&] { return delivered >= first + n; });
        return {spans.begin() + first, spans.begin() + first + n};
    }
};

// ----- Paired: the anchors beside the lane arms they are compared with, interleaved --------

// Runs per block of the paired measurement: the arms take turns, a block each, so an anchor
// and the lane arm it is compared with are sampled under the same machine conditions.
constexpr int kBlock = 20;

// A lane of the paired measurement, open for all its blocks (its own bench: its callbacks
// stamp its runs by tag).
struct PairedLane {
    std::unique_ptr<Bench> bench = std::make_unique<Bench>();
    RunLane *lane = nullptr;
    int ok = 0;
    bool depth_one = false;
    std::vector<SplitRun> split;  // at depth one, every run, for where a gap goes
};

// One block of loop (b) on a paired lane, from idle to idle: submit until FULL, wait for the
// oldest, repeat, until `n` runs are done; their spans in order.
std::vector<DeviceSpan> lane_block(PairedLane &p, int n) {
    rebind(*p.bench);
    std::deque<uint64_t> in_flight;
    std::vector<DeviceSpan> spans;
    int left = n;
    auto fill = [&] {
        while (left > 0) {
            uint64_t run = 0;
            RunLaneStatus status = submit(*p.bench, p.lane, &run);
            if (status == RUN_LANE_STATUS_FULL) {
                return;
            }
            if (status != RUN_LANE_STATUS_OK) {
                fail("submit");
            }
            --left;
            in_flight.push_back(run);
        }
    };
    fill();
    while (!in_flight.empty()) {
        RunLaneOutcome o = wait(p.lane, in_flight.front());
        in_flight.pop_front();
        if (o.verdict != RUN_LANE_VERDICT_OK || !o.has_timing) {
            fail("run " + std::to_string(o.id) + " did not end OK: " + o.failure_line);
        }
        ++p.ok;
        spans.emplace_back(o.device_start_ns, o.device_end_ns);
        // The callbacks' stamps were written before the run completed, so before its outcome.
        const Bench &b = *p.bench;
        if (p.depth_one && o.has_tag && o.tag < b.core_began.size()) {
            p.split.push_back({b.core_began[o.tag], b.launched[o.tag], spans.back(), spans.size() > 1});
        }
        fill();
    }
    return spans;
}

// An arm of the paired measurement: a block of `n` runs from idle to idle, and the gaps kept.
struct PairedArm {
    std::function<std::vector<DeviceSpan>(int)> block;
    std::vector<uint64_t> gaps;
    int done = 0;
};

// The arms in turn, a block of kBlock runs each, until each has `runs`: the gaps within each
// block (the first gap of a block would span the switch, so none is taken across blocks),
// those of the arm's first `skip` runs skipped.
void interleave(const std::vector<PairedArm *> &arms, int runs, int skip) {
    for (bool more = true; more;) {
        more = false;
        for (PairedArm *arm : arms) {
            const int n = std::min(kBlock, runs - arm->done);
            if (n <= 0) {
                continue;
            }
            std::vector<DeviceSpan> spans = arm->block(n);
            for (size_t i = 1; i < spans.size(); ++i) {
                if (arm->done + static_cast<int>(i) > skip) {
                    const uint64_t start = spans[i].first;
                    const uint64_t end = spans[i - 1].second;
                    arm->gaps.push_back(start > end ? start - end : 0);
                }
            }
            arm->done += n;
            more = more || arm->done < runs;
        }
    }
}

// The host's clock minus the fake's device clock (ns): the reading closest in time to a device
// clock read on each side of it, of 20 tries.
int64_t device_offset(DeviceClock clock) {
    uint64_t best = UINT64_MAX;
    int64_t offset = 0;
    for (int i = 0; i < 20; ++i) {
        uint64_t before = 0, after = 0;
        if (clock(&before) != 0) {
            fail("read the fake's device clock");
        }
        const auto host = std::chrono::steady_clock::now().time_since_epoch();
        if (clock(&after) != 0) {
            fail("read the fake's device clock");
        }
        if (after - before < best) {
            best = after - before;
            const auto host_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(host).count();
            offset = static_cast<int64_t>(host_ns) - static_cast<int64_t>(before + (after - before) / 2);
        }
    }
    return offset;
}

// Where the depth-one gaps of `runs` go (medians, ns, a negative share read as 0): the
// predecessor's device end to the AICore launch's start, that to the AICPU launch's return,
// and that to the run's device start; then the cycle: the predecessor's device start to the
// run's, and the run's device span; runs after `skip` whose predecessor ran in their block.
std::array<uint64_t, 5> split_of(const std::vector<SplitRun> &runs, int64_t offset, int skip) {
    auto host_ns = [](std::chrono::steady_clock::time_point t) {
        return static_cast<int64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
    };
    std::vector<uint64_t> parts[5];
    for (size_t i = static_cast<size_t>(skip) + 1; i < runs.size(); ++i) {
        if (!runs[i].follows) {
            continue;
        }
        const int64_t end = static_cast<int64_t>(runs[i - 1].span.second) + offset;
        const int64_t start = static_cast<int64_t>(runs[i].span.first) + offset;
        const int64_t core = host_ns(runs[i].core_begin);
        const int64_t launched = host_ns(runs[i].launched);
        const int64_t period = start - (static_cast<int64_t>(runs[i - 1].span.first) + offset);
        const int64_t span = static_cast<int64_t>(runs[i].span.second) - static_cast<int64_t>(runs[i].span.first);
        const int64_t shares[5] = {core - end, launched - core, start - launched, period, span};
        for (int k = 0; k < 5; ++k) {
            parts[k].push_back(static_cast<uint64_t>(std::max<int64_t>(shares[k], 0)));
        }
    }
    return {spread(parts[0]).first, spread(parts[1]).first, spread(parts[2]).first, spread(parts[3]).first,
            spread(parts[4]).first};
}

// Loop (b) beside the two anchors, interleaved: the depth-one anchor, the queued anchor and
// loop (b) at depth two and one with `submitters_bound` off and on, and with the caller
// driving (RUN_LANE_DRIVE_CALLER: no thread of the lane's, the waits made by this thread inside
// run_lane_wait), every lane and the anchor's streams opened first, then a block of each in
// turn (interleave); the same lines as measured one after another, in the same order.
constexpr int kPairedLanes = 6;

void paired_b(const Bench &bench, Anchor &anchor, const char *fake, uint64_t us, int runs, int skip) {
    anchor_open(anchor);
    std::vector<SplitRun> anchor_split;
    // Depth two, depth one; then both with submitters_bound on; then both caller-driven.
    PairedLane lanes[kPairedLanes];
    const uint8_t depths[kPairedLanes] = {2, 1, 2, 1, 2, 1};
    const char *suffixes[kPairedLanes] = {"", "", "-bound", "-bound", "-caller", "-caller"};
    for (int i = 0; i < kPairedLanes; ++i) {
        lanes[i].bench->launch = bench.launch;
        lanes[i].bench->set_device = bench.set_device;
        lanes[i].bench->kernel_ns = bench.kernel_ns;
        lanes[i].lane = create_lane(*lanes[i].bench, fake, depths[i], runs, i == 2 || i == 3, false, i + 1, i >= 4);
        lanes[i].depth_one = depths[i] == 1;
    }
    PairedArm depth_one, queued, hand_off, arms[kPairedLanes];
    depth_one.block = [&anchor, &anchor_split](int n) { return anchor_loop(anchor, false, n, &anchor_split); };
    queued.block = [&anchor](int n) { return anchor_loop(anchor, true, n); };
    auto two_threads = std::make_unique<HandOff>(anchor, runs);
    hand_off.block = [&two_threads](int n) { return two_threads->block(n); };
    std::vector<PairedArm *> order = {&depth_one, &queued, &hand_off};
    for (int i = 0; i < kPairedLanes; ++i) {
        PairedLane *lane = &lanes[i];
        arms[i].block = [lane](int n) { return lane_block(*lane, n); };
        order.push_back(&arms[i]);
    }
    interleave(order, runs, skip);
    two_threads.reset();  // its device thread ends before the anchor's streams go
    anchor_close(anchor);
    for (PairedLane &lane : lanes) {
        rebind(*lane.bench);  // a caller-driven lane's destroy runs its steps on this thread
        if (run_lane_destroy(lane.lane) != RUN_LANE_STATUS_OK) {
            fail("destroy");
        }
    }
    for (const auto &[a, kind] : {std::pair<PairedArm *, const char *>{&depth_one, "depth1"},
                                  {&queued, "queued"},
                                  {&hand_off, "handoff"}}) {
        auto measured = spread(a->gaps);
        std::printf("anchor %llu %s %d %llu %llu\n", (unsigned long long)us, kind, runs,
                    (unsigned long long)measured.first, (unsigned long long)measured.second);
    }
    for (int i = 0; i < kPairedLanes; ++i) {
        auto measured = spread(arms[i].gaps);
        std::printf("arm %llu b depth%u%s %d %d %llu %llu\n", (unsigned long long)us, unsigned{depths[i]},
                    suffixes[i], runs, lanes[i].ok, (unsigned long long)measured.first,
                    (unsigned long long)measured.second);
        if (i == 0) {
            auto latency = spread(latencies(*lanes[i].bench, skip));
            std::printf("latency %llu b %llu %llu\n", (unsigned long long)us, (unsigned long long)latency.first,
                        (unsigned long long)latency.second);
        }
    }
    const int64_t offset = device_offset(bench.device_clock);
    const std::pair<const char *, const std::vector<SplitRun> *> splits[4] = {{"anchor", &anchor_split},
                                                                              {"lane", &lanes[1].split},
                                                                              {"lane-bound", &lanes[3].split},
                                                                              {"lane-caller", &lanes[5].split}};
    for (const auto &[kind, runs_of] : splits) {
        auto parts = split_of(*runs_of, offset, skip);
        std::printf("depth1-split %llu %s %llu %llu %llu %llu %llu\n", (unsigned long long)us, kind,
                    (unsigned long long)parts[0], (unsigned long long)parts[1], (unsigned long long)parts[2],
                    (unsigned long long)parts[3], (unsigned long long)parts[4]);
    }
    std::fflush(stdout);
}

// ----- --lanes: sixteen lanes at once -----------------------------------------------------

constexpr int kLanes = 16;
constexpr int kHung = 14;
constexpr int kPoisoned = 15;
constexpr uint32_t kFakeException = 1;
constexpr uint32_t kFakeHang = 2;
constexpr uint64_t kOpTimeoutMs = 200;
constexpr int32_t kAicoreTimeout = 507014;
constexpr int32_t kAicoreException = 507015;

// A field of /proc/self/status ("Threads:", "VmRSS:"), its first number.
uint64_t status_field(const char *field) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind(field, 0) == 0) {
            return std::strtoull(line.c_str() + std::strlen(field), nullptr, 10);
        }
    }
    fail(std::string("/proc/self/status has no ") + field);
}

// Threads whose name (/proc/self/task/*/comm) starts with `prefix`.
uint64_t threads_named(const char *prefix) {
    uint64_t n = 0;
    DIR *tasks = opendir("/proc/self/task");
    if (tasks == nullptr) {
        fail("cannot list /proc/self/task");
    }
    while (dirent *task = readdir(tasks)) {
        if (task->d_name[0] == '.') {
            continue;
        }
        std::ifstream comm(std::string("/proc/self/task/") + task->d_name + "/comm");
        std::string name;
        if (std::getline(comm, name) && name.rfind(prefix, 0) == 0) {
            ++n;
        }
    }
    closedir(tasks);
    return n;
}

// What a lane's driver keeps of each outcome.
struct Kept {
    uint64_t id;
    RunLaneVerdict verdict;
    RunLaneClass klass;
    int32_t code;
    bool has_timing;
    uint64_t start_ns;
    uint64_t end_ns;
};

Kept keep(const RunLaneOutcome &o) {
    return {o.id, o.verdict, o.failure_class, o.has_code ? o.code : 0, o.has_timing, o.device_start_ns, o.device_end_ns};
}

// One lane of the sixteen: its kernels (the bench's callbacks read `bench`), its handle and
// what its driver kept.
struct LaneRun {
    Bench bench;
    RunLane *lane = nullptr;
    int device = 0;
    std::vector<Kept> outcomes;
};

RunLane *create_on(LaneRun &run, const char *fake) {
    RunLaneConfig config;
    RUN_LANE_INIT(config);
    if (run_lane_config_default(&config) != RUN_LANE_STATUS_OK) {
        fail("config_default");
    }
    config.backend = RUN_LANE_BACKEND_ACL;
    config.acl_library_path = fake;
    config.profile = RUN_LANE_PROFILE_A2A3;
    config.device_id = run.device;
    config.completion_timeout_ms = 10000;
    config.device_op_timeout_ms = kOpTimeoutMs;
    config.runner.user = &run.bench;
    config.runner.launch_aicore = launch_aicore;
    config.runner.launch_aicpu = launch_aicpu;
    RunLane *lane = nullptr;
    if (run_lane_create(&config, &lane) != RUN_LANE_STATUS_OK) {
        fail("create a lane on device " + std::to_string(run.device));
    }
    return lane;
}

// Loop (b) on one lane: submit until FULL, then wait for the oldest; RECOVERING (after a
// poison) is "submit again shortly": wait for the oldest if any, else yield. Runs `runs` runs,
// or, with `until`, keeps submitting until `until` is set (at least one run).
void drive(LaneRun &run, int runs, const std::atomic<bool> *until) {
    std::deque<uint64_t> in_flight;
    int submitted = 0;
    auto more = [&] { return until != nullptr ? (submitted == 0 || !until->load()) : submitted < runs; };
    auto take_oldest = [&] {
        run.outcomes.push_back(keep(wait(run.lane, in_flight.front())));
        in_flight.pop_front();
    };
    const auto start = std::chrono::steady_clock::now();
    while (more()) {
        uint64_t id = 0;
        RunLaneStatus status = submit(run.bench, run.lane, &id);
        if (status == RUN_LANE_STATUS_OK) {
            ++submitted;
            in_flight.push_back(id);
        } else if (status == RUN_LANE_STATUS_FULL) {
            take_oldest();
        } else if (status == RUN_LANE_STATUS_RECOVERING) {
            if (!in_flight.empty()) {
                take_oldest();
            } else if (std::chrono::steady_clock::now() - start > std::chrono::seconds(120)) {
                fail("device " + std::to_string(run.device) + " recovered for too long");
            } else {
                std::this_thread::yield();
            }
        } else {
            fail("submit on device " + std::to_string(run.device));
        }
    }
    while (!in_flight.empty()) {
        take_oldest();
    }
}

// The gaps between consecutive runs of one lane after `skip` (every run OK, in order).
void lane_gaps(const LaneRun &run, int skip, std::vector<uint64_t> &out) {
    for (size_t i = 0; i < run.outcomes.size(); ++i) {
        const Kept &o = run.outcomes[i];
        if (o.verdict != RUN_LANE_VERDICT_OK || !o.has_timing ||
            (i > 0 && o.id != run.outcomes[i - 1].id + 1)) {
            fail("device " + std::to_string(run.device) + ": run " + std::to_string(o.id) + " not OK or out of order");
        }
        if (i > 0 && static_cast<int>(i) > skip) {
            const Kept &p = run.outcomes[i - 1];
            out.push_back(o.start_ns > p.end_ns ? o.start_ns - p.end_ns : 0);
        }
    }
}

// A faulty lane's outcomes: (runs, OK, runs that failed and poisoned with `code`); anything
// else (another code, a cancel, a poisoned run before any failure) fails the bench.
std::vector<uint64_t> classes(const LaneRun &run, int32_t code) {
    uint64_t ok = 0, poisons = 0;
    for (const Kept &o : run.outcomes) {
        if (o.verdict == RUN_LANE_VERDICT_OK) {
            ++ok;
        } else if (o.verdict == RUN_LANE_VERDICT_FAILED && o.klass == RUN_LANE_CLASS_POISON && o.code == code) {
            ++poisons;
        } else if (o.verdict != RUN_LANE_VERDICT_POISONED || poisons == 0) {
            fail("device " + std::to_string(run.device) + ": run " + std::to_string(o.id) + " ended unexpectedly");
        }
    }
    return {run.outcomes.size(), ok, poisons};
}

// One case: sixteen lanes at once (healthy, or beside a hung device 14 and a poisoned 15).
void lanes_case(void *fake_lib, const char *fake, FakeLaunchRun launch, uint64_t kernel_us, int runs, int skip,
                bool faulty, int repeat, bool cost) {
    auto fault_kernel = symbol<FaultKernelOn>(fake_lib, "runlanefake_fault_kernel_on");
    auto reset = symbol<Reset>(fake_lib, "runlanefake_reset");
    if (reset() != 0) {
        fail("reset the fake");
    }
    if (faulty && (fault_kernel(kHung, kFakeHang, kAicore, 0, UINT32_MAX, nullptr, 0) != 0 ||
                   fault_kernel(kPoisoned, kFakeException, kAicore, static_cast<uint32_t>(runs / 3), 1, nullptr, 0) != 0)) {
        fail("the fault rules");
    }
    const uint64_t threads_before = status_field("Threads:");
    const uint64_t rss_before = status_field("VmRSS:");
    std::vector<std::unique_ptr<LaneRun>> lanes;
    for (int device = 0; device < kLanes; ++device) {
        auto run = std::make_unique<LaneRun>();
        run->device = device;
        run->bench.launch = launch;
        run->bench.kernel_ns = kernel_us * 1000;
        run->outcomes.reserve(static_cast<size_t>(runs) + 64);
        run->lane = create_on(*run, fake);
        lanes.push_back(std::move(run));
    }
    const uint64_t threads_created = status_field("Threads:");
    const uint64_t rss_created = status_field("VmRSS:");
    std::atomic<bool> healthy_done{false};
    std::vector<std::thread> drivers;
    for (auto &run : lanes) {
        LaneRun *r = run.get();
        const bool hung = faulty && r->device == kHung;
        drivers.emplace_back([r, runs, hung, &healthy_done] { drive(*r, runs, hung ? &healthy_done : nullptr); });
    }
    // The fourteen first; then the hung lane stops submitting.
    for (int device = 0; device < kLanes; ++device) {
        if (device != kHung) {
            drivers[device].join();
        }
    }
    healthy_done = true;
    drivers[kHung].join();
    const uint64_t threads_ran = status_field("Threads:");
    const uint64_t rss_ran = status_field("VmRSS:");
    const uint64_t lane_threads = threads_named("lane");
    const uint64_t fake_threads = threads_named("fake-acl-");
    for (auto &run : lanes) {
        if (run_lane_destroy(run->lane) != RUN_LANE_STATUS_OK) {
            fail("destroy");
        }
    }
    // The fake's stream threads end on their own once their streams are destroyed.
    uint64_t threads_after = status_field("Threads:");
    const auto destroyed = std::chrono::steady_clock::now();
    while (threads_after > threads_before && std::chrono::steady_clock::now() - destroyed < std::chrono::seconds(10)) {
        std::this_thread::yield();
        threads_after = status_field("Threads:");
    }
    const uint64_t rss_after = status_field("VmRSS:");
    std::vector<uint64_t> gaps;
    int ok = 0;
    for (auto &run : lanes) {
        if (run->device < kHung) {
            lane_gaps(*run, skip, gaps);
            ok += static_cast<int>(run->outcomes.size());
        }
    }
    auto measured = spread(gaps);
    if (faulty) {
        auto hung = classes(*lanes[kHung], kAicoreTimeout);
        auto poisoned = classes(*lanes[kPoisoned], kAicoreException);
        if (hung[1] != 0 || hung[2] == 0 || poisoned[2] != 1) {
            fail("the faulty lanes did not end as expected");
        }
        std::printf("lanes faulty %d %llu %d %d %llu %llu %llu %llu %llu %llu %llu %llu\n", repeat,
                    (unsigned long long)kernel_us, runs, ok, (unsigned long long)measured.first,
                    (unsigned long long)measured.second, (unsigned long long)hung[0], (unsigned long long)hung[1],
                    (unsigned long long)hung[2], (unsigned long long)poisoned[0], (unsigned long long)poisoned[1],
                    (unsigned long long)poisoned[2]);
    } else {
        std::printf("lanes healthy %d %llu %d %d %llu %llu\n", repeat, (unsigned long long)kernel_us, runs, ok,
                    (unsigned long long)measured.first, (unsigned long long)measured.second);
    }
    if (cost) {
        std::printf("lanes-cost %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu\n",
                    (unsigned long long)threads_before, (unsigned long long)threads_created,
                    (unsigned long long)threads_ran, (unsigned long long)threads_after,
                    (unsigned long long)rss_before, (unsigned long long)rss_created, (unsigned long long)rss_ran,
                    (unsigned long long)rss_after, (unsigned long long)lane_threads,
                    (unsigned long long)fake_threads);
    }
    std::fflush(stdout);
    if (reset() != 0) {
        fail("reset the fake");
    }
}

int lanes_main(int argc, char **argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: fake_bench --lanes FAKE_LIB RUNS SKIP KERNEL_US REPEATS\n");
        return 2;
    }
    const char *fake_path = argv[2];
    const int runs = std::atoi(argv[3]);
    const int skip = std::atoi(argv[4]);
    const uint64_t kernel_us = std::strtoull(argv[5], nullptr, 10);
    const int repeats = std::atoi(argv[6]);
    if (runs < 4 || skip < 0 || skip + 2 >= runs || kernel_us == 0 || kernel_us * 1000 >= kOpTimeoutMs * 1000000 ||
        repeats < 1) {
        std::fprintf(stderr,
                     "fake_bench: RUNS at least 4 and above SKIP + 2, KERNEL_US above 0 and below the op "
                     "timeout, REPEATS at least 1\n");
        return 2;
    }
    void *fake = dlopen(fake_path, RTLD_NOW);
    if (fake == nullptr) {
        std::fprintf(stderr, "fake_bench: dlopen %s: %s\n", fake_path, dlerror());
        return 2;
    }
    auto launch = symbol<FakeLaunchRun>(fake, "runlanefake_launch_run");
    for (int repeat = 1; repeat <= repeats; ++repeat) {
        lanes_case(fake, fake_path, launch, kernel_us, runs, skip, false, repeat, repeat == 1);
        lanes_case(fake, fake_path, launch, kernel_us, runs, skip, true, repeat, false);
    }
    return resets_under_wait_checked(fake);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc > 1 && std::strcmp(argv[1], "--lanes") == 0) {
        return lanes_main(argc, argv);
    }
    if (argc != 5) {
        std::fprintf(stderr,
                     "usage: fake_bench FAKE_LIB RUNS SKIP KERNEL_US[,KERNEL_US...]\n"
                     "       fake_bench --lanes FAKE_LIB RUNS SKIP KERNEL_US REPEATS\n");
        return 2;
    }
    const char *fake_path = argv[1];
    const int runs = std::atoi(argv[2]);
    const int skip = std::atoi(argv[3]);
    if (runs < 4 || skip < 0 || skip + 2 >= runs) {
        std::fprintf(stderr, "fake_bench: RUNS must be at least 4 and above SKIP + 2\n");
        return 2;
    }
    std::vector<uint64_t> kernels_us;
    for (char *us = std::strtok(argv[4], ","); us != nullptr; us = std::strtok(nullptr, ",")) {
        kernels_us.push_back(std::strtoull(us, nullptr, 10));
    }
    void *fake = dlopen(fake_path, RTLD_NOW);
    if (fake == nullptr) {
        std::fprintf(stderr, "fake_bench: dlopen %s: %s\n", fake_path, dlerror());
        return 2;
    }
    Bench bench;
    bench.launch = symbol<FakeLaunchRun>(fake, "runlanefake_launch_run");
    bench.set_device = symbol<SetDevice>(fake, "aclrtSetDevice");
    bench.device_clock = symbol<DeviceClock>(fake, "runlanefake_device_clock_ns");
    auto floor_launch = symbol<FakeLaunch>(fake, "runlanefake_launch");
    const Acl acl = load_acl(fake);
    for (uint64_t us : kernels_us) {
        bench.kernel_ns = us * 1000;
        auto floor = spread(floor_gaps(acl, floor_launch, bench.kernel_ns, runs, skip));
        std::printf("floor %llu %d %llu %llu\n", (unsigned long long)us, runs - skip - 1,
                    (unsigned long long)floor.first, (unsigned long long)floor.second);
        std::fflush(stdout);
        Anchor anchor;
        anchor.acl = acl;
        anchor.launch = bench.launch;
        anchor.kernel_ns = bench.kernel_ns;
        for (char loop : {'a', 'b', 'c'}) {
            if (loop == 'b') {
                paired_b(bench, anchor, fake_path, us, runs, skip);
                continue;
            }
            for (uint8_t depth : {uint8_t{2}, uint8_t{1}}) {
                int ok = 0;
                auto measured = spread(gaps(arm(bench, fake_path, depth, loop, runs), skip, &ok));
                std::printf("arm %llu %c depth%u %d %d %llu %llu\n", (unsigned long long)us, loop,
                            unsigned{depth}, runs, ok,
                            (unsigned long long)measured.first, (unsigned long long)measured.second);
                if (depth == 2) {
                    auto latency = spread(latencies(bench, skip));
                    std::printf("latency %llu %c %llu %llu\n", (unsigned long long)us, loop,
                                (unsigned long long)latency.first, (unsigned long long)latency.second);
                }
                std::fflush(stdout);
            }
        }
        // The idle figure: the lane with the option off, on, caller-driven, and the anchor, a
        // run each in turn.
        Bench off_bench, on_bench, caller_bench;
        for (Bench *b : {&off_bench, &on_bench, &caller_bench}) {
            b->launch = bench.launch;
            b->set_device = bench.set_device;
            b->kernel_ns = bench.kernel_ns;
        }
        RunLane *off_lane = create_lane(off_bench, fake_path, 0, runs, false);
        RunLane *on_lane = create_lane(on_bench, fake_path, 0, runs, true, false, 1);
        RunLane *caller_lane = create_lane(caller_bench, fake_path, 0, runs, false, false, 2, true);
        anchor_open(anchor);
        IdleCalls by_hand;
        for (int i = 0; i < runs; ++i) {
            idle_submit(off_bench, off_lane);
            idle_submit(on_bench, on_lane);
            idle_submit(caller_bench, caller_lane);
            idle_anchor_run(anchor, i, skip, by_hand);
        }
        anchor_close(anchor);
        rebind(caller_bench);  // the caller-driven lane's destroy runs its steps on this thread
        if (run_lane_destroy(off_lane) != RUN_LANE_STATUS_OK || run_lane_destroy(on_lane) != RUN_LANE_STATUS_OK ||
            run_lane_destroy(caller_lane) != RUN_LANE_STATUS_OK) {
            fail("destroy");
        }
        auto off = idle_figures(off_bench, skip);
        auto on = idle_figures(on_bench, skip);
        auto by_caller = idle_figures(caller_bench, skip);
        auto lane = spread(off.first);
        auto bound = spread(on.first);
        auto calls = spread(by_hand.calls);
        auto launches = spread(by_hand.launches);
        std::printf("idle %llu %d %llu %llu %llu %llu %llu %llu\n", (unsigned long long)us, runs,
                    (unsigned long long)lane.first, (unsigned long long)lane.second, (unsigned long long)calls.first,
                    (unsigned long long)calls.second, (unsigned long long)launches.first,
                    (unsigned long long)launches.second);
        std::printf("idle-bound %llu %d %llu %llu\n", (unsigned long long)us, runs, (unsigned long long)bound.first,
                    (unsigned long long)bound.second);
        std::printf("idle-split %llu %llu %llu %llu\n", (unsigned long long)us,
                    (unsigned long long)spread(off.second).first, (unsigned long long)spread(on.second).first,
                    (unsigned long long)spread(by_hand.before_core).first);
        auto caller = spread(by_caller.first);
        std::printf("idle-caller %llu %d %llu %llu %llu\n", (unsigned long long)us, runs,
                    (unsigned long long)caller.first, (unsigned long long)caller.second,
                    (unsigned long long)spread(by_caller.second).first);
        std::fflush(stdout);
    }
    return resets_under_wait_checked(fake);
}
