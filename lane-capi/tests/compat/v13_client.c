/* A client written against run_lane.h as ABI 13 first released it (run_lane_v13.h, a copy
 * that is never regenerated), linked with the current library by tests/compat.rs. It must
 * keep compiling and passing for as long as the library's major is 13: a change that breaks
 * it breaks every client of ABI 13. Prints the sizes its header declares, then "compat ok". */
#include "run_lane_v13.h"

#include <stdio.h>
#include <string.h>

#define CHECK(cond, what)                                                               \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "FAILED: %s (line %d; last error: %s)\n", what, __LINE__,   \
                    run_lane_last_error());                                             \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

/* A struct followed by canary bytes: the library must write only the struct's `size`. */
struct OutcomeWithCanary {
    RunLaneOutcome outcome;
    unsigned char canary[64];
};

struct ReportWithCanary {
    RunLaneCloseReport report;
    unsigned char canary[64];
};

static int canary_intact(const unsigned char *canary) {
    for (int i = 0; i < 64; i++) {
        if (canary[i] != 0xA5) {
            return 0;
        }
    }
    return 1;
}

int main(void) {
    printf("sizes RunLaneConfig=%zu RunLaneSubmit=%zu RunLaneDeviceOps=%zu RunLaneOutcome=%zu "
           "RunLaneCloseReport=%zu RunLaneRunStatus=%zu RunLaneNoticeMonitorReport=%zu\n",
           sizeof(RunLaneConfig), sizeof(RunLaneSubmit), sizeof(RunLaneDeviceOps),
           sizeof(RunLaneOutcome), sizeof(RunLaneCloseReport), sizeof(RunLaneRunStatus),
           sizeof(RunLaneNoticeMonitorReport));
    CHECK(run_lane_abi_version() == RUN_LANE_ABI_VERSION, "the library's major is the header's");

    /* A zeroed outcome does not read as success. */
    RunLaneOutcome zeroed;
    memset(&zeroed, 0, sizeof zeroed);
    CHECK(zeroed.verdict != RUN_LANE_VERDICT_OK && zeroed.verdict == RUN_LANE_VERDICT_NONE,
          "a zeroed outcome's verdict is NONE");

    RunLaneConfig config;
    RUN_LANE_INIT(config);
    CHECK(run_lane_config_default(&config) == RUN_LANE_STATUS_OK, "run_lane_config_default");
    CHECK(config.size == sizeof config, "the default keeps the caller's size");
    config.backend = RUN_LANE_BACKEND_SIM;
    RunLane *lane = NULL;
    CHECK(run_lane_create(&config, &lane) == RUN_LANE_STATUS_OK, "run_lane_create");

    /* A run, taken by a wait into an outcome followed by canaries. */
    RunLaneSubmit submit;
    RUN_LANE_INIT(submit);
    submit.has_tag = true;
    submit.tag = 41;
    uint64_t run = 0;
    CHECK(run_lane_submit(lane, &submit, &run) == RUN_LANE_STATUS_OK, "submit");
    struct OutcomeWithCanary taken;
    memset(taken.canary, 0xA5, sizeof taken.canary);
    RUN_LANE_INIT(taken.outcome);
    CHECK(run_lane_wait(lane, run, 10000, &taken.outcome) == RUN_LANE_STATUS_OK, "wait");
    CHECK(taken.outcome.verdict == RUN_LANE_VERDICT_OK, "the run ends OK");
    CHECK(taken.outcome.id == run && taken.outcome.has_tag && taken.outcome.tag == 41, "its id and tag");
    CHECK(taken.outcome.size == sizeof(RunLaneOutcome), "the outcome's size stays the caller's");
    CHECK(canary_intact(taken.canary), "nothing written past the outcome's size");

    /* Nothing ready: EMPTY, and the outcome does not read as success. */
    RunLaneOutcome none;
    RUN_LANE_INIT(none);
    none.verdict = RUN_LANE_VERDICT_OK;
    CHECK(run_lane_poll(lane, &none) == RUN_LANE_STATUS_EMPTY, "poll is EMPTY");
    CHECK(none.verdict == RUN_LANE_VERDICT_NONE && none.id == 0, "an EMPTY poll writes verdict NONE");

    /* A size below ABI 13's is refused, naming the struct. */
    RunLaneSubmit short_submit;
    RUN_LANE_INIT(short_submit);
    short_submit.size = 4;
    CHECK(run_lane_submit(lane, &short_submit, &run) == RUN_LANE_STATUS_ABI_MISMATCH, "a short submit is refused");
    CHECK(strstr(run_lane_last_error(), "RunLaneSubmit") != NULL, "the refusal names the struct");

    /* Where a run stands, and the notice monitor's report. */
    uint64_t left = 0;
    CHECK(run_lane_submit(lane, &submit, &left) == RUN_LANE_STATUS_OK, "a second submit");
    RunLaneRunStatus status;
    RUN_LANE_INIT(status);
    CHECK(run_lane_run_state(lane, left, &status) == RUN_LANE_STATUS_OK, "run_state");
    RunLaneNoticeMonitorReport monitor;
    RUN_LANE_INIT(monitor);
    CHECK(run_lane_notice_monitor(lane, &monitor) == RUN_LANE_STATUS_OK, "notice monitor");
    CHECK(monitor.state == RUN_LANE_NOTICE_MONITOR_NOT_ASKED, "the simulator installs none");

    /* The second run's outcome is never taken: the destroy's report counts it. */
    struct ReportWithCanary last;
    memset(last.canary, 0xA5, sizeof last.canary);
    RUN_LANE_INIT(last.report);
    CHECK(run_lane_destroy_with_report(lane, &last.report) == RUN_LANE_STATUS_OK, "destroy");
    CHECK(last.report.state == RUN_LANE_STATE_CLOSED, "closed");
    CHECK(last.report.untaken == 1 && last.report.untaken_ids[0] == left, "one outcome never taken, named");
    CHECK(canary_intact(last.canary), "nothing written past the report's size");
    printf("compat ok\n");
    return 0;
}
