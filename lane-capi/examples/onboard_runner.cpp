// A miniature onboard runner on the run lane's C ABI (run_lane.h).
//
// It does what the runtime's a2a3/a5 onboard runner does around the lane: it keeps a queue of
// dispatches, submits them while the lane has room (RUN_LANE_STATUS_FULL means: wait for the
// oldest outcome first; the loop docs/embedding.md recommends, which keeps every successor
// queued behind its running predecessor), publishes new AICore code once, sees one dispatch fail in its AICore
// launch, closes the lane and collects every outcome. The runner's callbacks keep its
// bookkeeping; on the simulator backend the simulated device then runs the kernels.
//
// Usage: onboard_runner sim [workers]                   (the simulator backend)
//        onboard_runner acl FAKE_LIB [workers]          (the ACL backend on the test fake of libascendcl)
//        onboard_runner device_ops FAKE_LIB [workers]   (the runtime's own device layer: a
//                                                        RunLaneDeviceOps table over the fake)
// With "workers" the runner declares that prepare and finalise may run off the lane thread
// (two prepares at once) and the lane gets two host workers: those two callbacks then come
// from the workers, at the same time as the lane thread's launches, so they lock the
// runner's state. Exits 0 when every check holds; prints "onboard runner: ok" last.
//
// On ACL a real runner launches its kernels with rtKernelLaunchWithHandleV2 and
// rtsLaunchCpuKernel on the stream it is given. This miniature has no kernels: on the fake
// library it queues fake kernels with the fake's test-only runlanefake_launch_run instead (the
// AICPU one writes the run's device start and end into the slot's timing buffer). At the end
// it asks the fake how many force resets it made while a thread was inside a device wait
// (runlanefake_resets_under_wait; on real ACL each one is a use-after-free, SPEC L-20),
// prints "onboard runner: resets_under_wait N" on stderr and fails unless N is 0.
//
// With device_ops the runner is also the device (SPEC L-22): the lane makes every device call
// through the RunLaneDeviceOps table below, whose entries a real runtime fills with its own rt
// layer's calls. Here each forwards to the fake's ACL function of the same name; the table
// binds each of the lane's threads itself (aclrtSetDevice) and the runtime, not the lane, sets
// the device op timeout.

#include "run_lane.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string &what) {
    if (!ok) {
        std::fprintf(stderr, "CHECK FAILED: %s (last error: %s)\n", what.c_str(), run_lane_last_error());
        ++failures;
    }
}

void expect_status(RunLaneStatus got, RunLaneStatus want, const std::string &what) {
    check(got == want, what + ": status " + std::to_string(got) + ", want " + std::to_string(want));
}

// The dispatch whose AICore launch fails (a bad kernel argument: run-only).
constexpr uint64_t kFailingTag = 103;
// ACL_ERROR_RT_PARAM_INVALID.
constexpr int32_t kParamInvalid = 107000;
// The code the runner publishes.
constexpr uint64_t kCode = 7;

// The fake library's kernel launch (acl-fake's runlanefake_launch_run): stream, engine (0
// AICore, 1 AICPU), duration, outcome (0 ok), timing buffer, status header, header bytes and
// length, the run's handshake (links its two kernels), its result record and its epoch. The
// fake publishes the record when both kernels end on their normal path, as a runtime's device
// code must (docs/embedding.md).
using FakeLaunch = int32_t (*)(void *, uint32_t, uint64_t, uint32_t, void *, void *, const uint8_t *, size_t,
                               void *, void *, uint64_t);
// The fake's count of force resets made while a thread was inside a device wait, since the
// process loaded it (acl-fake's runlanefake_resets_under_wait): must stay 0 (SPEC L-20).
using FakeResetsUnderWait = int32_t (*)(uint64_t *);
// A fake kernel's duration.
constexpr uint64_t kKernelNs = 2000000;

// The runner's own state. Callbacks run on the lane thread, one at a time, except prepare and
// finalise with workers, which run on the workers concurrently with it: the mutex is for
// those and for the main thread's reads.
struct OnboardRunner {
    std::mutex mutex;
    std::set<std::thread::id> lane_threads;  // where the launches, uploads, outcomes ran
    bool workers = false;                   // prepare and finalise run on host workers
    std::set<std::thread::id> host_threads;  // where prepare and finalise ran
    std::map<uint64_t, uint64_t> prepared;  // tag -> run
    std::vector<uint64_t> finalised;        // tags, in order
    std::map<uint64_t, bool> copied_back;   // tag -> copy_back
    int aicore_launches = 0;
    int aicpu_launches = 0;
    int uploads = 0;
    int outcomes_seen = 0;
    RunLane *lane = nullptr;
    RunLaneStatus wait_from_callback = RUN_LANE_STATUS_OK;
    FakeLaunch fake_launch = nullptr;  // set on the fake ACL backend

    // Where prepare and finalise run: the lane thread, or with workers a host worker.
    void on_host_thread() {
        if (workers) {
            host_threads.insert(std::this_thread::get_id());
        } else {
            on_lane_thread();
        }
    }

    // The lane's own callbacks run one at a time, on whichever of the lane's own threads
    // runs its steps: the lane thread, the completion waiter once it has a run's verdict,
    // or (with workers) a host worker once it answered.
    void on_lane_thread() { lane_threads.insert(std::this_thread::get_id()); }
};

// The runtime's device layer for RUN_LANE_BACKEND_DEVICE_OPS: here the fake libascendcl's
// functions, looked up by name (a real runtime calls its own rt layer).
struct DeviceLayer {
    int32_t device_id = 0;
    int32_t (*set_device)(int32_t) = nullptr;
    int32_t (*create_stream)(void **, uint32_t, uint32_t) = nullptr;
    int32_t (*destroy_stream)(void *) = nullptr;
    int32_t (*destroy_stream_force)(void *) = nullptr;
    int32_t (*stream_get_id)(void *, int32_t *) = nullptr;
    int32_t (*create_event)(void **, uint32_t) = nullptr;
    int32_t (*destroy_event)(void *) = nullptr;
    int32_t (*record_event)(void *, void *) = nullptr;
    int32_t (*stream_wait_event)(void *, void *) = nullptr;
    int32_t (*synchronize_event)(void *, int32_t) = nullptr;
    int32_t (*synchronize_stream)(void *, int32_t) = nullptr;
    int32_t (*malloc)(void **, size_t, int32_t) = nullptr;
    int32_t (*free)(void *) = nullptr;
    int32_t (*memcpy)(void *, size_t, const void *, size_t, int32_t) = nullptr;
    int32_t (*synchronize_device)(int32_t) = nullptr;
    int32_t (*reset_device_force)(int32_t) = nullptr;
    int32_t (*set_op_timeout)(uint64_t, uint64_t *) = nullptr;
    const char *(*recent_error_message)() = nullptr;
    // Entries the lane called, from any of its threads (the completion waiter's waits among
    // them, at the same time as the others).
    std::atomic<uint64_t> calls{0};

    // Looks every function up in `library`; false (with a message) if one is missing.
    bool load(void *library) {
        bool ok = true;
        auto find = [&](auto &slot, const char *name) {
            slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(library, name));
            if (slot == nullptr) {
                std::fprintf(stderr, "the device layer has no %s\n", name);
                ok = false;
            }
        };
        find(set_device, "aclrtSetDevice");
        find(create_stream, "aclrtCreateStreamWithConfig");
        find(destroy_stream, "aclrtDestroyStream");
        find(destroy_stream_force, "aclrtDestroyStreamForce");
        find(stream_get_id, "aclrtStreamGetId");
        find(create_event, "aclrtCreateEventExWithFlag");
        find(destroy_event, "aclrtDestroyEvent");
        find(record_event, "aclrtRecordEvent");
        find(stream_wait_event, "aclrtStreamWaitEvent");
        find(synchronize_event, "aclrtSynchronizeEventWithTimeout");
        find(synchronize_stream, "aclrtSynchronizeStreamWithTimeout");
        find(malloc, "aclrtMalloc");
        find(free, "aclrtFree");
        find(memcpy, "aclrtMemcpy");
        find(synchronize_device, "aclrtSynchronizeDeviceWithTimeout");
        find(reset_device_force, "aclrtResetDeviceForce");
        find(set_op_timeout, "aclrtSetOpExecuteTimeOutV2");
        find(recent_error_message, "aclGetRecentErrMsg");
        return ok;
    }
};

// The entry's device layer (the table's user), counting the call.
DeviceLayer *layer(void *user) {
    auto *d = static_cast<DeviceLayer *>(user);
    d->calls.fetch_add(1, std::memory_order_relaxed);
    return d;
}

// ACL's values the entries pass: ACL_EVENT_SYNC, ACL_MEM_MALLOC_HUGE_FIRST and the two copy
// directions.
constexpr uint32_t kEventSync = 1;
constexpr int32_t kHugeFirst = 0;
constexpr int32_t kHostToDevice = 1;
constexpr int32_t kDeviceToHost = 2;

// The table of device operations: every required entry and the optional ones this layer has
// (no pinned copies). The lane calls them on its own threads; each returns 0 or the layer's
// ACL code, which the lane classifies as its own.
RunLaneDeviceOps device_ops_table(DeviceLayer *d) {
    RunLaneDeviceOps ops; RUN_LANE_INIT(ops);
    ops.user = d;
    ops.bind = [](void *u) { return layer(u)->set_device(layer(u)->device_id); };
    ops.create_stream = [](void *u, void **out) { return layer(u)->create_stream(out, 0, 0); };
    ops.destroy_stream = [](void *u, void *s) { return layer(u)->destroy_stream(s); };
    ops.destroy_stream_force = [](void *u, void *s) { return layer(u)->destroy_stream_force(s); };
    ops.stream_id = [](void *u, void *s, int32_t *id) { return layer(u)->stream_get_id(s, id); };
    ops.create_event = [](void *u, void **out) { return layer(u)->create_event(out, kEventSync); };
    ops.destroy_event = [](void *u, void *e) { return layer(u)->destroy_event(e); };
    ops.record_event = [](void *u, void *e, void *s) { return layer(u)->record_event(e, s); };
    ops.stream_wait_event = [](void *u, void *s, void *e) { return layer(u)->stream_wait_event(s, e); };
    ops.synchronize_event = [](void *u, void *e, int32_t ms) { return layer(u)->synchronize_event(e, ms); };
    ops.synchronize_stream = [](void *u, void *s, int32_t ms) { return layer(u)->synchronize_stream(s, ms); };
    ops.malloc = [](void *u, size_t size, void **out) { return layer(u)->malloc(out, size, kHugeFirst); };
    ops.free = [](void *u, void *p) { return layer(u)->free(p); };
    ops.memcpy_to_device = [](void *u, void *dst, const void *src, size_t len) {
        return layer(u)->memcpy(dst, len, src, len, kHostToDevice);
    };
    ops.memcpy_from_device = [](void *u, void *dst, const void *src, size_t len) {
        return layer(u)->memcpy(dst, len, src, len, kDeviceToHost);
    };
    ops.synchronize_device = [](void *u, int32_t ms) { return layer(u)->synchronize_device(ms); };
    ops.reset_device_force = [](void *u) { return layer(u)->reset_device_force(layer(u)->device_id); };
    ops.recent_error_message = [](void *u) { return layer(u)->recent_error_message(); };
    return ops;
}

int32_t prepare(void *user, const RunLaneRunInfo *run) {
    auto *r = static_cast<OnboardRunner *>(user);
    std::lock_guard<std::mutex> lock(r->mutex);
    r->on_host_thread();
    r->prepared[run->tag] = run->run;
    if (r->lane != nullptr && r->wait_from_callback == RUN_LANE_STATUS_OK) {
        // Waiting from a callback would wait on the lane thread (or the worker) itself: refused.
        RunLaneOutcome outcome;
        RUN_LANE_INIT(outcome);
        r->wait_from_callback = run_lane_wait(r->lane, run->run, 0, &outcome);
    }
    return 0;
}

int32_t launch_aicore(void *user, void *stream, const RunLaneRunArgs *args) {
    auto *r = static_cast<OnboardRunner *>(user);
    std::lock_guard<std::mutex> lock(r->mutex);
    r->on_lane_thread();
    if (stream == nullptr || args->status_header == nullptr || args->timing == nullptr ||
        args->handshake == nullptr || args->record == nullptr || args->epoch == 0) {
        return kParamInvalid;
    }
    if (args->info.tag == kFailingTag) {
        return kParamInvalid;
    }
    ++r->aicore_launches;
    if (r->fake_launch != nullptr) {
        return r->fake_launch(stream, 0, kKernelNs, 0, nullptr, nullptr, nullptr, 0, args->handshake, nullptr,
                              args->epoch);
    }
    return 0;
}

int32_t launch_aicpu(void *user, void *stream, const RunLaneRunArgs *args) {
    auto *r = static_cast<OnboardRunner *>(user);
    std::lock_guard<std::mutex> lock(r->mutex);
    r->on_lane_thread();
    ++r->aicpu_launches;
    if (r->fake_launch != nullptr) {
        return r->fake_launch(stream, 1, kKernelNs, 0, args->timing, nullptr, nullptr, 0, args->handshake,
                              args->record, args->epoch);
    }
    return 0;
}

int32_t finalise(void *user, const RunLaneRunInfo *run, bool copy_back) {
    auto *r = static_cast<OnboardRunner *>(user);
    std::lock_guard<std::mutex> lock(r->mutex);
    r->on_host_thread();
    r->finalised.push_back(run->tag);
    r->copied_back[run->tag] = copy_back;
    return 0;
}

int32_t upload_code(void *user, uint64_t code) {
    auto *r = static_cast<OnboardRunner *>(user);
    std::lock_guard<std::mutex> lock(r->mutex);
    r->on_lane_thread();
    if (code != kCode) {
        return kParamInvalid;
    }
    ++r->uploads;
    return 0;
}

void on_outcome(void *user, const RunLaneOutcome *outcome) {
    // A real runner would wake its own loop here; the outcome is still taken by poll/wait.
    auto *r = static_cast<OnboardRunner *>(user);
    std::lock_guard<std::mutex> lock(r->mutex);
    r->on_lane_thread();
    (void)outcome;
    ++r->outcomes_seen;
}

struct Item {
    uint64_t id;
    bool is_run;
    uint64_t tag;
};

void print(const RunLaneOutcome &o) {
    if (o.item == RUN_LANE_ITEM_PUBLICATION) {
        std::printf("publication %llu: %s\n", (unsigned long long)o.id,
                    o.verdict == RUN_LANE_VERDICT_OK ? "uploaded" : o.failure_line);
    } else if (o.verdict == RUN_LANE_VERDICT_OK) {
        std::printf("run %llu (tag %llu): ok, device %llu..%llu ns\n", (unsigned long long)o.id,
                    (unsigned long long)o.tag, (unsigned long long)o.device_start_ns,
                    (unsigned long long)o.device_end_ns);
    } else if (o.verdict == RUN_LANE_VERDICT_CANCELLED) {
        std::printf("run %llu (tag %llu): cancelled\n", (unsigned long long)o.id, (unsigned long long)o.tag);
    } else {
        // The stable failure line: grep logs for "run N failed".
        std::printf("%s\n", o.failure_line);
    }
}

}  // namespace

int main(int argc, char **argv) {
    const bool device_ops = argc >= 3 && std::strcmp(argv[1], "device_ops") == 0;
    const bool acl = argc >= 3 && std::strcmp(argv[1], "acl") == 0;
    const bool workers = std::strcmp(argv[argc - 1], "workers") == 0;
    check(run_lane_abi_version() == RUN_LANE_ABI_VERSION, "the library's ABI version matches the header's");

    OnboardRunner runner;
    runner.workers = workers;
    FakeResetsUnderWait resets_under_wait = nullptr;
    DeviceLayer device;
    RunLaneDeviceOps ops; RUN_LANE_INIT(ops);
    if (acl || device_ops) {
        void *fake = dlopen(argv[2], RTLD_NOW);
        if (fake == nullptr) {
            std::fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
            return 2;
        }
        runner.fake_launch = reinterpret_cast<FakeLaunch>(dlsym(fake, "runlanefake_launch_run"));
        if (runner.fake_launch == nullptr) {
            std::fprintf(stderr, "%s has no runlanefake_launch_run\n", argv[2]);
            return 2;
        }
        resets_under_wait = reinterpret_cast<FakeResetsUnderWait>(dlsym(fake, "runlanefake_resets_under_wait"));
        if (resets_under_wait == nullptr) {
            std::fprintf(stderr, "%s has no runlanefake_resets_under_wait\n", argv[2]);
            return 2;
        }
        if (device_ops && !device.load(fake)) {
            return 2;
        }
    }
    RunLaneConfig config;
    RUN_LANE_INIT(config);
    expect_status(run_lane_config_default(&config), RUN_LANE_STATUS_OK, "config_default");
    config.backend = acl ? RUN_LANE_BACKEND_ACL : RUN_LANE_BACKEND_SIM;
    config.acl_library_path = acl ? argv[2] : nullptr;
    // Ask the device which chip this is (the simulator answers a2a3, the fake "Ascend910B1").
    config.profile = RUN_LANE_PROFILE_PROBE;
    if (device_ops) {
        // The runtime's own device layer: the lane calls it through the table (copied at
        // create; `device` outlives the lane). The runtime knows its chip (a table has no SoC
        // to probe) and programs its own op timeout, below the lane's host wait.
        ops = device_ops_table(&device);
        config.backend = RUN_LANE_BACKEND_DEVICE_OPS;
        config.device_ops = &ops;
        config.profile = RUN_LANE_PROFILE_A2A3;
        uint64_t actual_us = 0;
        check(device.set_op_timeout(5000 * 1000, &actual_us) == 0, "the runtime sets its op timeout");
    }
    config.completion_timeout_ms = 10000;
    config.device_op_timeout_ms = 5000;
    config.sim_seed = 42;
    config.runner.user = &runner;
    config.runner.prepare = prepare;
    config.runner.launch_aicore = launch_aicore;
    config.runner.launch_aicpu = launch_aicpu;
    config.runner.finalise = finalise;
    config.runner.upload_code = upload_code;
    config.runner.on_outcome = on_outcome;
    if (workers) {
        // prepare and finalise are safe on any thread (they lock the runner's state), two
        // prepares at once, each on its own slot.
        config.runner.concurrency.off_lane_thread = true;
        config.runner.concurrency.prepares_at_once = 2;
        config.workers = 2;
        config.prepare_window = 2;
    }

    // A bad handle is an error, never a crash.
    RunLaneOutcome outcome;
    RUN_LANE_INIT(outcome);
    expect_status(run_lane_poll(nullptr, &outcome), RUN_LANE_STATUS_INVALID_HANDLE, "poll(NULL)");
    expect_status(run_lane_poll(reinterpret_cast<RunLane *>(0x1234), &outcome), RUN_LANE_STATUS_INVALID_HANDLE,
                  "poll(foreign handle)");
    RunLaneConfig stale = config;
    stale.abi_version = RUN_LANE_ABI_VERSION + 1;
    RunLane *lane = nullptr;
    expect_status(run_lane_create(&stale, &lane), RUN_LANE_STATUS_ABI_MISMATCH, "create with a stale ABI version");

    RunLaneStatus created = run_lane_create(&config, &lane);
    if (created != RUN_LANE_STATUS_OK) {
        std::fprintf(stderr, "run_lane_create: status %u: %s\n", created, run_lane_last_error());
        return 2;
    }
    {
        std::lock_guard<std::mutex> lock(runner.mutex);
        runner.lane = lane;
    }
    // The lane left the process's exception callback slot alone (fault_notice_monitor is off
    // by default): this runtime would forward notices with run_lane_report_device_fault.
    RunLaneNoticeMonitorReport monitor;
    RUN_LANE_INIT(monitor);
    expect_status(run_lane_notice_monitor(lane, &monitor), RUN_LANE_STATUS_OK, "notice_monitor");
    check(monitor.state == RUN_LANE_NOTICE_MONITOR_NOT_ASKED, "the notice monitor was not asked for");

    // The dispatch queue: five runs, new code published after the second.
    std::deque<uint64_t> dispatches = {100, 101, 102, kFailingTag, 104};
    std::vector<Item> accepted;
    std::deque<Item> in_flight;
    std::vector<RunLaneOutcome> outcomes;
    bool published = false;

    auto take_oldest = [&]() {
        Item oldest = in_flight.front();
        in_flight.pop_front();
        RunLaneOutcome o;
        RUN_LANE_INIT(o);
        RunLaneStatus s = run_lane_wait(lane, oldest.id, 30000, &o);
        expect_status(s, RUN_LANE_STATUS_OK, "wait for item " + std::to_string(oldest.id));
        if (s == RUN_LANE_STATUS_OK) {
            check(o.id == oldest.id, "wait returns the item waited for");
            print(o);
            outcomes.push_back(o);
        }
    };

    while (!dispatches.empty()) {
        if (accepted.size() == 2 && !published) {
            uint64_t publication = 0;
            expect_status(run_lane_publish(lane, kCode, &publication), RUN_LANE_STATUS_OK, "publish");
            accepted.push_back({publication, false, 0});
            in_flight.push_back(accepted.back());
            published = true;
            continue;
        }
        uint64_t tag = dispatches.front();
        RunLaneSubmit request; RUN_LANE_INIT(request);
        request.has_tag = true;
        request.tag = tag;
        request.copy_back = tag % 2 == 0;
        uint64_t run = 0;
        RunLaneStatus s = run_lane_submit(lane, &request, &run);
        if (s == RUN_LANE_STATUS_FULL) {
            // Every slot holds a run without an outcome: wait for the oldest, then retry.
            take_oldest();
            continue;
        }
        expect_status(s, RUN_LANE_STATUS_OK, "submit tag " + std::to_string(tag));
        if (s != RUN_LANE_STATUS_OK) {
            break;
        }
        dispatches.pop_front();
        accepted.push_back({run, true, tag});
        in_flight.push_back(accepted.back());
    }

    // Collect what is still in flight, then close: close cancels runs that have not
    // launched yet, so a runner that wants every dispatch run drains first.
    while (!in_flight.empty()) {
        take_oldest();
    }
    RunLaneCloseReport report;
    RUN_LANE_INIT(report);
    expect_status(run_lane_close(lane, &report), RUN_LANE_STATUS_OK, "close");
    check(!report.device_lost && !report.poisoned, "a run-only failure poisons nothing");
    RunLaneSubmit late; RUN_LANE_INIT(late);
    uint64_t ignored = 0;
    expect_status(run_lane_submit(lane, &late, &ignored), RUN_LANE_STATUS_CLOSED, "submit after close");
    expect_status(run_lane_poll(lane, &outcome), RUN_LANE_STATUS_EMPTY, "nothing left to poll");
    RunLaneOutcome again;
    RUN_LANE_INIT(again);
    expect_status(run_lane_wait(lane, accepted.front().id, 0, &again), RUN_LANE_STATUS_ALREADY_TAKEN,
                  "an outcome is taken once");
    expect_status(run_lane_wait(lane, 999, 0, &again), RUN_LANE_STATUS_UNKNOWN_ITEM, "an unknown item");

    // Exactly one outcome per accepted item, in submission order.
    check(outcomes.size() == accepted.size(), "one outcome per accepted item");
    for (size_t i = 0; i < outcomes.size() && i < accepted.size(); ++i) {
        const RunLaneOutcome &o = outcomes[i];
        const Item &item = accepted[i];
        check(o.id == item.id, "outcome " + std::to_string(i) + " is in submission order");
        check((o.item == RUN_LANE_ITEM_RUN) == item.is_run, "outcome kind");
        if (!item.is_run) {
            check(o.verdict == RUN_LANE_VERDICT_OK, "the publication uploaded");
            continue;
        }
        check(o.has_tag && o.tag == item.tag, "the outcome carries its tag");
        if (item.tag == kFailingTag) {
            check(o.verdict == RUN_LANE_VERDICT_FAILED, "the failing dispatch failed");
            check(o.failure_class == RUN_LANE_CLASS_RUN_ONLY, "a parameter error in a launch is run-only");
            check(o.stage == RUN_LANE_STAGE_AICORE_LAUNCH, "it failed in the AICore launch");
            check(o.has_code && o.code == kParamInvalid, "with the callback's code");
            check(std::strcmp(o.code_name, "ACL_ERROR_RT_PARAM_INVALID") == 0, "and its name");
            check(std::strlen(o.hint) > 0, "and a hint");
            check(std::strncmp(o.failure_line, "run ", 4) == 0, "and the stable failure line");
        } else {
            check(o.verdict == RUN_LANE_VERDICT_OK, "dispatch " + std::to_string(item.tag) + " succeeded");
            check(o.has_timing && o.device_end_ns > o.device_start_ns, "device start and end are known");
            check(o.failure_line[0] == '\0', "an ok run has no failure line");
        }
    }

    {
        std::lock_guard<std::mutex> lock(runner.mutex);
        const auto me = std::this_thread::get_id();
        check(!runner.lane_threads.empty() && runner.lane_threads.count(me) == 0,
              "every launch callback ran on one of the lane's own threads, not ours");
        check(runner.lane_threads.size() <= (workers ? 4u : 2u),
              "the lane thread and the completion waiter (and the host workers)");
        if (workers) {
            check(!runner.host_threads.empty(), "prepare and finalise ran on host workers");
            check(runner.host_threads.count(me) == 0, "not on ours");
        }
        check(runner.uploads == 1, "one upload");
        check(runner.prepared.size() == 5, "five runs prepared");
        check(runner.finalised.size() == 5, "every prepared run finalised once");
        check(runner.aicore_launches == 4 && runner.aicpu_launches == 4, "four runs launched");
        check(runner.copied_back[100] && !runner.copied_back[101] && runner.copied_back[104],
              "copy-back as each request asked (and only for successful runs)");
        check(!runner.copied_back[kFailingTag], "no copy-back for the failed run");
        expect_status(runner.wait_from_callback, RUN_LANE_STATUS_WRONG_THREAD, "wait from a callback");
    }

    // The final report (ABI 3): the teardown ended, and no stream survived its destroys.
    RunLaneCloseReport last;
    RUN_LANE_INIT(last);
    expect_status(run_lane_destroy_with_report(lane, &last), RUN_LANE_STATUS_OK, "destroy");
    check(last.state == RUN_LANE_STATE_CLOSED, "destroy's report is the closed lane's");
    check(last.streams_left == 0 && last.teardown_line[0] == '\0', "no stream was left");
    {
        // After destroy (the lane thread joined) every outcome has been announced.
        std::lock_guard<std::mutex> lock(runner.mutex);
        check(runner.outcomes_seen == static_cast<int>(accepted.size()), "on_outcome saw every outcome");
    }
    expect_status(run_lane_destroy(lane), RUN_LANE_STATUS_INVALID_HANDLE, "a second destroy");
    if (device_ops) {
        check(device.calls.load() > 0, "the lane made its device calls through the runtime's table");
    }
    if (resets_under_wait != nullptr) {
        uint64_t count = UINT64_MAX;
        check(resets_under_wait(&count) == 0, "read the fake's resets under a wait");
        std::fprintf(stderr, "onboard runner: resets_under_wait %llu\n", (unsigned long long)count);
        check(count == 0, "no force reset was made while a thread was inside a device wait (L-20)");
    }

    if (failures != 0) {
        std::fprintf(stderr, "onboard runner: %d checks failed\n", failures);
        return 1;
    }
    std::printf("onboard runner: ok\n");
    return 0;
}
