//! The runner loops through the C ABI on the fake libascendcl: `cargo xtask fake-bench`'s
//! second part. It builds `lane-capi/examples/fake_bench.cpp` against the release static
//! library (`librun_lane.a`, linked with rustc's `native-static-libs`, as the install tree's
//! `run_lane.pc` links it), runs it on the release fake, and writes its section of
//! docs/performance.md: per kernel length, the fake's floor and each loop's median and p99
//! device gap at launch depth two (`depth2`) beside depth one (`depth1`), with the targets checked; then
//! its `--lanes` mode: sixteen lanes at once, healthy and beside a hung and a poisoned device,
//! the fourteen's median gap in each case against the run-to-run noise, and what the process
//! of sixteen lanes costs in threads and resident memory.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{dist, project_root};

/// Where the section starts and ends in docs/performance.md.
pub(crate) const BEGIN: &str = "<!-- capi-bench: begin (written by `cargo xtask fake-bench`) -->";
/// The section's end marker.
pub(crate) const END: &str = "<!-- capi-bench: end -->";
/// Kernel lengths measured (us).
const KERNELS_US: [u64; 3] = [300, 1_000, 3_000];
/// Runs per arm by default, and runs skipped at the start of each.
const RUNS: u32 = 300;
const SKIP: u32 = 20;
/// The sixteen-lane mode: runs per lane by default (enough for device 14's lane to hang,
/// recover and hang again a few times at the 200 ms op timeout), its kernel length (us),
/// and how often each case runs (the spread of its medians is the noise).
const LANES_RUNS: u32 = 1_000;
const LANES_KERNEL_US: u64 = 1_000;
const LANES_REPEATS: u32 = 5;
/// The lanes of the `--lanes` mode, and the healthy ones measured beside the faulty two.
const LANES: u64 = 16;
const FOURTEEN: u32 = 14;

/// One measured arm: a loop on a profile at one kernel length.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Arm {
    pub(crate) kernel_us: u64,
    pub(crate) loop_name: char,
    pub(crate) profile: String,
    pub(crate) runs: u32,
    pub(crate) ok: u32,
    pub(crate) median_ns: u64,
    pub(crate) p99_ns: u64,
}

/// The fake's floor at one kernel length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Floor {
    pub(crate) kernel_us: u64,
    pub(crate) gaps: u32,
    pub(crate) median_ns: u64,
    pub(crate) p99_ns: u64,
}

/// The faulty two of a `lanes faulty` line: each lane's runs, `Ok` outcomes and poisons
/// (runs that failed and poisoned the lane).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FaultyTwo {
    pub(crate) hung: [u32; 3],
    pub(crate) poisoned: [u32; 3],
}

/// One case of the sixteen-lane mode: the fourteen's gaps (devices 0 to 13), and with
/// `faulty` the outcomes of devices 14 (hung) and 15 (poisoned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LanesCase {
    pub(crate) repeat: u32,
    pub(crate) kernel_us: u64,
    pub(crate) runs: u32,
    pub(crate) ok: u32,
    pub(crate) median_ns: u64,
    pub(crate) p99_ns: u64,
    pub(crate) faulty: Option<FaultyTwo>,
}

/// What the process of sixteen lanes cost (/proc/self/status): threads and VmRSS (KiB)
/// before the lanes, once created, once they ran, after destroy; threads named `lane*` and
/// `fake-acl-*` once they ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LanesCost {
    pub(crate) threads: [u64; 4],
    pub(crate) rss_kib: [u64; 4],
    pub(crate) lane_threads: u64,
    pub(crate) fake_stream_threads: u64,
}

/// At depth two, from a run's submit to its launch's return (the `launch_aicpu` callback),
/// for one loop at one kernel length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Latency {
    pub(crate) kernel_us: u64,
    pub(crate) loop_name: char,
    pub(crate) median_ns: u64,
    pub(crate) p99_ns: u64,
}

/// What the bench printed.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Measured {
    pub(crate) floors: Vec<Floor>,
    pub(crate) arms: Vec<Arm>,
    pub(crate) latencies: Vec<Latency>,
    pub(crate) lanes: Vec<LanesCase>,
    pub(crate) lanes_cost: Option<LanesCost>,
}

/// Parses the bench's output lines (`floor ...` and `arm ...`; see fake_bench.cpp).
pub(crate) fn parse(output: &str) -> Result<Measured, String> {
    let mut measured = Measured::default();
    for line in output.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| -> Result<u64, String> {
            fields
                .get(i)
                .and_then(|f| f.parse().ok())
                .ok_or_else(|| format!("fake_bench printed `{line}`: field {i} is not a number"))
        };
        let count = |i: usize| num(i).and_then(|n| u32::try_from(n).map_err(|e| e.to_string()));
        match fields.first() {
            Some(&"floor") if fields.len() == 5 => measured.floors.push(Floor {
                kernel_us: num(1)?,
                gaps: count(2)?,
                median_ns: num(3)?,
                p99_ns: num(4)?,
            }),
            Some(&"latency") if fields.len() == 5 => measured.latencies.push(Latency {
                kernel_us: num(1)?,
                loop_name: fields[2].chars().next().unwrap_or('?'),
                median_ns: num(3)?,
                p99_ns: num(4)?,
            }),
            Some(&"arm") if fields.len() == 8 => measured.arms.push(Arm {
                kernel_us: num(1)?,
                loop_name: fields[2].chars().next().unwrap_or('?'),
                profile: fields[3].to_owned(),
                runs: count(4)?,
                ok: count(5)?,
                median_ns: num(6)?,
                p99_ns: num(7)?,
            }),
            Some(&"lanes") if fields.len() == 8 || fields.len() == 14 => {
                let faulty = match (fields[1], fields.len()) {
                    ("healthy", 8) => None,
                    ("faulty", 14) => Some(FaultyTwo {
                        hung: [count(8)?, count(9)?, count(10)?],
                        poisoned: [count(11)?, count(12)?, count(13)?],
                    }),
                    _ => {
                        return Err(format!(
                            "fake_bench printed `{line}`: not a healthy or faulty case"
                        ));
                    }
                };
                measured.lanes.push(LanesCase {
                    repeat: count(2)?,
                    kernel_us: num(3)?,
                    runs: count(4)?,
                    ok: count(5)?,
                    median_ns: num(6)?,
                    p99_ns: num(7)?,
                    faulty,
                });
            }
            Some(&"lanes-cost") if fields.len() == 11 => {
                measured.lanes_cost = Some(LanesCost {
                    threads: [num(1)?, num(2)?, num(3)?, num(4)?],
                    rss_kib: [num(5)?, num(6)?, num(7)?, num(8)?],
                    lane_threads: num(9)?,
                    fake_stream_threads: num(10)?,
                });
            }
            _ => {
                return Err(format!(
                    "fake_bench printed a line it never prints: `{line}`"
                ));
            }
        }
    }
    Ok(measured)
}

/// The median gaps of one kind of case over its repeats: mean, lowest, highest (ns).
fn over_repeats(cases: &[&LanesCase]) -> Option<(f64, u64, u64)> {
    let medians: Vec<u64> = cases.iter().map(|c| c.median_ns).collect();
    let (min, max) = (*medians.iter().min()?, *medians.iter().max()?);
    Some((
        medians.iter().sum::<u64>() as f64 / medians.len() as f64,
        min,
        max,
    ))
}

/// The healthy and the faulty cases' medians against the noise: (healthy mean, faulty mean,
/// noise, within), the noise being the larger spread (highest minus lowest median) of one
/// case over its repeats, and `within` whether the means differ by at most that.
pub(crate) fn lanes_verdict(lanes: &[LanesCase]) -> Option<(f64, f64, f64, bool)> {
    let healthy: Vec<&LanesCase> = lanes.iter().filter(|c| c.faulty.is_none()).collect();
    let faulty: Vec<&LanesCase> = lanes.iter().filter(|c| c.faulty.is_some()).collect();
    let (h, h_min, h_max) = over_repeats(&healthy)?;
    let (f, f_min, f_max) = over_repeats(&faulty)?;
    let noise = (h_max - h_min).max(f_max - f_min) as f64;
    Some((h, f, noise, (f - h).abs() <= noise))
}

fn kib_to_mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// The sixteen-lane part of the section (empty when the bench printed none).
fn lanes_markdown(measured: &Measured) -> String {
    let mut out = String::new();
    let Some(first) = measured.lanes.first() else {
        return out;
    };
    let (runs, kernel_us) = (first.runs, first.kernel_us);
    let _ = writeln!(
        out,
        "### Sixteen lanes at once, beside a hung and a poisoned device\n\n\
         `fake_bench --lanes`: sixteen lanes in one process, one per device of the fake (ids 0 \
         to 15), each driven from its own thread with loop (b), {runs} runs of {kernel} kernels \
         per lane, at launch depth two with a 200 ms device op timeout. Two cases, alternating, \
         each repeated: **healthy 16**, every lane healthy; **14 beside the faulty 2**, device \
         14's AICore kernels all hang (each of its runs ends at the op timeout with 507014 and \
         poisons the lane, which recovers the device and hangs on its next run again, until the \
         fourteen are done) and device 15 has one AICore exception (run {poison} fails with \
         507015 and poisons; the lane recovers and runs on). The gap figures pool the gaps of \
         devices 0 to 13 in both cases (the first {SKIP} runs of each lane skipped), so the two \
         cases compare the same fourteen lanes.\n",
        kernel = kernel_label(kernel_us),
        poison = runs / 3 + 1,
    );
    let _ = writeln!(
        out,
        "| case | repeat | devices 0-13: median gap (us) | p99 (us) | devices 0-13: runs Ok | device 14 (hung) | device 15 (poisoned) |\n\
         |:---|---:|---:|---:|---:|:---|:---|"
    );
    for case in &measured.lanes {
        let expected = case.runs * FOURTEEN;
        let (name, hung, poisoned) = match case.faulty {
            None => (
                "healthy 16",
                format!("{} runs, all Ok", case.runs),
                format!("{} runs, all Ok", case.runs),
            ),
            Some(two) => (
                "14 beside the faulty 2",
                format!(
                    "{} runs, {} Ok, {} poisons",
                    two.hung[0], two.hung[1], two.hung[2]
                ),
                format!(
                    "{} runs, {} Ok, {} poison",
                    two.poisoned[0], two.poisoned[1], two.poisoned[2]
                ),
            ),
        };
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} / {expected} | {hung} | {poisoned} |",
            case.repeat,
            us(case.median_ns),
            us(case.p99_ns),
            case.ok,
        );
    }
    out.push('\n');
    if let Some((healthy, faulty, noise, within)) = lanes_verdict(&measured.lanes) {
        let _ = writeln!(
            out,
            "Every run of the fourteen ended `Ok`, in order, in both cases. Their median gap, \
             averaged over the repeats: healthy {:.2} us, beside the faulty two {:.2} us, a \
             difference of {:+.2} us. The run-to-run noise, taken as the larger spread (highest \
             minus lowest median) of one case over its {} repeats, is {:.2} us (a coarse estimate from so few \
             repeats): the difference is {} it. \
             The faulty two cost the others little by construction: a hung kernel on the fake is \
             a timed wait on its own device's condition variable (no CPU), and recovery is a \
             drain, a force reset and a probe of device 14 or 15 alone. The p99 column is the \
             machine's: two logical CPUs share 64 lane and stream threads and the 16 drivers.\n",
            healthy / 1_000.0,
            faulty / 1_000.0,
            // Rounded first, so a difference that rounds to zero reads +0.00, not -0.00.
            ((faulty - healthy) / 10.0).round() / 100.0 + 0.0,
            measured.lanes.iter().filter(|c| c.faulty.is_none()).count(),
            noise / 1_000.0,
            if within {
                "no larger than"
            } else {
                "larger than"
            },
        );
    }
    if let Some(cost) = measured.lanes_cost {
        let [t0, t1, t2, t3] = cost.threads;
        let [r0, r1, r2, r3] = cost.rss_kib;
        let per_lane = |a: u64, b: u64| b.saturating_sub(a) / LANES;
        let _ = writeln!(
            out,
            "What one process of sixteen lanes costs (the first healthy case, from \
             /proc/self/status; the bench's own threads joined before each reading): **threads** \
             {t0} before the lanes, {t1} once the sixteen were created ({} a lane: its lane \
             thread and completion waiter; host workers would add `config.workers` each), {t2} \
             once they ran ({} named `lane*`, {} named `fake-acl-*`: the fake's two stream \
             threads a lane, created at its first launch, which a real libascendcl does not \
             have), {t3} after destroy. **Resident memory** (VmRSS) {} MiB before, {} MiB once \
             created ({} KiB a lane: thread stacks touched, the lane's tables, the fake's \
             device and pinned memory of its slots), {} MiB once they ran ({} KiB a lane over \
             the start, with its streams and the bench's own record of its runs, 48 bytes a \
             run), {} MiB after destroy (what the allocator keeps for reuse; the create/destroy \
             test, `tests/create_destroy_cycles.rs`, checks 1,000 cycles leave it within 1 \
             MiB).\n",
            per_lane(t0, t1),
            cost.lane_threads,
            cost.fake_stream_threads,
            kib_to_mib(r0),
            kib_to_mib(r1),
            per_lane(r0, r1),
            kib_to_mib(r2),
            per_lane(r0, r2),
            kib_to_mib(r3),
        );
    }
    out
}

impl Measured {
    fn arm(&self, kernel_us: u64, loop_name: char, profile: &str) -> Option<&Arm> {
        self.arms
            .iter()
            .find(|a| a.kernel_us == kernel_us && a.loop_name == loop_name && a.profile == profile)
    }

    /// Whether the targets hold at `kernel_us`: (b) and (c) at depth two have a median gap at
    /// most 1/3 of depth one's (`depth1`, the same loop) and at most 2x loop (a)'s.
    pub(crate) fn targets_hold(&self, kernel_us: u64) -> Option<bool> {
        let queued = |l| self.arm(kernel_us, l, "depth2").map(|a| a.median_ns);
        let depth_one = |l| self.arm(kernel_us, l, "depth1").map(|a| a.median_ns);
        let up_front = queued('a')?;
        let mut hold = true;
        for l in ['b', 'c'] {
            let (q, d) = (queued(l)?, depth_one(l)?);
            hold &= q.saturating_mul(3) <= d && q <= up_front.saturating_mul(2);
        }
        Some(hold)
    }
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1_000.0)
}

/// The section's markdown (without its markers).
pub(crate) fn markdown(measured: &Measured, runs: u32, machine: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## The runner loops through the C ABI (real time, on the fake libascendcl)\n\n\
         Generated by `cargo xtask fake-bench` ({machine}): `lane-capi/examples/fake_bench.cpp`, \
         a C++ runner built against the release `librun_lane.a` and `run_lane.h` (the path an \
         onboard runner links), on the release fake (`librun_lane_fake_ascendcl.so`), in one \
         process. Each run is a pair of fake kernels of the given length, AICore and AICPU; the \
         gap is the device idle time from a run's end to the next run's start, from each run's \
         own timing buffer; {runs} runs per arm, the first {SKIP} skipped. The loops: **(a) kept \
         full**, every run submitted up front as far as the lane takes them, then each next run \
         from the outcome callback (on the lane thread) the moment a slot frees; **(b) the \
         documented loop**, submit until `FULL`, then wait for the oldest outcome; **(c)** a \
         successor submitted a third of a kernel after its predecessor's outcome. Each runs at \
         launch depth two (`depth2`: queued) and, beside it, at depth one (`depth1`). The floor is the \
         fake's own: the same kernels already queued on one stream.\n"
    );
    let _ = writeln!(
        out,
        "| kernel | loop | depth two: median gap (us) | p99 (us) | depth one: median gap (us) | p99 (us) | depth two / depth one | floor: median (us) | depth two: submit to launch, median (us) | p99 (us) |\n\
         |---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for kernel_us in KERNELS_US {
        let floor = measured.floors.iter().find(|f| f.kernel_us == kernel_us);
        for l in ['a', 'b', 'c'] {
            let (Some(q), Some(d)) = (
                measured.arm(kernel_us, l, "depth2"),
                measured.arm(kernel_us, l, "depth1"),
            ) else {
                continue;
            };
            let ratio = q.median_ns as f64 / d.median_ns.max(1) as f64;
            let latency = measured
                .latencies
                .iter()
                .find(|t| t.kernel_us == kernel_us && t.loop_name == l);
            let _ = writeln!(
                out,
                "| {} | ({l}) | {} | {} | {} | {} | {ratio:.2} | {} | {} | {} |",
                kernel_label(kernel_us),
                us(q.median_ns),
                us(q.p99_ns),
                us(d.median_ns),
                us(d.p99_ns),
                floor.map_or_else(|| "?".to_owned(), |f| us(f.median_ns)),
                latency.map_or_else(|| "?".to_owned(), |t| us(t.median_ns)),
                latency.map_or_else(|| "?".to_owned(), |t| us(t.p99_ns)),
            );
        }
    }
    out.push('\n');
    let verdicts: Vec<String> = KERNELS_US
        .iter()
        .filter_map(|&k| {
            measured.targets_hold(k).map(|hold| {
                format!(
                    "{}: {}",
                    kernel_label(k),
                    if hold { "holds" } else { "missed" }
                )
            })
        })
        .collect();
    let _ = writeln!(
        out,
        "Target (a benchmark, not a timed test): at every kernel length, (b) and (c) at depth two \
         have a median gap at most 1/3 of depth one's and within 2x of (a): {}. A ratio near 1 \
         would mean queueing bought nothing; here the successor is on the pair before its \
         predecessor ends, because the lane thread never sits in the predecessor's wait (the \
         completion waiter does, docs/ARCHITECTURE.md). At depth one every gap is the host's \
         round trip: the waiter wakes, the lane thread wakes for its answer, reads the status, \
         and launches the next run. The p99 column is the machine's noise (two logical CPUs \
         share the lane thread, its waiter, the fake's stream threads and the runner). The last \
         two columns are L-16's promise, measured: from just before `run_lane_submit` to the \
         return of the run's `launch_aicpu` callback (its launch's last call), while the run \
         ahead of it executes; it includes the run's prepare, which the fake runner makes \
         free, and in loop (a) the rest of the outcome callback the submit is made from. \
         docs/embedding.md recommends loop (b), the one the C++ example uses.\n",
        verdicts.join(", ")
    );
    out.push_str(&lanes_markdown(measured));
    let _ = writeln!(
        out,
        "Reproduce: `cargo xtask fake-bench` (writes this section and the one before). \
         `cargo test -p lane-capi --test cpp_example` builds the same program against the test \
         build and runs a few runs of each arm, and of each case of `--lanes`; \
         `cargo test -p lane-capi --test sixteen_lanes` checks the sixteen lanes' outcomes and \
         threads (no timings)."
    );
    out
}

fn kernel_label(us: u64) -> String {
    if us % 1_000 == 0 {
        format!("{} ms", us / 1_000)
    } else {
        format!("{us} us")
    }
}

/// Builds the bench (release libraries, then the C++ program), runs its loops and its
/// `--lanes` mode (`runs_asked` runs per arm and per lane, else [`RUNS`] and [`LANES_RUNS`]),
/// and returns its section's markdown.
pub(crate) fn run(runs_asked: Option<u32>, machine: &str) -> Result<String, String> {
    let runs = runs_asked.unwrap_or(RUNS);
    let built = dist::build_release()?;
    let fake = dist::build_fake()?;
    let scratch = std::env::temp_dir().join(format!("run-lane-capi-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    let exe = compile(&scratch, &built.staticlib, &built.native_static_libs)?;
    let kernels: Vec<String> = KERNELS_US.iter().map(u64::to_string).collect();
    println!("fake-bench: the C ABI loops ({runs} runs per arm)");
    let loops = Command::new(&exe)
        .arg(&fake)
        .arg(runs.to_string())
        .arg(SKIP.to_string())
        .arg(kernels.join(","))
        .output()
        .map_err(|e| format!("could not run {}: {e}", exe.display()));
    let lanes_runs = runs_asked.unwrap_or(LANES_RUNS);
    println!(
        "fake-bench: sixteen lanes at once ({lanes_runs} runs per lane, {LANES_REPEATS} repeats)"
    );
    let lanes = loops.as_ref().ok().map(|_| {
        Command::new(&exe)
            .arg("--lanes")
            .arg(&fake)
            .arg(lanes_runs.to_string())
            .arg(SKIP.to_string())
            .arg(LANES_KERNEL_US.to_string())
            .arg(LANES_REPEATS.to_string())
            .output()
            .map_err(|e| format!("could not run {}: {e}", exe.display()))
    });
    let _ = std::fs::remove_dir_all(&scratch);
    let mut stdout = String::new();
    for output in [Some(loops), lanes].into_iter().flatten() {
        let output = output?;
        if !output.status.success() {
            return Err(format!(
                "fake_bench failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        stdout.push_str(&String::from_utf8_lossy(&output.stdout));
    }
    let measured = parse(&stdout)?;
    Ok(markdown(&measured, runs, machine))
}

/// `c++ -O2` of the bench against the static library.
fn compile(scratch: &Path, staticlib: &Path, native: &[String]) -> Result<PathBuf, String> {
    let root = project_root();
    let exe = scratch.join("fake_bench");
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    let output = Command::new(&compiler)
        .args(["-O2", "-std=c++17", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(root.join("lane-capi/include"))
        .arg(root.join("lane-capi/examples/fake_bench.cpp"))
        .arg(staticlib)
        .args(native)
        .arg("-o")
        .arg(&exe)
        .output()
        .map_err(|e| format!("could not start {compiler}: {e}"))?;
    if output.status.success() {
        Ok(exe)
    } else {
        Err(format!(
            "compiling fake_bench.cpp failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// `doc` with the section between [`BEGIN`] and [`END`] replaced by `section`, or the
/// section appended (with its markers) when the file has none.
pub(crate) fn splice(doc: &str, section: &str) -> String {
    let block = format!("{BEGIN}\n\n{section}\n{END}\n");
    match (doc.find(BEGIN), doc.find(END)) {
        (Some(start), Some(end)) if end > start => format!(
            "{}{block}{}",
            &doc[..start],
            doc[end + END.len()..].trim_start_matches('\n')
        ),
        _ => format!("{}\n\n{block}", doc.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "floor 300 179 6840 8382\n\
        arm 300 a depth2 200 200 9254 16935\narm 300 a depth1 200 200 70415 241315\n\
        arm 300 b depth2 200 200 8583 29184\narm 300 b depth1 200 200 73900 160700\n\
        arm 300 c depth2 200 200 9885 66709\narm 300 c depth1 200 200 74260 204916\n\
        latency 300 b 21500 48000\n";

    #[test]
    fn the_benchs_lines_parse_and_the_targets_are_checked_per_kernel_length() {
        let measured = parse(OUTPUT).unwrap();
        assert_eq!(measured.floors.len(), 1);
        assert_eq!(measured.arms.len(), 6);
        assert_eq!(measured.targets_hold(300), Some(true));
        assert_eq!(measured.targets_hold(1_000), None, "not measured");
        // A queued gap that is depth one's gap is a miss.
        let missed = OUTPUT.replace("b depth2 200 200 8583", "b depth2 200 200 70000");
        assert_eq!(parse(&missed).unwrap().targets_hold(300), Some(false));
        let text = markdown(&measured, 200, "test");
        assert!(
            text.contains("| 300 us | (b) | 8.6 | 29.2 | 73.9 |"),
            "{text}"
        );
        assert!(text.contains("300 us: holds"), "{text}");
        // The submit-to-launch columns, where measured.
        assert_eq!(measured.latencies.len(), 1);
        assert!(text.contains("| 6.8 | 21.5 | 48.0 |"), "{text}");
        assert!(
            text.contains("| (a) | 9.3 | 16.9 | 70.4 | 241.3 | 0.13 | 6.8 | ? | ? |"),
            "{text}"
        );
    }

    const LANES: &str = "lanes healthy 1 1000 1000 14000 4000 50000\n\
        lanes-cost 1 33 65 1 4936 8404 11152 10664 32 32\n\
        lanes faulty 1 1000 1000 14000 4200 60000 7 0 4 1000 998 1\n\
        lanes healthy 2 1000 1000 14000 3600 40000\n\
        lanes faulty 2 1000 1000 14000 3900 70000 7 0 4 1000 999 1\n";

    #[test]
    fn the_sixteen_lane_cases_parse_and_their_difference_is_judged_against_the_repeats_spread() {
        let measured = parse(&format!("{OUTPUT}{LANES}")).unwrap();
        assert_eq!(measured.lanes.len(), 4);
        assert_eq!(
            measured.lanes[1].faulty,
            Some(FaultyTwo {
                hung: [7, 0, 4],
                poisoned: [1000, 998, 1]
            })
        );
        assert_eq!(measured.lanes_cost.unwrap().threads, [1, 33, 65, 1]);
        // Healthy 3.8 us (3.6..4.0), faulty 4.05 us (3.9..4.2): 0.25 us apart, noise 0.4 us.
        let (healthy, faulty, noise, within) = lanes_verdict(&measured.lanes).unwrap();
        assert_eq!(
            (healthy, faulty, noise, within),
            (3800.0, 4050.0, 400.0, true)
        );
        let far = LANES
            .replace("14000 4200 60000", "14000 9000 60000")
            .replace("14000 3900 70000", "14000 9200 70000");
        let measured_far = parse(&far).unwrap();
        assert!(
            !lanes_verdict(&measured_far.lanes).unwrap().3,
            "outside the noise"
        );
        let text = markdown(&measured, 200, "test");
        assert!(
            text.contains("| 14 beside the faulty 2 | 1 | 4.2 | 60.0 | 14000 / 14000 | 7 runs, 0 Ok, 4 poisons | 1000 runs, 998 Ok, 1 poison |"),
            "{text}"
        );
        assert!(
            text.contains("the difference is no larger than it"),
            "{text}"
        );
        assert!(
            text.contains(
                "**threads** 1 before the lanes, 33 once the sixteen were created (2 a lane"
            ),
            "{text}"
        );
        assert!(!markdown(&parse(OUTPUT).unwrap(), 200, "test").contains("Sixteen lanes"));
    }

    #[test]
    fn a_line_the_bench_never_prints_is_an_error_naming_it() {
        let error = parse("arm 300 a").unwrap_err();
        assert!(error.contains("`arm 300 a`"), "{error}");
        assert!(parse("floor x 1 2 3").unwrap_err().contains("not a number"));
        assert!(
            parse("lanes sideways 1 1 1 1 1 1")
                .unwrap_err()
                .contains("not a healthy or faulty case")
        );
    }

    #[test]
    fn the_section_is_appended_once_then_replaced_in_place() {
        let once = splice("# P\n\nbody\n", "first\n");
        assert!(once.contains(BEGIN) && once.contains("first"));
        let twice = splice(&format!("{once}\n## Later\n"), "second\n");
        assert!(!twice.contains("first") && twice.contains("second") && twice.contains("## Later"));
        assert_eq!(twice.matches(BEGIN).count(), 1);
    }
}
