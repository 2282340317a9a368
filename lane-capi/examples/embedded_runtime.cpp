// The run lane inside an onboard runtime that owns its device (SPEC L-22, L-23, L-24): the
// worked example of docs/embedding.md's "A runtime that owns its device: the worked example", and
// its test.
//
// The runtime here is shaped like the C++ runtime the lane is linked into
// (shared/reference/embedding-fit.md, "Who owns what in the runtime"):
//
// - It owns its device through its own thin device layer (class Device): the lane makes every
//   device call through a RunLaneDeviceOps table whose entries forward to that layer. Two
//   layers: AclDevice, over the fake libascendcl loaded with dlopen from the path given on the
//   command line (a real runtime's rt layer over libascendcl), and StubDevice, plain
//   bookkeeping whose kernels complete when the test says so.
// - It creates its own stream pair up front and lends those streams to the lane from the
//   table's create_stream; the lane's destroy entries give them back, and the runtime destroys
//   them itself at shutdown (it owns them).
// - It keeps per-thread state: a thread_local trace context, set by every call the runtime
//   makes into the lane on its one driving thread. Every runner callback and every table entry
//   checks it, so each proves it ran on that thread, inside one of the runtime's own calls.
// - The caller drives (RUN_LANE_DRIVE_CALLER): the lane has no thread; run_lane_submit,
//   run_lane_wait, run_lane_poll and run_lane_close run its steps on the runtime's thread.
// - The runtime owns recovery (RUN_LANE_RECOVERY_RUNTIME): after an AICore exception the lane
//   tells on_poison once and then calls no table entry at all (each entry counts its calls and
//   fails loudly while the runtime holds the device); the runtime resets the device through
//   its own layer (aclrtSetDevice, aclrtResetDeviceForce), makes its stream pair again and
//   calls run_lane_device_reset, and the next run is OK.
//
// With StubDevice the test decides when each run's kernels complete (StubDevice::complete):
// its event query and its bounded event wait answer from that flag, and a completed run's
// result record is the ok record stamped with the run's epoch, so order-of-events cases run
// without real time. Each case is a function below; each prints "case NAME" and then either
// "case NAME: ok" or a "FAILED NAME: ..." line per broken check.
//
// Usage: embedded_runtime CASE [FAKE_LIB]   CASE is a case's name, or "all" (FAKE_LIB needed
//                                            by the cases on the fake, and by "all").
// Exits 0 when every check of the cases run holds, and prints "embedded runtime: ok" last.

#include "run_lane.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------------
// Checks: a broken one prints the case, the expectation and where, and fails the program.

const char *g_case = "(none)";
int g_failures = 0;

void check_that(bool ok, const char *expr, const std::string &what, const char *file, int line) {
    if (!ok) {
        std::printf("FAILED %s: %s [%s] at %s:%d (last error: %s)\n", g_case, what.c_str(), expr, file, line,
                    run_lane_last_error());
        std::fflush(stdout);
        ++g_failures;
    }
}

#define CHECK(cond, what) check_that((cond), #cond, (what), __FILE__, __LINE__)

std::string status_name(RunLaneStatus s) {
    switch (s) {
        case RUN_LANE_STATUS_OK: return "OK";
        case RUN_LANE_STATUS_EMPTY: return "EMPTY";
        case RUN_LANE_STATUS_FULL: return "FULL";
        case RUN_LANE_STATUS_CLOSED: return "CLOSED";
        case RUN_LANE_STATUS_TIMED_OUT: return "TIMED_OUT";
        case RUN_LANE_STATUS_UNUSABLE: return "UNUSABLE";
        case RUN_LANE_STATUS_LOST: return "LOST";
        default: return "status " + std::to_string(static_cast<unsigned>(s));
    }
}

// Checks a status the call `expr` returned (evaluated once, before the check).
void check_status(RunLaneStatus got, RunLaneStatus want, const char *expr, const std::string &what, const char *file,
                  int line) {
    check_that(got == want, expr, what + ": " + status_name(got) + ", want " + status_name(want), file, line);
}

#define CHECK_STATUS(got, want, what) check_status((got), (want), #got, (what), __FILE__, __LINE__)

// ACL codes the runtime's layer returns (ascend-cl §3).
constexpr int32_t kParamInvalid = 107000;        // ACL_ERROR_RT_PARAM_INVALID
constexpr int32_t kFeatureNotSupported = 207000;  // ACL_ERROR_RT_FEATURE_NOT_SUPPORT
constexpr int32_t kAicoreException = 507015;      // ACL_ERROR_RT_AICORE_EXCEPTION
constexpr int32_t kEventSyncTimeout = 507047;     // ACL_ERROR_RT_EVENT_SYNC_TIMEOUT
constexpr int32_t kStreamSyncTimeout = 507046;    // ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
constexpr int32_t kDriverInternal = 507899;       // ACL_ERROR_RT_DRIVER_INTERNAL_ERROR

// The result record a run's device side publishes (docs/embedding.md, "The result record"):
// 280 bytes, little-endian, u64 published (the run's epoch, written last) at 0, u32 verdict
// at 12 (1 ok).
constexpr size_t kRecordBytes = 280;
constexpr size_t kRecordVerdictAt = 12;
constexpr uint32_t kRecordVerdictOk = 1;

void put_le(uint8_t *at, uint64_t value, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) {
        at[i] = static_cast<uint8_t>(value >> (8 * i));
    }
}

// ---------------------------------------------------------------------------------------------
// The runtime's device layer: what the table's entries and the runtime's own code call.

enum class Engine : uint32_t { kAicore = 0, kAicpu = 1 };

class Device {
public:
    virtual ~Device() = default;
    Device() = default;
    Device(const Device &) = delete;
    Device &operator=(const Device &) = delete;

    // aclrtSetDevice on the calling thread.
    virtual int32_t bind() = 0;
    virtual int32_t create_stream(void **out) = 0;
    virtual int32_t destroy_stream(void *stream) = 0;
    virtual int32_t destroy_stream_force(void *stream) = 0;
    virtual int32_t create_event(void **out) = 0;
    virtual int32_t destroy_event(void *event) = 0;
    virtual int32_t record_event(void *event, void *stream) = 0;
    virtual int32_t stream_wait_event(void *stream, void *event) = 0;
    virtual int32_t query_event(void *event, bool *complete) = 0;
    virtual int32_t synchronize_event(void *event, int32_t timeout_ms) = 0;
    virtual int32_t synchronize_stream(void *stream, int32_t timeout_ms) = 0;
    virtual int32_t malloc_device(size_t size, void **out) = 0;
    virtual int32_t free_device(void *ptr) = 0;
    virtual int32_t copy_to_device(void *dst, const void *src, size_t len) = 0;
    virtual int32_t copy_from_device(void *dst, const void *src, size_t len) = 0;
    // The runtime's kernel launch: one kernel of the run `args` names, on `stream`; with
    // `fault`, an AICore kernel that raises an AICore exception.
    virtual int32_t launch(void *stream, Engine engine, const RunLaneRunArgs &args, bool fault) = 0;
    // The runtime's own recovery: bind the thread, then force-reset the device. Every stream,
    // event and allocation on it dies.
    virtual int32_t reset() = 0;
};

// The fake libascendcl as the runtime's rt layer reaches libascendcl: dlopen, dlsym.
class AclDevice final : public Device {
public:
    AclDevice(void *library, int32_t device_id) : device_id_(device_id) {
        auto find = [&](auto &slot, const char *name) {
            slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(library, name));
            if (slot == nullptr) {
                std::printf("the device layer has no %s\n", name);
                loaded_ = false;
            }
        };
        find(set_device_, "aclrtSetDevice");
        find(create_stream_, "aclrtCreateStreamWithConfig");
        find(destroy_stream_, "aclrtDestroyStream");
        find(destroy_stream_force_, "aclrtDestroyStreamForce");
        find(create_event_, "aclrtCreateEventExWithFlag");
        find(destroy_event_, "aclrtDestroyEvent");
        find(record_event_, "aclrtRecordEvent");
        find(stream_wait_event_, "aclrtStreamWaitEvent");
        find(query_event_, "aclrtQueryEventStatus");
        find(synchronize_event_, "aclrtSynchronizeEventWithTimeout");
        find(synchronize_stream_, "aclrtSynchronizeStreamWithTimeout");
        find(malloc_, "aclrtMalloc");
        find(free_, "aclrtFree");
        find(memcpy_, "aclrtMemcpy");
        find(reset_device_force_, "aclrtResetDeviceForce");
        find(set_op_timeout_, "aclrtSetOpExecuteTimeOutV2");
        // The fake's kernels (a real runtime launches with rtKernelLaunchWithHandleV2 and
        // rtsLaunchCpuKernel) and its count of force resets made under a device wait.
        find(launch_run_, "runlanefake_launch_run");
        find(resets_under_wait_, "runlanefake_resets_under_wait");
    }

    bool loaded() const { return loaded_; }

    // The runtime programs the process's op timeout on attach (the lane's table backend
    // programs none: SPEC L-21, docs/embedding.md).
    int32_t set_op_timeout_ms(uint64_t ms) {
        uint64_t actual_us = 0;
        return set_op_timeout_(ms * 1000, &actual_us);
    }

    // Force resets the fake made while a thread was inside a device wait: each one a
    // use-after-free on real ACL (SPEC L-20).
    uint64_t resets_under_wait() {
        uint64_t count = UINT64_MAX;
        return resets_under_wait_(&count) == 0 ? count : UINT64_MAX;
    }

    int32_t bind() override { return set_device_(device_id_); }
    int32_t create_stream(void **out) override { return create_stream_(out, 0, 0); }
    int32_t destroy_stream(void *s) override { return destroy_stream_(s); }
    int32_t destroy_stream_force(void *s) override { return destroy_stream_force_(s); }
    int32_t create_event(void **out) override { return create_event_(out, kEventSync); }
    int32_t destroy_event(void *e) override { return destroy_event_(e); }
    int32_t record_event(void *e, void *s) override { return record_event_(e, s); }
    int32_t stream_wait_event(void *s, void *e) override { return stream_wait_event_(s, e); }
    int32_t query_event(void *e, bool *complete) override {
        int32_t status = 0;
        int32_t code = query_event_(e, &status);
        *complete = status == kEventRecordedStatusComplete;
        return code;
    }
    int32_t synchronize_event(void *e, int32_t ms) override { return synchronize_event_(e, ms); }
    int32_t synchronize_stream(void *s, int32_t ms) override { return synchronize_stream_(s, ms); }
    int32_t malloc_device(size_t size, void **out) override { return malloc_(out, size, kHugeFirst); }
    int32_t free_device(void *p) override { return free_(p); }
    int32_t copy_to_device(void *dst, const void *src, size_t len) override {
        return memcpy_(dst, len, src, len, kHostToDevice);
    }
    int32_t copy_from_device(void *dst, const void *src, size_t len) override {
        return memcpy_(dst, len, src, len, kDeviceToHost);
    }
    int32_t launch(void *stream, Engine engine, const RunLaneRunArgs &args, bool fault) override {
        // The run's two kernels share its handshake and epoch; the AICPU one writes the slot's
        // timing buffer, and the fake publishes the run's ok record when both end cleanly (an
        // exception publishes none, as a runtime's device code must not).
        const bool aicpu = engine == Engine::kAicpu;
        return launch_run_(stream, static_cast<uint32_t>(engine), kKernelNs, fault ? kOutcomeException : 0,
                           aicpu ? args.timing : nullptr, nullptr, nullptr, 0, args.handshake,
                           aicpu ? args.record : nullptr, args.epoch);
    }
    int32_t reset() override {
        // A force reset needs the thread to have set the device since the device's last reset
        // (507007 otherwise): bind first, as the runtime's DeviceRunner::finalize does.
        int32_t code = set_device_(device_id_);
        return code != 0 ? code : reset_device_force_(device_id_);
    }

private:
    // ACL's values: ACL_EVENT_SYNC, ACL_EVENT_RECORDED_STATUS_COMPLETE,
    // ACL_MEM_MALLOC_HUGE_FIRST, the two copy directions; the fake's Outcome::Exception.
    static constexpr uint32_t kEventSync = 1;
    static constexpr int32_t kEventRecordedStatusComplete = 1;
    static constexpr int32_t kHugeFirst = 0;
    static constexpr int32_t kHostToDevice = 1;
    static constexpr int32_t kDeviceToHost = 2;
    static constexpr uint32_t kOutcomeException = 1;
    // Each fake kernel's duration: short, the cases wait for real kernels here.
    static constexpr uint64_t kKernelNs = 2000000;

    int32_t device_id_;
    bool loaded_ = true;
    int32_t (*set_device_)(int32_t) = nullptr;
    int32_t (*create_stream_)(void **, uint32_t, uint32_t) = nullptr;
    int32_t (*destroy_stream_)(void *) = nullptr;
    int32_t (*destroy_stream_force_)(void *) = nullptr;
    int32_t (*create_event_)(void **, uint32_t) = nullptr;
    int32_t (*destroy_event_)(void *) = nullptr;
    int32_t (*record_event_)(void *, void *) = nullptr;
    int32_t (*stream_wait_event_)(void *, void *) = nullptr;
    int32_t (*query_event_)(void *, int32_t *) = nullptr;
    int32_t (*synchronize_event_)(void *, int32_t) = nullptr;
    int32_t (*synchronize_stream_)(void *, int32_t) = nullptr;
    int32_t (*malloc_)(void **, size_t, int32_t) = nullptr;
    int32_t (*free_)(void *) = nullptr;
    int32_t (*memcpy_)(void *, size_t, const void *, size_t, int32_t) = nullptr;
    int32_t (*reset_device_force_)(int32_t) = nullptr;
    int32_t (*set_op_timeout_)(uint64_t, uint64_t *) = nullptr;
    int32_t (*launch_run_)(void *, uint32_t, uint64_t, uint32_t, void *, void *, const uint8_t *, size_t, void *,
                           void *, uint64_t) = nullptr;
    int32_t (*resets_under_wait_)(uint64_t *) = nullptr;
};

// A device whose kernels complete when the test says so. Streams are FIFO queues of the runs
// whose kernels were launched on them; an event captures what its stream holds when it is
// recorded (and a stream that waits on an event takes on what the event captured), so a run's
// boundary completes exactly when every run queued ahead of it and the run itself have
// completed. Device memory is host memory. A completed run's device side has written its
// timing buffer and published its ok result record, stamped with its epoch.
//
// There is no time here: a bounded wait on work the test has not completed answers at once
// as one whose bound passed (507047). The cases only make such waits with a short bound
// (run_lane_wait with timeout 0); a long one means the lane waited for a run the case never
// completes, and fails the case loudly instead of hanging or poisoning the lane quietly.
class StubDevice final : public Device {
public:
    ~StubDevice() override {
        for (auto &[base, size] : memory_) {
            (void)size;
            std::free(reinterpret_cast<void *>(base));
        }
    }

    // The device finishes `run`: its kernels exit on their normal path.
    void complete(uint64_t run) {
        auto launched = launched_.find(run);
        CHECK(launched != launched_.end(), "the test completes run " + std::to_string(run) + ", which was launched");
        if (launched == launched_.end()) {
            return;
        }
        const Launched &l = launched->second;
        // Device start and end on the stub's clock, one microsecond a run.
        uint8_t timing[16];
        put_le(timing, clock_ns_, 8);
        put_le(timing + 8, clock_ns_ + 1000, 8);
        clock_ns_ += 1000;
        CHECK(write(l.timing, timing, sizeof timing), "the run's timing buffer is live device memory");
        // The ok record, its stamp (the epoch) last, as the runtime's AICPU side publishes it.
        uint8_t record[kRecordBytes] = {};
        put_le(record + kRecordVerdictAt, kRecordVerdictOk, 4);
        put_le(record, l.epoch, 8);
        CHECK(write(l.record, record, sizeof record), "the run's record region is live device memory");
        completed_.insert(run);
    }

    bool launched(uint64_t run) const { return launched_.count(run) != 0; }
    // Bounded waits (event or stream) that found their work not complete.
    uint64_t incomplete_waits() const { return incomplete_waits_; }
    // Stream synchronizes made: the device verdict, which a run with an ok record never needs.
    uint64_t stream_syncs() const { return stream_syncs_; }
    // What is still alive on the device.
    size_t live() const { return streams_.size() + events_.size() + memory_.size(); }

    int32_t bind() override { return 0; }
    int32_t create_stream(void **out) override {
        auto stream = std::make_unique<Queue>();
        *out = stream.get();
        streams_[*out] = std::move(stream);
        return 0;
    }
    int32_t destroy_stream(void *s) override { return streams_.erase(s) == 1 ? 0 : kParamInvalid; }
    int32_t destroy_stream_force(void *s) override { return destroy_stream(s); }
    int32_t create_event(void **out) override {
        auto event = std::make_unique<Queue>();
        *out = event.get();
        events_[*out] = std::move(event);
        return 0;
    }
    int32_t destroy_event(void *e) override { return events_.erase(e) == 1 ? 0 : kParamInvalid; }
    int32_t record_event(void *e, void *s) override {
        Queue *event = find(events_, e);
        Queue *stream = find(streams_, s);
        if (event == nullptr || stream == nullptr) {
            return kParamInvalid;
        }
        event->runs = pending(stream->runs);
        return 0;
    }
    int32_t stream_wait_event(void *s, void *e) override {
        Queue *event = find(events_, e);
        Queue *stream = find(streams_, s);
        if (event == nullptr || stream == nullptr) {
            return kParamInvalid;
        }
        stream->runs = pending(stream->runs);
        for (uint64_t run : pending(event->runs)) {
            stream->runs.push_back(run);
        }
        return 0;
    }
    int32_t query_event(void *e, bool *complete) override {
        Queue *event = find(events_, e);
        if (event == nullptr) {
            return kParamInvalid;
        }
        *complete = pending(event->runs).empty();
        return 0;
    }
    int32_t synchronize_event(void *e, int32_t timeout_ms) override {
        bool complete = false;
        int32_t code = query_event(e, &complete);
        if (code != 0 || complete) {
            return code;
        }
        return timed_out("event", timeout_ms, kEventSyncTimeout);
    }
    int32_t synchronize_stream(void *s, int32_t timeout_ms) override {
        ++stream_syncs_;
        Queue *stream = find(streams_, s);
        if (stream == nullptr) {
            return kParamInvalid;
        }
        return pending(stream->runs).empty() ? 0 : timed_out("stream", timeout_ms, kStreamSyncTimeout);
    }
    int32_t malloc_device(size_t size, void **out) override {
        *out = std::calloc(1, size);
        if (*out == nullptr) {
            return kParamInvalid;
        }
        memory_[reinterpret_cast<uintptr_t>(*out)] = size;
        return 0;
    }
    int32_t free_device(void *p) override {
        if (memory_.erase(reinterpret_cast<uintptr_t>(p)) != 1) {
            return kParamInvalid;
        }
        std::free(p);
        return 0;
    }
    int32_t copy_to_device(void *dst, const void *src, size_t len) override {
        return write(dst, src, len) ? 0 : kParamInvalid;
    }
    int32_t copy_from_device(void *dst, const void *src, size_t len) override {
        if (!inside(src, len)) {
            return kParamInvalid;
        }
        std::memcpy(dst, src, len);
        return 0;
    }
    int32_t launch(void *s, Engine engine, const RunLaneRunArgs &args, bool fault) override {
        Queue *stream = find(streams_, s);
        if (stream == nullptr || fault) {
            // The stub raises no device fault: the cases on the fake do.
            return kParamInvalid;
        }
        stream->runs = pending(stream->runs);
        stream->runs.push_back(args.info.run);
        if (engine == Engine::kAicpu) {
            launched_[args.info.run] = Launched{args.timing, args.record, args.epoch};
        }
        return 0;
    }
    int32_t reset() override {
        streams_.clear();
        events_.clear();
        for (auto &[base, size] : memory_) {
            (void)size;
            std::free(reinterpret_cast<void *>(base));
        }
        memory_.clear();
        return 0;
    }

private:
    // A stream's queued runs, or the runs an event captured at its record.
    struct Queue {
        std::vector<uint64_t> runs;
    };
    struct Launched {
        void *timing;
        void *record;
        uint64_t epoch;
    };
    // The longest bounded wait the stub answers at once on work not complete (see above).
    static constexpr int32_t kLongestShortWaitMs = 1000;

    static Queue *find(const std::map<void *, std::unique_ptr<Queue>> &handles, void *handle) {
        auto it = handles.find(handle);
        return it == handles.end() ? nullptr : it->second.get();
    }

    std::vector<uint64_t> pending(const std::vector<uint64_t> &runs) const {
        std::vector<uint64_t> left;
        for (uint64_t run : runs) {
            if (completed_.count(run) == 0) {
                left.push_back(run);
            }
        }
        return left;
    }

    int32_t timed_out(const char *what, int32_t timeout_ms, int32_t code) {
        ++incomplete_waits_;
        CHECK(timeout_ms <= kLongestShortWaitMs,
              std::string("the lane waited ") + std::to_string(timeout_ms) + " ms on a " + what +
                  " whose runs the case never completed (the stub has no time to let pass)");
        return code;
    }

    bool inside(const void *ptr, size_t len) const {
        const uintptr_t at = reinterpret_cast<uintptr_t>(ptr);
        auto it = memory_.upper_bound(at);
        if (it == memory_.begin()) {
            return false;
        }
        --it;
        return at >= it->first && at - it->first + len <= it->second;
    }

    bool write(void *dst, const void *src, size_t len) {
        if (!inside(dst, len)) {
            return false;
        }
        std::memcpy(dst, src, len);
        return true;
    }

    std::map<void *, std::unique_ptr<Queue>> streams_;
    std::map<void *, std::unique_ptr<Queue>> events_;
    std::map<uintptr_t, size_t> memory_;
    std::map<uint64_t, Launched> launched_;
    std::set<uint64_t> completed_;
    uint64_t clock_ns_ = 1000000;
    uint64_t incomplete_waits_ = 0;
    uint64_t stream_syncs_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The runtime's per-thread state: a trace context, as the runtime's STRACE_CONTEXT, set by each
// call it makes into the lane on its driving thread and cleared when the call returns.

class Runtime;

struct TraceContext {
    const Runtime *runtime;
    const char *call;  // the runtime's call into the lane: "submit", "wait", ...
};

thread_local const TraceContext *t_trace = nullptr;

class TraceScope {
public:
    TraceScope(const Runtime *runtime, const char *call) : context_{runtime, call}, outer_(t_trace) {
        t_trace = &context_;
    }
    ~TraceScope() { t_trace = outer_; }
    TraceScope(const TraceScope &) = delete;
    TraceScope &operator=(const TraceScope &) = delete;

private:
    TraceContext context_;
    const TraceContext *outer_;
};

// One thing the runtime saw the lane do: which callback or entry, for which run's tag, inside
// which of the runtime's calls. The cases read the order of events from it.
struct Seen {
    std::string call;
    std::string what;
    uint64_t tag;
};

// ---------------------------------------------------------------------------------------------
// The runtime: owns the device (through its layer), its stream pair, its per-thread state and
// the lane; drives the lane from one thread; recovers the device itself.

class Runtime {
public:
    struct Options {
        // 0 keeps the profile's (two on a2a3); 1 holds a successor until its predecessor
        // retired.
        uint8_t launch_depth = 0;
    };

    Runtime(Device &device, Options options) : device_(device), options_(options) {}
    ~Runtime() { shut_down(); }
    Runtime(const Runtime &) = delete;
    Runtime &operator=(const Runtime &) = delete;

    // Failures the runtime's work meets, by dispatch tag.
    std::set<uint64_t> failing_prepares;   // prepare returns 107000 (a bad argument)
    std::set<uint64_t> failing_launches;   // the AICore launch returns 107000
    std::set<uint64_t> faulting_kernels;   // the AICore kernel raises an AICore exception

    // Binds its thread, makes its own stream pair, and creates the lane on its device table.
    bool open() {
        TraceScope trace(this, "open");
        driving_thread_ = std::this_thread::get_id();
        CHECK(device_.bind() == 0, "the runtime binds its thread to its device");
        if (!make_own_streams()) {
            return false;
        }
        ops_ = device_table();
        RunLaneConfig config;
        RUN_LANE_INIT(config);
        CHECK_STATUS(run_lane_config_default(&config), RUN_LANE_STATUS_OK, "config_default");
        config.backend = RUN_LANE_BACKEND_DEVICE_OPS;
        config.device_ops = &ops_;
        // A table has no SoC to probe: the runtime knows its chip.
        config.profile = RUN_LANE_PROFILE_A2A3;
        config.device_id = 0;
        config.drive = RUN_LANE_DRIVE_CALLER;
        config.recovery = RUN_LANE_RECOVERY_RUNTIME;
        config.launch_depth = options_.launch_depth;
        // The runtime's op timeout (set on attach), below the lane's host wait.
        config.completion_timeout_ms = 10000;
        config.device_op_timeout_ms = 5000;
        config.check_invariants = true;
        config.runner.user = this;
        config.runner.prepare = &Runtime::prepare;
        config.runner.launch_aicore = &Runtime::launch_aicore;
        config.runner.launch_aicpu = &Runtime::launch_aicpu;
        config.runner.finalise = &Runtime::finalise;
        config.runner.on_outcome = &Runtime::on_outcome;
        config.runner.on_poison = &Runtime::on_poison;
        RunLaneStatus created = run_lane_create(&config, &lane_);
        CHECK_STATUS(created, RUN_LANE_STATUS_OK, "run_lane_create on the runtime's device table");
        return created == RUN_LANE_STATUS_OK;
    }

    // The runtime's calls into the lane: each sets the thread's trace context first.
    RunLaneStatus submit(uint64_t tag, uint64_t *run) {
        TraceScope trace(this, "submit");
        RunLaneSubmit request; RUN_LANE_INIT(request);
        request.has_tag = true;
        request.tag = tag;
        request.copy_back = true;
        return run_lane_submit(lane_, &request, run);
    }
    RunLaneStatus wait(uint64_t run, uint32_t timeout_ms, RunLaneOutcome *outcome) {
        TraceScope trace(this, "wait");
        return run_lane_wait(lane_, run, timeout_ms, outcome);
    }
    RunLaneStatus poll(RunLaneOutcome *outcome) {
        TraceScope trace(this, "poll");
        return run_lane_poll(lane_, outcome);
    }
    RunLaneStatus close(RunLaneCloseReport *report) {
        TraceScope trace(this, "close");
        return run_lane_close(lane_, report);
    }

    // run_lane_wait for a run that must end within the host wait: its outcome.
    RunLaneOutcome outcome_of(uint64_t run) {
        RunLaneOutcome outcome; RUN_LANE_INIT(outcome);
        CHECK_STATUS(wait(run, 10000, &outcome), RUN_LANE_STATUS_OK, "wait for run " + std::to_string(run));
        CHECK(outcome.id == run, "the wait returns the run waited for");
        return outcome;
    }

    // The runtime's own recovery after on_poison (L-24): it resets the device through its own
    // layer, makes its stream pair again (the reset destroyed it) and tells the lane.
    bool recover() {
        TraceScope trace(this, "recover");
        CHECK(holds_device_, "the runtime recovers only a device the lane handed over");
        CHECK(device_.reset() == 0, "the runtime's force reset of its device");
        // Every handle died with the device: the runtime's streams too. Never destroy them.
        own_streams_.clear();
        // The reset unbound every thread bound to the device (as on ACL): bind this one again
        // before making anything on it. The lane binds its own callers again itself.
        CHECK(device_.bind() == 0, "the runtime binds its thread again after its reset");
        if (!make_own_streams()) {
            return false;
        }
        holds_device_ = false;
        RunLaneStatus reopened = run_lane_device_reset(lane_);
        CHECK_STATUS(reopened, RUN_LANE_STATUS_OK, "run_lane_device_reset after the runtime's reset");
        return reopened == RUN_LANE_STATUS_OK;
    }

    RunLaneStatus device_reset_again() {
        TraceScope trace(this, "recover");
        return run_lane_device_reset(lane_);
    }

    // Destroys the lane (its final report), then the runtime's own streams, which the lane
    // gave back and never destroyed.
    RunLaneCloseReport shut_down() {
        RunLaneCloseReport report; RUN_LANE_INIT(report);
        if (lane_ != nullptr) {
            TraceScope trace(this, "destroy");
            CHECK_STATUS(run_lane_destroy_with_report(lane_, &report), RUN_LANE_STATUS_OK, "destroy");
            lane_ = nullptr;
        }
        for (OwnStream &own : own_streams_) {
            CHECK(!own.lent, "the lane gave back every stream it was lent");
            CHECK(device_.destroy_stream(own.stream) == 0,
                  "the runtime's own stream was still alive after the lane was done with it");
        }
        own_streams_.clear();
        return report;
    }

    // What the runtime saw.
    const std::vector<Seen> &seen() const { return seen_; }
    size_t count(const std::string &what, uint64_t tag) const {
        return static_cast<size_t>(std::count_if(seen_.begin(), seen_.end(), [&](const Seen &s) {
            return s.what == what && s.tag == tag;
        }));
    }
    // The position of the first `what` for `tag` in the order of events, or SIZE_MAX.
    size_t first(const std::string &what, uint64_t tag) const {
        for (size_t i = 0; i < seen_.size(); ++i) {
            if (seen_[i].what == what && seen_[i].tag == tag) {
                return i;
            }
        }
        return SIZE_MAX;
    }
    // The runtime call inside which the first `what` for `tag` ran, or "".
    std::string call_of(const std::string &what, uint64_t tag) const {
        size_t at = first(what, tag);
        return at == SIZE_MAX ? "" : seen_[at].call;
    }
    bool copied_back(uint64_t tag) const {
        auto it = copy_back_.find(tag);
        return it != copy_back_.end() && it->second;
    }
    uint64_t table_calls() const { return table_calls_; }
    int poisons() const { return poisons_; }
    const RunLaneRecoveryInfo &poison() const { return poison_; }
    uint64_t table_calls_at_poison() const { return table_calls_at_poison_; }
    bool holds_device() const { return holds_device_; }
    size_t streams_given_back() const { return given_back_; }
    bool is_own_stream(void *stream) const {
        return std::any_of(own_streams_.begin(), own_streams_.end(),
                           [&](const OwnStream &own) { return own.stream == stream; });
    }

private:
    struct OwnStream {
        void *stream;
        bool lent;
    };

    bool make_own_streams() {
        for (int i = 0; i < 2; ++i) {
            void *stream = nullptr;
            int32_t code = device_.create_stream(&stream);
            CHECK(code == 0 && stream != nullptr,
                  "the runtime makes its own stream pair: code " + std::to_string(code));
            if (code != 0) {
                return false;
            }
            own_streams_.push_back(OwnStream{stream, false});
        }
        return true;
    }

    // Every callback and every entry runs on the runtime's driving thread, inside one of its
    // calls into the lane: the thread's trace context is the runtime's. Notes what it saw.
    void observe(const char *what, uint64_t tag) {
        const bool ours = t_trace != nullptr && t_trace->runtime == this;
        CHECK(std::this_thread::get_id() == driving_thread_,
              std::string(what) + " ran on the runtime's driving thread (the caller drives the lane)");
        CHECK(ours, std::string(what) + " ran inside one of the runtime's calls, its trace context set");
        seen_.push_back(Seen{ours ? t_trace->call : "(no trace context)", what, tag});
    }

    // A table entry: counted, checked, and refused loudly while the runtime holds the device
    // (from on_poison until its own reset: the lane must make no device call then, L-24).
    static Runtime *entry(void *user, const char *name) {
        auto *rt = static_cast<Runtime *>(user);
        ++rt->table_calls_;
        const bool ours = t_trace != nullptr && t_trace->runtime == rt;
        CHECK(ours && std::this_thread::get_id() == rt->driving_thread_,
              std::string("the table's ") + name + " ran on the runtime's thread, inside one of its calls");
        CHECK(!rt->holds_device_,
              std::string("the lane called the table's ") + name + " after on_poison, before the runtime's reset");
        return rt->holds_device_ ? nullptr : rt;
    }

    // The table: every required entry and query_event (a caller's poll looks at a run without
    // waiting). No reset_device_force: the runtime owns recovery, so the lane never resets.
    RunLaneDeviceOps device_table() {
        RunLaneDeviceOps ops; RUN_LANE_INIT(ops);
        ops.user = this;
        ops.bind = [](void *u) {
            Runtime *rt = entry(u, "bind");
            return rt ? rt->device_.bind() : kDriverInternal;
        };
        ops.create_stream = [](void *u, void **out) {
            Runtime *rt = entry(u, "create_stream");
            return rt ? rt->lend_stream(out) : kDriverInternal;
        };
        ops.destroy_stream = [](void *u, void *s) {
            Runtime *rt = entry(u, "destroy_stream");
            return rt ? rt->take_back_stream(s, false) : kDriverInternal;
        };
        ops.destroy_stream_force = [](void *u, void *s) {
            Runtime *rt = entry(u, "destroy_stream_force");
            return rt ? rt->take_back_stream(s, true) : kDriverInternal;
        };
        ops.create_event = [](void *u, void **out) {
            Runtime *rt = entry(u, "create_event");
            return rt ? rt->device_.create_event(out) : kDriverInternal;
        };
        ops.destroy_event = [](void *u, void *e) {
            Runtime *rt = entry(u, "destroy_event");
            return rt ? rt->device_.destroy_event(e) : kDriverInternal;
        };
        ops.record_event = [](void *u, void *e, void *s) {
            Runtime *rt = entry(u, "record_event");
            return rt ? rt->device_.record_event(e, s) : kDriverInternal;
        };
        ops.stream_wait_event = [](void *u, void *s, void *e) {
            Runtime *rt = entry(u, "stream_wait_event");
            return rt ? rt->device_.stream_wait_event(s, e) : kDriverInternal;
        };
        ops.query_event = [](void *u, void *e, bool *complete) {
            Runtime *rt = entry(u, "query_event");
            return rt ? rt->device_.query_event(e, complete) : kDriverInternal;
        };
        ops.synchronize_event = [](void *u, void *e, int32_t ms) {
            Runtime *rt = entry(u, "synchronize_event");
            return rt ? rt->device_.synchronize_event(e, ms) : kDriverInternal;
        };
        ops.synchronize_stream = [](void *u, void *s, int32_t ms) {
            Runtime *rt = entry(u, "synchronize_stream");
            return rt ? rt->device_.synchronize_stream(s, ms) : kDriverInternal;
        };
        ops.malloc = [](void *u, size_t size, void **out) {
            Runtime *rt = entry(u, "malloc");
            return rt ? rt->device_.malloc_device(size, out) : kDriverInternal;
        };
        ops.free = [](void *u, void *p) {
            Runtime *rt = entry(u, "free");
            return rt ? rt->device_.free_device(p) : kDriverInternal;
        };
        ops.memcpy_to_device = [](void *u, void *dst, const void *src, size_t len) {
            Runtime *rt = entry(u, "memcpy_to_device");
            return rt ? rt->device_.copy_to_device(dst, src, len) : kDriverInternal;
        };
        ops.memcpy_from_device = [](void *u, void *dst, const void *src, size_t len) {
            Runtime *rt = entry(u, "memcpy_from_device");
            return rt ? rt->device_.copy_from_device(dst, src, len) : kDriverInternal;
        };
        return ops;
    }

    // create_stream: one of the runtime's own pair, not lent yet.
    int32_t lend_stream(void **out) {
        for (OwnStream &own : own_streams_) {
            if (!own.lent) {
                own.lent = true;
                *out = own.stream;
                return 0;
            }
        }
        // The lane holds the pair and asks for a third (only a probe would): the runtime has
        // no more to lend.
        return kFeatureNotSupported;
    }

    // destroy_stream: the runtime takes its stream back and keeps it. destroy_stream_force
    // replaces a stream that may hold a sticky code or stale AICore code (a publication): the
    // runtime destroys it and makes a fresh one of its own in its place.
    int32_t take_back_stream(void *stream, bool replace) {
        for (OwnStream &own : own_streams_) {
            if (own.stream != stream) {
                continue;
            }
            CHECK(own.lent, "the lane gives back only a stream it was lent");
            own.lent = false;
            ++given_back_;
            if (replace) {
                int32_t code = device_.destroy_stream_force(own.stream);
                if (code != 0) {
                    return code;
                }
                return device_.create_stream(&own.stream);
            }
            return 0;
        }
        CHECK(false, "the lane destroys only streams the runtime lent it");
        return kParamInvalid;
    }

    static Runtime *runner(void *user) { return static_cast<Runtime *>(user); }

    static int32_t prepare(void *user, const RunLaneRunInfo *run) {
        Runtime *rt = runner(user);
        rt->observe("prepare", run->tag);
        return rt->failing_prepares.count(run->tag) != 0 ? kParamInvalid : 0;
    }

    static int32_t launch_aicore(void *user, void *stream, const RunLaneRunArgs *args) {
        Runtime *rt = runner(user);
        rt->observe("launch_aicore", args->info.tag);
        CHECK(rt->is_own_stream(stream), "the AICore kernel goes on one of the runtime's own streams");
        if (rt->failing_launches.count(args->info.tag) != 0) {
            return kParamInvalid;
        }
        return rt->device_.launch(stream, Engine::kAicore, *args, rt->faulting_kernels.count(args->info.tag) != 0);
    }

    static int32_t launch_aicpu(void *user, void *stream, const RunLaneRunArgs *args) {
        Runtime *rt = runner(user);
        rt->observe("launch_aicpu", args->info.tag);
        CHECK(rt->is_own_stream(stream), "the AICPU kernel goes on one of the runtime's own streams");
        return rt->device_.launch(stream, Engine::kAicpu, *args, false);
    }

    static int32_t finalise(void *user, const RunLaneRunInfo *run, bool copy_back) {
        Runtime *rt = runner(user);
        rt->observe("finalise", run->tag);
        rt->copy_back_[run->tag] = copy_back;
        return 0;
    }

    static void on_outcome(void *user, const RunLaneOutcome *outcome) {
        runner(user)->observe("on_outcome", outcome->tag);
    }

    // The device is the runtime's to reset: from here the lane must make no device call.
    static void on_poison(void *user, const RunLaneRecoveryInfo *info) {
        Runtime *rt = runner(user);
        rt->observe("on_poison", 0);
        ++rt->poisons_;
        rt->poison_ = *info;
        rt->table_calls_at_poison_ = rt->table_calls_;
        rt->holds_device_ = true;
    }

    Device &device_;
    Options options_;
    RunLaneDeviceOps ops_ = {};  // device_table() fills it, size included
    RunLane *lane_ = nullptr;
    std::thread::id driving_thread_;
    std::vector<OwnStream> own_streams_;
    size_t given_back_ = 0;
    std::vector<Seen> seen_;
    std::map<uint64_t, bool> copy_back_;
    uint64_t table_calls_ = 0;
    int poisons_ = 0;
    RunLaneRecoveryInfo poison_ = {};
    uint64_t table_calls_at_poison_ = 0;
    bool holds_device_ = false;
};

// ---------------------------------------------------------------------------------------------
// The cases.

bool ok_run(const RunLaneOutcome &o, uint64_t tag) {
    CHECK(o.has_tag && o.tag == tag, "the outcome carries its tag " + std::to_string(tag));
    CHECK(o.verdict == RUN_LANE_VERDICT_OK, "run with tag " + std::to_string(tag) + " ends OK: " + o.failure_line);
    CHECK(o.has_timing && o.device_end_ns > o.device_start_ns, "its device start and end are known");
    return o.verdict == RUN_LANE_VERDICT_OK;
}

// Every run submitted, waited for and OK on the runtime's own streams, queued on its pair;
// its streams given back and destroyed by the runtime itself at shutdown.
void on_its_own_streams_the_caller_driving(AclDevice &device) {
    CHECK(device.set_op_timeout_ms(5000) == 0, "the runtime sets its op timeout on attach");
    Runtime rt(device, {});
    if (!rt.open()) {
        return;
    }
    // The documented loop: submit until FULL, then wait for the oldest.
    std::deque<std::pair<uint64_t, uint64_t>> in_flight;  // run, tag
    std::vector<RunLaneOutcome> outcomes;
    std::vector<uint64_t> tags;
    for (uint64_t tag = 1; tag <= 6;) {
        uint64_t run = 0;
        RunLaneStatus s = rt.submit(tag, &run);
        if (s == RUN_LANE_STATUS_FULL) {
            outcomes.push_back(rt.outcome_of(in_flight.front().first));
            tags.push_back(in_flight.front().second);
            in_flight.pop_front();
            continue;
        }
        CHECK_STATUS(s, RUN_LANE_STATUS_OK, "submit tag " + std::to_string(tag));
        if (s != RUN_LANE_STATUS_OK) {
            return;
        }
        in_flight.emplace_back(run, tag);
        ++tag;
    }
    while (!in_flight.empty()) {
        outcomes.push_back(rt.outcome_of(in_flight.front().first));
        tags.push_back(in_flight.front().second);
        in_flight.pop_front();
    }
    CHECK(outcomes.size() == 6, "six outcomes");
    for (size_t i = 0; i < outcomes.size(); ++i) {
        ok_run(outcomes[i], tags[i]);
        if (i > 0) {
            CHECK(outcomes[i].id > outcomes[i - 1].id, "outcomes in submission order");
            CHECK(outcomes[i].device_start_ns >= outcomes[i - 1].device_end_ns,
                  "each run ran on the device after its predecessor ended (one stream pair)");
        }
    }
    // L-18: run 2 was prepared and launched inside its own submit, before run 1's outcome.
    CHECK(rt.call_of("launch_aicpu", 2) == "submit", "run 2 launched inside its submit");
    CHECK(rt.first("launch_aicpu", 2) < rt.first("on_outcome", 1), "run 2 launched before run 1's outcome");
    for (uint64_t tag = 1; tag <= 6; ++tag) {
        CHECK(rt.count("finalise", tag) == 1 && rt.copied_back(tag), "each run finalised once, copied back");
    }
    RunLaneCloseReport report; RUN_LANE_INIT(report);
    CHECK_STATUS(rt.close(&report), RUN_LANE_STATUS_OK, "close");
    CHECK(!report.poisoned && !report.device_lost, "nothing poisoned");
    const uint64_t calls = rt.table_calls();
    RunLaneCloseReport last = rt.shut_down();
    CHECK(last.state == RUN_LANE_STATE_CLOSED && last.streams_left == 0, "the lane closed and left no stream");
    CHECK(rt.streams_given_back() == 2, "the lane gave the runtime's two streams back to its destroy entry");
    CHECK(calls > 0, "the lane made its device calls through the runtime's table");
}

// An AICore exception poisons; on_poison once; then no table entry until the runtime's own
// reset; submits UNUSABLE meanwhile; after run_lane_device_reset the next run is OK on the
// runtime's new streams.
void after_an_aicore_exception_the_runtime_recovers_its_device(AclDevice &device) {
    CHECK(device.set_op_timeout_ms(5000) == 0, "the runtime sets its op timeout on attach");
    Runtime rt(device, {});
    rt.faulting_kernels = {1};
    if (!rt.open()) {
        return;
    }
    uint64_t first = 0, second = 0;
    CHECK_STATUS(rt.submit(1, &first), RUN_LANE_STATUS_OK, "submit the faulting run");
    CHECK_STATUS(rt.submit(2, &second), RUN_LANE_STATUS_OK, "submit its successor");
    RunLaneOutcome faulted = rt.outcome_of(first);
    CHECK(faulted.verdict == RUN_LANE_VERDICT_FAILED && faulted.failure_class == RUN_LANE_CLASS_POISON,
          std::string("the faulted run poisons: ") + faulted.failure_line);
    CHECK(faulted.has_code && faulted.code == kAicoreException, "with the AICore exception's code");
    RunLaneOutcome taken_down = rt.outcome_of(second);
    CHECK(taken_down.verdict == RUN_LANE_VERDICT_POISONED && taken_down.origin == first,
          "its successor is poisoned by it");
    // Every item has its verdict: the lane told the runtime, once.
    RunLaneOutcome none; RUN_LANE_INIT(none);
    CHECK_STATUS(rt.poll(&none), RUN_LANE_STATUS_EMPTY, "nothing more to take");
    CHECK(rt.poisons() == 1, "on_poison once");
    CHECK(rt.first("on_poison", 0) > rt.first("on_outcome", 2), "on_poison after every item had its verdict");
    CHECK(rt.holds_device(), "the device is the runtime's to reset");
    CHECK(rt.poison().has_origin && rt.poison().origin == first, "on_poison names the origin run");
    CHECK(rt.poison().has_code && rt.poison().code == kAicoreException, "and its code");
    // Until the runtime says it reset the device, the lane makes no device call at all,
    // whatever the runtime asks of it.
    uint64_t refused = 0;
    CHECK_STATUS(rt.submit(3, &refused), RUN_LANE_STATUS_UNUSABLE, "a submit before the runtime's reset");
    CHECK(std::strstr(run_lane_last_error(), "device_reset") != nullptr, "the refusal says what reopens the lane");
    CHECK_STATUS(rt.poll(&none), RUN_LANE_STATUS_EMPTY, "a poll before the runtime's reset");
    CHECK(rt.table_calls() == rt.table_calls_at_poison(), "no table entry called after on_poison");
    // The runtime's recovery, through its own layer.
    if (!rt.recover()) {
        return;
    }
    CHECK_STATUS(rt.device_reset_again(), RUN_LANE_STATUS_UNUSABLE, "a second report: no reset is awaited");
    uint64_t third = 0;
    CHECK_STATUS(rt.submit(3, &third), RUN_LANE_STATUS_OK, "the lane reopened after the runtime's reset");
    ok_run(rt.outcome_of(third), 3);
    CHECK(rt.poisons() == 1, "still one on_poison");
    RunLaneCloseReport last = rt.shut_down();
    CHECK(last.state == RUN_LANE_STATE_CLOSED && last.streams_left == 0, "the lane closed and left no stream");
    CHECK(last.poisoned && last.poison_origin == first, "the close report names the poison");
}

// Depth two: run 2 is prepared and launched inside its own submit while run 1 has not
// completed, queued behind it on the pair; each gets its outcome once the test completes it.
void a_successor_is_prepared_and_queued_while_the_first_runs(StubDevice &stub) {
    Runtime rt(stub, {});
    if (!rt.open()) {
        return;
    }
    uint64_t a = 0, b = 0;
    CHECK_STATUS(rt.submit(1, &a), RUN_LANE_STATUS_OK, "submit run 1");
    CHECK(rt.call_of("launch_aicpu", 1) == "submit", "run 1 launched inside its submit");
    CHECK_STATUS(rt.submit(2, &b), RUN_LANE_STATUS_OK, "submit run 2 while run 1 runs");
    CHECK(rt.call_of("prepare", 2) == "submit", "run 2 prepared inside its submit");
    CHECK(rt.call_of("launch_aicore", 2) == "submit" && rt.call_of("launch_aicpu", 2) == "submit",
          "and launched there, queued behind run 1");
    RunLaneOutcome o; RUN_LANE_INIT(o);
    CHECK_STATUS(rt.poll(&o), RUN_LANE_STATUS_EMPTY, "run 1 has not completed");
    CHECK(rt.count("finalise", 1) == 0, "run 1 not finalised before it completed");
    stub.complete(a);
    ok_run(rt.outcome_of(a), 1);
    CHECK_STATUS(rt.poll(&o), RUN_LANE_STATUS_EMPTY, "run 2 has not completed");
    stub.complete(b);
    ok_run(rt.outcome_of(b), 2);
    CHECK(rt.first("launch_aicpu", 2) < rt.first("on_outcome", 1), "run 2 launched before run 1's outcome");
    CHECK(stub.stream_syncs() == 0, "an ok record decides: no stream synchronize");
    for (uint64_t tag : {1, 2}) {
        CHECK(rt.count("finalise", tag) == 1 && rt.copied_back(tag), "each run finalised once, copied back");
    }
}

// Depth one: run 2 is prepared while run 1 runs, and launched only after run 1 completed.
void at_depth_one_a_successor_is_prepared_while_the_first_runs_and_launched_after_it(StubDevice &stub) {
    Runtime::Options depth_one;
    depth_one.launch_depth = 1;
    Runtime rt(stub, depth_one);
    if (!rt.open()) {
        return;
    }
    uint64_t a = 0, b = 0;
    CHECK_STATUS(rt.submit(1, &a), RUN_LANE_STATUS_OK, "submit run 1");
    CHECK_STATUS(rt.submit(2, &b), RUN_LANE_STATUS_OK, "submit run 2 while run 1 runs");
    CHECK(rt.call_of("prepare", 2) == "submit", "run 2 prepared inside its submit, while run 1 runs");
    CHECK(rt.count("launch_aicore", 2) == 0, "run 2 not launched while run 1 runs");
    RunLaneOutcome o; RUN_LANE_INIT(o);
    CHECK_STATUS(rt.poll(&o), RUN_LANE_STATUS_EMPTY, "run 1 has not completed");
    CHECK(rt.count("launch_aicore", 2) == 0, "nor after a poll that found run 1 running");
    const size_t completed_at = rt.seen().size();
    stub.complete(a);
    ok_run(rt.outcome_of(a), 1);
    CHECK(rt.count("launch_aicore", 2) == 1 && rt.first("launch_aicore", 2) >= completed_at,
          "run 2 launched once run 1 completed");
    stub.complete(b);
    ok_run(rt.outcome_of(b), 2);
}

// Capacity two: a third submit is refused with FULL (nothing of it prepared) until the
// oldest has its outcome; then it is accepted and launched behind the second.
void capacity_two_refuses_a_third_submit_until_the_oldest_has_its_outcome(StubDevice &stub) {
    Runtime rt(stub, {});
    if (!rt.open()) {
        return;
    }
    uint64_t a = 0, b = 0, c = 0;
    CHECK_STATUS(rt.submit(1, &a), RUN_LANE_STATUS_OK, "submit run 1");
    CHECK_STATUS(rt.submit(2, &b), RUN_LANE_STATUS_OK, "submit run 2");
    CHECK_STATUS(rt.submit(3, &c), RUN_LANE_STATUS_FULL, "a third submit while both run");
    CHECK(std::strlen(run_lane_last_error()) > 0, "FULL says what to do");
    CHECK(rt.count("prepare", 3) == 0, "nothing of the refused run prepared");
    CHECK_STATUS(rt.submit(3, &c), RUN_LANE_STATUS_FULL, "still FULL while run 1 runs");
    stub.complete(a);
    ok_run(rt.outcome_of(a), 1);
    CHECK_STATUS(rt.submit(3, &c), RUN_LANE_STATUS_OK, "accepted once the oldest has its outcome");
    CHECK(rt.call_of("launch_aicpu", 3) == "submit", "and launched inside its submit, behind run 2");
    stub.complete(b);
    stub.complete(c);
    ok_run(rt.outcome_of(b), 2);
    ok_run(rt.outcome_of(c), 3);
}

// A prepare failure and an AICore launch failure (a bad argument, 107000) each fail their own
// run, run-only: the lane is not poisoned, and the runs around them are OK.
void a_prepare_failure_and_a_launch_failure_each_fail_only_their_run(StubDevice &stub) {
    Runtime rt(stub, {});
    rt.failing_prepares = {2};
    rt.failing_launches = {4};
    if (!rt.open()) {
        return;
    }
    uint64_t run[6] = {};
    CHECK_STATUS(rt.submit(1, &run[1]), RUN_LANE_STATUS_OK, "submit run 1");
    CHECK_STATUS(rt.submit(2, &run[2]), RUN_LANE_STATUS_OK, "submit run 2, whose prepare fails");
    stub.complete(run[1]);
    ok_run(rt.outcome_of(run[1]), 1);
    RunLaneOutcome prepare_failed = rt.outcome_of(run[2]);
    CHECK(prepare_failed.verdict == RUN_LANE_VERDICT_FAILED && prepare_failed.failure_class == RUN_LANE_CLASS_RUN_ONLY,
          std::string("a failed prepare fails its run only: ") + prepare_failed.failure_line);
    CHECK(prepare_failed.stage == RUN_LANE_STAGE_PREPARE && prepare_failed.has_code &&
              prepare_failed.code == kParamInvalid,
          "at the prepare, with its code");
    CHECK(rt.count("launch_aicore", 2) == 0, "a run whose prepare failed is never launched");
    CHECK_STATUS(rt.submit(3, &run[3]), RUN_LANE_STATUS_OK, "submit run 3");
    CHECK_STATUS(rt.submit(4, &run[4]), RUN_LANE_STATUS_OK, "submit run 4, whose AICore launch fails");
    stub.complete(run[3]);
    ok_run(rt.outcome_of(run[3]), 3);
    RunLaneOutcome launch_failed = rt.outcome_of(run[4]);
    CHECK(launch_failed.verdict == RUN_LANE_VERDICT_FAILED && launch_failed.failure_class == RUN_LANE_CLASS_RUN_ONLY,
          std::string("a failed AICore launch fails its run only: ") + launch_failed.failure_line);
    CHECK(launch_failed.stage == RUN_LANE_STAGE_AICORE_LAUNCH && launch_failed.has_code &&
              launch_failed.code == kParamInvalid,
          "at the AICore launch, with its code");
    CHECK(rt.count("launch_aicpu", 4) == 0, "no AICPU kernel behind a failed AICore launch");
    CHECK_STATUS(rt.submit(5, &run[5]), RUN_LANE_STATUS_OK, "the lane still admits");
    stub.complete(run[5]);
    ok_run(rt.outcome_of(run[5]), 5);
    CHECK(rt.poisons() == 0, "no poison");
    for (uint64_t tag = 1; tag <= 5; ++tag) {
        CHECK(rt.count("finalise", tag) == 1, "every prepared run finalised once, " + std::to_string(tag));
    }
    CHECK(!rt.copied_back(2) && !rt.copied_back(4), "no copy-back for the failed runs");
    RunLaneCloseReport report; RUN_LANE_INIT(report);
    CHECK_STATUS(rt.close(&report), RUN_LANE_STATUS_OK, "close");
    CHECK(!report.poisoned && !report.device_lost, "the close report has no poison");
}

// A wait whose timeout passes before the run completes returns TIMED_OUT after looking at the
// device, and leaves the run live: a later wait, once it completed, gets its OK outcome.
void an_expired_wait_leaves_the_run_live(StubDevice &stub) {
    Runtime rt(stub, {});
    if (!rt.open()) {
        return;
    }
    uint64_t a = 0;
    CHECK_STATUS(rt.submit(1, &a), RUN_LANE_STATUS_OK, "submit run 1");
    RunLaneOutcome o; RUN_LANE_INIT(o);
    CHECK_STATUS(rt.wait(a, 0, &o), RUN_LANE_STATUS_TIMED_OUT, "a wait that expires before run 1 completes");
    CHECK(stub.incomplete_waits() >= 1, "the wait looked at the device, which had not completed the run");
    CHECK_STATUS(rt.wait(a, 0, &o), RUN_LANE_STATUS_TIMED_OUT, "and again");
    CHECK_STATUS(rt.poll(&o), RUN_LANE_STATUS_EMPTY, "still running");
    CHECK(rt.count("finalise", 1) == 0 && rt.count("on_outcome", 1) == 0, "the run is live: no outcome, no finalise");
    stub.complete(a);
    ok_run(rt.outcome_of(a), 1);
    CHECK(rt.count("finalise", 1) == 1, "finalised once");
    CHECK(rt.poisons() == 0, "no poison");
}

// Close stops admission at once, lets the launched run finish OK, cancels the run held
// behind it (depth one: prepared, not launched), and leaves no stream.
void close_finishes_the_launched_run_cancels_the_held_one_and_refuses_new_submits(StubDevice &stub) {
    Runtime::Options depth_one;
    depth_one.launch_depth = 1;
    Runtime rt(stub, depth_one);
    if (!rt.open()) {
        return;
    }
    uint64_t a = 0, b = 0, c = 0;
    CHECK_STATUS(rt.submit(1, &a), RUN_LANE_STATUS_OK, "submit run 1");
    CHECK_STATUS(rt.submit(2, &b), RUN_LANE_STATUS_OK, "submit run 2, held behind run 1");
    RunLaneCloseReport report; RUN_LANE_INIT(report);
    CHECK_STATUS(rt.close(&report), RUN_LANE_STATUS_OK, "close");
    CHECK(report.state == RUN_LANE_STATE_CLOSING, "closing while run 1 runs");
    CHECK_STATUS(rt.submit(3, &c), RUN_LANE_STATUS_CLOSED, "a submit after close");
    CHECK(rt.count("prepare", 3) == 0, "nothing of it prepared");
    stub.complete(a);
    ok_run(rt.outcome_of(a), 1);
    RunLaneOutcome cancelled = rt.outcome_of(b);
    CHECK(cancelled.verdict == RUN_LANE_VERDICT_CANCELLED, "the held run is cancelled");
    CHECK(rt.count("launch_aicore", 2) == 0, "never launched");
    CHECK(rt.count("prepare", 2) == 1 && rt.count("finalise", 2) == 1 && !rt.copied_back(2),
          "it was prepared, so it is finalised once, without copy-back");
    RunLaneCloseReport last = rt.shut_down();
    CHECK(last.state == RUN_LANE_STATE_CLOSED && last.streams_left == 0 && !last.poisoned,
          "closed, no stream left, no poison");
}

struct Case {
    const char *name;
    void (*on_fake)(AclDevice &);
    void (*on_stub)(StubDevice &);
};

const Case kCases[] = {
    {"on_its_own_streams_the_caller_driving", on_its_own_streams_the_caller_driving, nullptr},
    {"after_an_aicore_exception_the_runtime_recovers_its_device",
     after_an_aicore_exception_the_runtime_recovers_its_device, nullptr},
    {"a_successor_is_prepared_and_queued_while_the_first_runs", nullptr,
     a_successor_is_prepared_and_queued_while_the_first_runs},
    {"at_depth_one_a_successor_is_prepared_while_the_first_runs_and_launched_after_it", nullptr,
     at_depth_one_a_successor_is_prepared_while_the_first_runs_and_launched_after_it},
    {"capacity_two_refuses_a_third_submit_until_the_oldest_has_its_outcome", nullptr,
     capacity_two_refuses_a_third_submit_until_the_oldest_has_its_outcome},
    {"a_prepare_failure_and_a_launch_failure_each_fail_only_their_run", nullptr,
     a_prepare_failure_and_a_launch_failure_each_fail_only_their_run},
    {"an_expired_wait_leaves_the_run_live", nullptr, an_expired_wait_leaves_the_run_live},
    {"close_finishes_the_launched_run_cancels_the_held_one_and_refuses_new_submits", nullptr,
     close_finishes_the_launched_run_cancels_the_held_one_and_refuses_new_submits},
};

// Runs one case on a fresh device; false when its device could not be made.
bool run_case(const Case &c, void *fake) {
    g_case = c.name;
    std::printf("case %s\n", c.name);
    const int before = g_failures;
    if (c.on_fake != nullptr) {
        if (fake == nullptr) {
            std::printf("FAILED %s: needs the fake libascendcl's path\n", c.name);
            ++g_failures;
            return false;
        }
        AclDevice device(fake, 0);
        if (!device.loaded()) {
            ++g_failures;
            return false;
        }
        c.on_fake(device);
        // SPEC L-20, over the whole case: no force reset under a device wait.
        uint64_t under_wait = device.resets_under_wait();
        std::fprintf(stderr, "embedded runtime: %s: resets_under_wait %llu\n", c.name,
                     static_cast<unsigned long long>(under_wait));
        CHECK(under_wait == 0, "no force reset was made while a thread was inside a device wait");
    } else {
        StubDevice stub;
        c.on_stub(stub);
        CHECK(stub.live() == 0, "the lane and the runtime released every stream, event and allocation");
    }
    if (g_failures == before) {
        std::printf("case %s: ok\n", c.name);
    }
    std::fflush(stdout);
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s CASE|all [FAKE_LIB]\n", argv[0]);
        return 2;
    }
    if (run_lane_abi_version() != RUN_LANE_ABI_VERSION) {
        std::fprintf(stderr, "the library's ABI %u is not the header's %u\n", run_lane_abi_version(),
                     RUN_LANE_ABI_VERSION);
        return 2;
    }
    void *fake = nullptr;
    if (argc >= 3) {
        fake = dlopen(argv[2], RTLD_NOW);
        if (fake == nullptr) {
            std::fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
            return 2;
        }
    }
    const std::string wanted = argv[1];
    int ran = 0;
    for (const Case &c : kCases) {
        if (wanted == "all" || wanted == c.name) {
            run_case(c, fake);
            ++ran;
        }
    }
    if (ran == 0) {
        std::fprintf(stderr, "no case named %s\n", wanted.c_str());
        return 2;
    }
    if (g_failures != 0) {
        std::printf("embedded runtime: %d checks failed\n", g_failures);
        return 1;
    }
    std::printf("embedded runtime: ok\n");
    return 0;
}
