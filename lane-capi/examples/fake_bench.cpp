// The runner loops an onboard runner uses, measured through the C ABI (run_lane.h and the
// static library, release build) on the fake libascendcl, in real time.
//
// Usage: fake_bench FAKE_LIB RUNS SKIP KERNEL_US[,KERNEL_US...]
//
// For each kernel length it measures, in one process:
//   floor   the fake's own floor: RUNS kernels already queued on one stream, back to back;
//   a2a3    the lane at launch depth two (run N+1 queued while N executes), and
//   a5      the lane at launch depth one (N+1 launched after N retired),
// each driven by three loops:
//   a  "kept full": runs submitted until FULL up front, then each next run submitted from the
//      outcome callback, on the lane thread, the moment a slot frees (no thread hop);
//   b  the documented loop: submit until FULL, then wait for the oldest outcome, repeat;
//   c  a successor submitted a third of a kernel after its predecessor's outcome.
// From each run's own timing buffer (device start and end, written by the fake's AICPU
// kernel) it takes the inter-run device gaps, the first SKIP runs skipped, and prints one line
// per measurement:
//   floor KERNEL_US GAPS MEDIAN_NS P99_NS
//   arm KERNEL_US LOOP PROFILE RUNS OK MEDIAN_NS P99_NS
// `cargo xtask fake-bench` builds it, runs it and writes the table into docs/performance.md.
// Exits 1 (with the reason on stderr) when a call fails or a run does not end OK.

#include "run_lane.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

// The fake's kernel launch (runlanefake_launch): stream, engine (0 AICore, 1 AICPU), duration,
// outcome (0 ok), timing buffer, status header, header bytes and length.
using FakeLaunch = int32_t (*)(void *, uint32_t, uint64_t, uint32_t, void *, void *, const uint8_t *, size_t);
// The ACL calls the floor makes (acl-fake implements them as libascendcl does).
using SetDevice = int32_t (*)(int32_t);
using CreateStream = int32_t (*)(void **, uint32_t, uint32_t);
using DestroyStream = int32_t (*)(void *);
using Malloc = int32_t (*)(void **, size_t, int32_t);
using Free = int32_t (*)(void *);
using Memcpy = int32_t (*)(void *, size_t, const void *, size_t, int32_t);
using CreateEvent = int32_t (*)(void **, uint32_t);
using RecordEvent = int32_t (*)(void *, void *);
using SyncEvent = int32_t (*)(void *, int32_t);
using DestroyEvent = int32_t (*)(void *);

constexpr uint32_t kAicore = 0;
constexpr uint32_t kAicpu = 1;
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
    FakeLaunch launch = nullptr;
    uint64_t kernel_ns = 0;
    std::mutex mutex;
    std::condition_variable changed;
    RunLane *refill = nullptr;  // loop (a): submit from on_outcome while `left` > 0
    int left = 0;
    int seen = 0;
    bool refused = false;
};

int32_t launch_aicore(void *user, void *stream, const RunLaneRunArgs *) {
    auto *b = static_cast<Bench *>(user);
    return b->launch(stream, kAicore, b->kernel_ns, 0, nullptr, nullptr, nullptr, 0);
}

int32_t launch_aicpu(void *user, void *stream, const RunLaneRunArgs *args) {
    auto *b = static_cast<Bench *>(user);
    return b->launch(stream, kAicpu, b->kernel_ns, 0, args->timing, nullptr, nullptr, 0);
}

RunLaneStatus submit(RunLane *lane, uint64_t *run) {
    RunLaneSubmit request = {};
    return run_lane_submit(lane, &request, run);
}

void on_outcome(void *user, const RunLaneOutcome *) {
    auto *b = static_cast<Bench *>(user);
    std::lock_guard<std::mutex> lock(b->mutex);
    ++b->seen;
    if (b->refill != nullptr && b->left > 0) {
        uint64_t run = 0;
        // Re-entering submit from a callback is allowed; the slot this outcome freed takes it.
        if (submit(b->refill, &run) == RUN_LANE_STATUS_OK) {
            --b->left;
        } else {
            b->refused = true;
        }
    }
    b->changed.notify_all();
}

RunLaneOutcome wait(RunLane *lane, uint64_t id) {
    RunLaneOutcome outcome;
    if (run_lane_wait(lane, id, 60000, &outcome) != RUN_LANE_STATUS_OK) {
        fail("wait for run " + std::to_string(id));
    }
    return outcome;
}

// One arm: `runs` runs of the bench's kernel through `loop` on `profile`; its outcomes in
// submission order.
std::vector<RunLaneOutcome> arm(Bench &bench, const char *fake, uint32_t profile, char loop, int runs) {
    RunLaneConfig config;
    if (run_lane_config_default(&config) != RUN_LANE_STATUS_OK) {
        fail("config_default");
    }
    config.backend = RUN_LANE_BACKEND_ACL;
    config.acl_library_path = fake;
    config.profile = profile;
    config.completion_timeout_ms = 10000;
    config.device_op_timeout_ms = 5000;
    config.runner.user = &bench;
    config.runner.launch_aicore = launch_aicore;
    config.runner.launch_aicpu = launch_aicpu;
    config.runner.on_outcome = on_outcome;
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
    }
    std::vector<RunLaneOutcome> outcomes;
    std::deque<uint64_t> in_flight;
    int submitted = 0;
    // Every loop starts by filling the lane.
    auto fill = [&]() {
        while (submitted < runs) {
            uint64_t run = 0;
            RunLaneStatus status = submit(lane, &run);
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
            RunLaneStatus status = submit(lane, &run);
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

// The device gaps between consecutive runs after `skip`, from their timing buffers.
std::vector<uint64_t> gaps(const std::vector<RunLaneOutcome> &outcomes, int skip, int *ok) {
    std::vector<uint64_t> out;
    *ok = 0;
    for (size_t i = 0; i < outcomes.size(); ++i) {
        const RunLaneOutcome &o = outcomes[i];
        if (o.verdict != RUN_LANE_VERDICT_OK || !o.has_timing) {
            fail("run " + std::to_string(o.id) + " did not end OK: " + o.failure_line);
        }
        ++*ok;
        if (i > 0 && static_cast<int>(i) > skip) {
            const RunLaneOutcome &p = outcomes[i - 1];
            out.push_back(o.device_start_ns > p.device_end_ns ? o.device_start_ns - p.device_end_ns : 0);
        }
    }
    return out;
}

// The fake's floor: `runs` kernels queued back to back on one stream before the first ends.
std::vector<uint64_t> floor_gaps(void *fake, FakeLaunch launch, uint64_t kernel_ns, int runs, int skip) {
    auto set_device = symbol<SetDevice>(fake, "aclrtSetDevice");
    auto create_stream = symbol<CreateStream>(fake, "aclrtCreateStreamWithConfig");
    auto destroy_stream = symbol<DestroyStream>(fake, "aclrtDestroyStream");
    auto malloc_device = symbol<Malloc>(fake, "aclrtMalloc");
    auto free_device = symbol<Free>(fake, "aclrtFree");
    auto memcpy_sync = symbol<Memcpy>(fake, "aclrtMemcpy");
    auto create_event = symbol<CreateEvent>(fake, "aclrtCreateEventExWithFlag");
    auto record_event = symbol<RecordEvent>(fake, "aclrtRecordEvent");
    auto sync_event = symbol<SyncEvent>(fake, "aclrtSynchronizeEventWithTimeout");
    auto destroy_event = symbol<DestroyEvent>(fake, "aclrtDestroyEvent");
    void *stream = nullptr;
    void *timing = nullptr;
    void *event = nullptr;
    const size_t bytes = 16 * static_cast<size_t>(runs);
    if (set_device(0) != 0 || create_stream(&stream, 0, 0) != 0 || malloc_device(&timing, bytes, 0) != 0 ||
        create_event(&event, kEventSync) != 0) {
        fail("the floor's stream, buffer or event");
    }
    for (int i = 0; i < runs; ++i) {
        void *slot = static_cast<char *>(timing) + 16 * i;
        if (launch(stream, kAicpu, kernel_ns, 0, slot, nullptr, nullptr, 0) != 0) {
            fail("a floor kernel");
        }
    }
    std::vector<uint64_t> times(2 * static_cast<size_t>(runs));
    if (record_event(event, stream) != 0 || sync_event(event, 600000) != 0 ||
        memcpy_sync(times.data(), bytes, timing, bytes, kMemcpyDeviceToHost) != 0) {
        fail("the floor's wait or read");
    }
    destroy_event(event);
    free_device(timing);
    destroy_stream(stream);
    std::vector<uint64_t> out;
    for (int i = skip + 1; i < runs; ++i) {
        uint64_t start = times[2 * i];
        uint64_t end = times[2 * (i - 1) + 1];
        out.push_back(start > end ? start - end : 0);
    }
    return out;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: fake_bench FAKE_LIB RUNS SKIP KERNEL_US[,KERNEL_US...]\n");
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
    bench.launch = symbol<FakeLaunch>(fake, "runlanefake_launch");
    for (uint64_t us : kernels_us) {
        bench.kernel_ns = us * 1000;
        auto floor = spread(floor_gaps(fake, bench.launch, bench.kernel_ns, runs, skip));
        std::printf("floor %llu %d %llu %llu\n", (unsigned long long)us, runs - skip - 1,
                    (unsigned long long)floor.first, (unsigned long long)floor.second);
        std::fflush(stdout);
        for (char loop : {'a', 'b', 'c'}) {
            for (uint32_t profile : {static_cast<uint32_t>(RUN_LANE_PROFILE_A2A3), static_cast<uint32_t>(RUN_LANE_PROFILE_A5)}) {
                int ok = 0;
                auto measured = spread(gaps(arm(bench, fake_path, profile, loop, runs), skip, &ok));
                std::printf("arm %llu %c %s %d %d %llu %llu\n", (unsigned long long)us, loop,
                            profile == RUN_LANE_PROFILE_A2A3 ? "a2a3" : "a5", runs, ok,
                            (unsigned long long)measured.first, (unsigned long long)measured.second);
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
