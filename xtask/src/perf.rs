//! docs/performance.md's figures. Each benchmark command writes its figures to a data file
//! (`docs/data/<bench>.json`: what was measured, the targets and whether each is met, and where
//! it was measured); [`render`] puts their tables into the doc, each between its markers. The
//! rest of the doc is written by hand. `cargo xtask codegen` renders the tables, and its
//! check fails when the doc differs from its data.

use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::project_root;

/// The doc the tables are rendered into, relative to the workspace root.
pub(crate) const DOC: &str = "docs/performance.md";

/// A function that renders a data file's tables.
type Tables = fn(&Value) -> String;

/// Each data file (docs/data/NAME.json) with the function that renders its tables, in the
/// doc's order.
const PARTS: [(&str, Tables); 3] =
    [("bench", bench_tables), ("fake-bench", arm_tables), ("capi-bench", capi_tables)];

fn data_path(name: &str) -> PathBuf {
    project_root().join(format!("docs/data/{name}.json"))
}

/// Where and when a bench measured: the command, the commit, the date, the machine and its
/// load average before (`load_after` is filled in by [`record`]).
pub(crate) fn provenance(command: &str) -> Value {
    let root = project_root();
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&root)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = match (git(&["rev-parse", "--short", "HEAD"]), git(&["status", "--porcelain"])) {
        (Some(hash), Some(changes)) if !changes.is_empty() => {
            format!("{hash} with uncommitted changes")
        }
        (hash, _) => hash.unwrap_or_else(|| "unknown".to_owned()),
    };
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned());
    let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned()))
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    json!({
        "command": command,
        "commit": commit,
        "date": utc_date(secs),
        "cpu": cpu,
        "cpus": std::thread::available_parallelism().map_or(0, usize::from),
        "idle": idle_states(),
        "os": fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|r| format!("Linux {}", r.trim())),
        "rustc": rustc,
        "load_before": load_average(),
        "load_after": null,
    })
}

/// `/proc/loadavg`'s 1, 5 and 15 minute averages.
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "unknown".to_owned(),
        |l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

/// How an idle CPU waits for its next wake-up, where Linux says: the cpuidle driver, and for
/// a guest's `haltpoll` driver how long it polls before it halts. A real-time figure that
/// wakes a thread onto an idle CPU pays that CPU's wake-up: on a guest that halts at once,
/// the hypervisor's (tens of us), which no bare-metal runner host pays.
fn idle_states() -> Option<String> {
    let driver = fs::read_to_string("/sys/devices/system/cpu/cpuidle/current_driver").ok()?;
    let driver = driver.trim();
    let poll = fs::read_to_string("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
        .ok()
        .filter(|_| driver == "haltpoll");
    Some(describe_idle(driver, poll.as_deref()))
}

/// [`idle_states`]' text for `driver` and, under `haltpoll`, its `guest_halt_poll_ns`.
fn describe_idle(driver: &str, poll_ns: Option<&str>) -> String {
    match poll_ns.map(str::trim) {
        Some("0") => format!("cpuidle {driver}: an idle CPU halts at once, with no guest polling"),
        Some(ns) => format!("cpuidle {driver}: an idle CPU polls up to {ns} ns before it halts"),
        None => format!("cpuidle {driver}"),
    }
}

/// `YYYY-MM-DD HH:MM UTC` from seconds since the Unix epoch (the civil-from-days algorithm
/// of Howard Hinnant's date library).
fn utc_date(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let (hour, minute) = ((secs % 86_400) / 3_600, (secs % 3_600) / 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

/// Writes a bench's figures to docs/data/`name`.json with their `provenance` (its load
/// average after taken now), then renders the doc's tables again.
pub(crate) fn record(name: &str, mut data: Value, mut provenance: Value) -> Result<(), String> {
    provenance["load_after"] = json!(load_average());
    data["provenance"] = provenance;
    let path = data_path(name);
    fs::write(&path, to_text(&data))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let doc = project_root().join(DOC);
    let old =
        fs::read_to_string(&doc).map_err(|e| format!("cannot read {}: {e}", doc.display()))?;
    fs::write(&doc, render(&old)?).map_err(|e| format!("cannot write {}: {e}", doc.display()))?;
    println!("wrote {} and the tables of {DOC}", path.display());
    Ok(())
}

/// A data file's text: JSON with one line per setting and per row, so it diffs row by row.
fn to_text(data: &Value) -> String {
    let line = |v: &Value| serde_json::to_string(v).unwrap_or_default();
    let Some(parts) = data.as_object() else {
        return line(data) + "\n";
    };
    let parts: Vec<String> = parts
        .iter()
        .map(|(key, value)| {
            let key = line(&json!(key));
            let (items, open, close): (Vec<String>, _, _) = match value {
                Value::Array(rows) => (rows.iter().map(line).collect(), "[", "]"),
                Value::Object(fields) => {
                    let field =
                        |(k, v): (&String, &Value)| format!("{}: {}", line(&json!(k)), line(v));
                    (fields.iter().map(field).collect(), "{", "}")
                }
                _ => (Vec::new(), "", ""),
            };
            if items.is_empty() {
                return format!("  {key}: {}", line(value));
            }
            format!("  {key}: {open}\n    {}\n  {close}", items.join(",\n    "))
        })
        .collect();
    format!("{{\n{}\n}}\n", parts.join(",\n"))
}

/// `doc` with each data file's tables rendered between its markers; an error names a data
/// file that cannot be read or a region the doc lacks.
pub(crate) fn render(doc: &str) -> Result<String, String> {
    let mut doc = doc.to_owned();
    for (name, tables) in PARTS {
        let path = data_path(name);
        let data: Value = fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        doc = splice(&doc, name, &tables(&data))?;
    }
    Ok(doc)
}

/// `doc` with the text between `name`'s markers replaced by `text`.
fn splice(doc: &str, name: &str, text: &str) -> Result<String, String> {
    let begin =
        format!("<!-- docs/data/{name}.json: begin (rendered by `cargo xtask codegen`) -->");
    let end = format!("<!-- docs/data/{name}.json: end -->");
    match (doc.find(&begin), doc.find(&end)) {
        (Some(start), Some(stop)) if stop > start => {
            Ok(format!("{}{begin}\n\n{}\n\n{}", &doc[..start], text.trim_end(), &doc[stop..]))
        }
        _ => Err(format!("{DOC} has no region `{begin}` ... `{end}`")),
    }
}

// ----- cells and tables -----------------------------------------------------------------

/// A table's column: its heading (`>` first for a right-aligned column) and its cell.
type Column = (&'static str, fn(&Value) -> String);

/// A Markdown table with a row for each of `rows`.
fn table(rows: &Value, columns: &[Column]) -> String {
    let rows = rows.as_array().map_or(&[][..], Vec::as_slice);
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = line(columns.iter().map(|(h, _)| h.trim_start_matches('>').to_owned()).collect());
    let rule = |(h, _): &Column| if h.starts_with('>') { "---:" } else { ":---" };
    out += &format!("|{}|\n", columns.iter().map(rule).collect::<Vec<_>>().join("|"));
    for r in rows {
        out += &line(columns.iter().map(|(_, cell)| cell(r)).collect());
    }
    out + "\n"
}

/// A table of `figures` of one object, a row each: its name and its cell.
fn pairs(head: [&'static str; 2], data: &Value, figures: &[Column]) -> String {
    let rows: Vec<Value> = figures.iter().map(|(name, cell)| json!([name, cell(data)])).collect();
    table(&json!(rows), &[(head[0], |r| t(&r[0])), (head[1], |r| t(&r[1]))])
}

/// A value as it stands (a number as Rust prints it); `-` where it is null or missing.
fn t(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), |f| f.to_string()),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_owned(),
        _ => "-".to_owned(),
    }
}

/// A number with `places` decimals; `-` where it is not a number.
fn f(v: &Value, places: usize) -> String {
    v.as_f64().map_or_else(|| "-".to_owned(), |x| format!("{x:.places$}"))
}

/// A number with its sign and `places` decimals.
fn signed(v: &Value, places: usize) -> String {
    v.as_f64().map_or_else(|| "-".to_owned(), |x| format!("{x:+.places$}"))
}

/// A percentage with `places` decimals.
fn pct(v: &Value, places: usize) -> String {
    f(v, places) + "%"
}

/// A list of numbers, each by `cell`, comma-separated; `-` where it is empty or not a list.
fn list(v: &Value, cell: impl Fn(&Value) -> String) -> String {
    match v.as_array() {
        Some(a) if !a.is_empty() => a.iter().map(cell).collect::<Vec<_>>().join(", "),
        _ => "-".to_owned(),
    }
}

/// A device time in us: `20 us`.
fn device(r: &Value) -> String {
    format!("{} us", t(&r["device_us"]))
}

/// A kernel length: `300 us`, `1 ms`.
fn kernel(r: &Value) -> String {
    match r["kernel_us"].as_u64() {
        Some(us) if us % 1_000 == 0 => format!("{} ms", us / 1_000),
        Some(us) => format!("{us} us"),
        None => "-".to_owned(),
    }
}

/// Nanoseconds to three significant figures.
fn ns(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x >= 100.0 => format!("{x:.0} ns"),
        Some(x) if x >= 10.0 => format!("{x:.1} ns"),
        Some(x) => format!("{x:.2} ns"),
        None => "-".to_owned(),
    }
}

/// The provenance and the settings of a data file, as lists.
fn about(data: &Value) -> String {
    let mut out = String::new();
    for (title, part) in [("Measured", "provenance"), ("Settings", "settings")] {
        let Some(fields) = data[part].as_object() else {
            continue;
        };
        out += &format!("{title}:\n\n");
        for (key, value) in fields {
            out += &format!("- {key}: {}\n", t(value));
        }
        out += "\n";
    }
    out
}

// ----- the tables -----------------------------------------------------------------------

/// `cargo xtask bench`: the micro-benchmarks and the simulator's sweeps.
fn bench_tables(d: &Value) -> String {
    let mut out = "### Micro-benchmarks and the sweep (`cargo xtask bench`)\n\n".to_owned();
    out += &about(d);
    out += "#### Micro-benchmarks\n\n";
    out += &table(
        &d["micro"],
        &[
            ("benchmark", |r| format!("`{}`", t(&r["benchmark"]))),
            ("measures", |r| t(&r["measures"])),
            (">target", |r| match r["target_ns"] {
                Value::Null => "reported".to_owned(),
                ref target => format!("≤ {}", ns(target)),
            }),
            ("met", |r| t(&r["met"])),
            (">median", |r| ns(&r["median_ns"])),
            (">slowest run's median", |r| ns(&r["slowest_ns"])),
            (">instructions/iter", |r| t(&r["instructions"])),
        ],
    );
    out += &pairs(
        ["one run through the lane", ">value"],
        &d["lane_run"],
        &[
            ("host time (`lane::full_run_cycle::a2a3`)", |v| ns(&v["cycle_ns"])),
            ("one device call (A18), us", |v| f(&v["device_call_us"], 1)),
            ("the run's share of a device call", |v| pct(&v["of_device_call_pct"], 1)),
            ("host work a run needs in the simulator (`H`), us", |v| f(&v["h_us"], 1)),
            ("the run's share of `H`", |v| pct(&v["of_h_pct"], 2)),
            ("one lane step (a sixth of a run)", |v| ns(&v["step_ns"])),
            ("the step's share of a device call", |v| pct(&v["step_of_device_call_pct"], 2)),
        ],
    );
    out += "#### The sweep's model\n\n";
    out += &pairs(
        ["term", ">us"],
        &d["model"],
        &[
            ("`run_preamble`, in `D`", |m| f(&m["preamble_us"], 1)),
            ("`g`", |m| f(&m["g_us"], 1)),
            ("`R`", |m| f(&m["r_us"], 1)),
            ("`H`", |m| f(&m["h_us"], 1)),
            ("`H1`", |m| f(&m["h1_us"], 1)),
            ("`g3`", |m| f(&m["g3_us"], 1)),
            ("`L`", |m| f(&m["l_us"], 1)),
            ("`V`", |m| f(&m["v_us"], 1)),
            ("`W`", |m| f(&m["w_us"], 1)),
            ("`C`", |m| f(&m["c_us"], 1)),
            ("`prepare`", |m| f(&m["prepare_us"], 1)),
            ("`finalise`", |m| f(&m["finalise_us"], 1)),
            ("`host_wakeup`", |m| f(&m["wakeup_us"], 1)),
            ("the launch calls in `C`", |m| f(&m["launch_us"], 1)),
            ("both arms host-bound below (`H1 > D + R`)", |m| f(&m["both_host_bound_below_us"], 1)),
            ("queued host-bound below (`H > D + g`)", |m| f(&m["queued_host_bound_below_us"], 1)),
        ],
    );
    out += "#### The sweep: depth one against queued depth two\n\n";
    out += &table(
        &d["points"],
        &[
            (">device time", |r| match r["host_bound"] {
                Value::Bool(true) => device(r) + " (host-bound)",
                _ => device(r),
            }),
            (">D", |r| f(&r["d_us"], 1) + " us"),
            (">depth one runs/s", |r| f(&r["one_runs_per_s"], 0)),
            (">queued runs/s", |r| f(&r["two_runs_per_s"], 0)),
            (">ratio", |r| f(&r["ratio"], 3)),
            (">utilisation 1 → 2", |r| {
                format!("{} → {}", pct(&r["one_util_pct"], 1), pct(&r["two_util_pct"], 1))
            }),
            (">mean gap 1 → 2 (us)", |r| {
                format!("{} → {}", f(&r["one_gap_us"], 1), f(&r["two_gap_us"], 1))
            }),
            (">model T1 runs/s", |r| f(&r["t1_runs_per_s"], 0)),
            (">model T2 runs/s", |r| f(&r["t2_runs_per_s"], 0)),
            (">model ratio", |r| f(&r["model_ratio"], 3)),
            (">queued / model", |r| pct(&r["two_of_model_pct"], 2)),
        ],
    );
    out += "#### The sweep: arm 3, copies on the streams and runner work on host workers\n\n";
    out += &table(
        &d["points"],
        &[
            (">device time", device),
            (">depth one runs/s", |r| f(&r["one_runs_per_s"], 0)),
            (">queued runs/s", |r| f(&r["two_runs_per_s"], 0)),
            (">arm 3 runs/s", |r| f(&r["three_runs_per_s"], 0)),
            (">arm 3 / depth one", |r| f(&r["three_over_one"], 2) + "x"),
            (">arm 3 / queued", |r| f(&r["three_over_two"], 2) + "x"),
            (">utilisation 3", |r| pct(&r["three_util_pct"], 1)),
            (">model T3 runs/s", |r| f(&r["t3_runs_per_s"], 0)),
            (">arm 3 / model", |r| pct(&r["three_of_model_pct"], 2)),
            ("bound by", |r| t(&r["bound_by"])),
        ],
    );
    out += &table(
        &d["checks"],
        &[
            ("check", |r| t(&r["check"])),
            (">worst", |r| pct(&r["worst_pct"], 2)),
            (">at", |r| format!("{} us", t(&r["at_us"]))),
            (">target", |r| match r["target_pct"] {
                Value::Null => "-".to_owned(),
                ref target => format!("≥ {}%", t(target)),
            }),
            ("met", |r| t(&r["met"])),
        ],
    );
    out += "#### The sweep with per-run jitter\n\n";
    out += &table(
        &d["jitter"],
        &[
            (">device time", device),
            (">queued runs/s", |r| f(&r["two_runs_per_s"], 0)),
            (">model T2 runs/s", |r| f(&r["t2_runs_per_s"], 0)),
            (">queued / model", |r| pct(&r["two_of_model_pct"], 2)),
            (">E[max] runs/s", |r| f(&r["emax_runs_per_s"], 0)),
            (">queued / E[max]", |r| pct(&r["two_of_emax_pct"], 2)),
        ],
    );
    out += "#### The slot layout: two copies each way against one\n\n";
    let two = &d["two_copies"];
    out += &table(
        &json!([["`R`", two["r_us"]], ["`H`", two["h_us"]]]),
        &[
            ("term", |r| t(&r[0])),
            (">two copies each way (us)", |r| f(&r[1][0], 1)),
            (">one copy each way (us)", |r| f(&r[1][1], 1)),
        ],
    );
    out += &table(
        &d["layouts"],
        &[
            (">device time", device),
            (">two copies each way: depth one / queued runs/s", |r| {
                format!("{} / {}", f(&r["before_one"], 0), f(&r["before_two"], 0))
            }),
            (">one copy each way: depth one / queued runs/s", |r| {
                format!("{} / {}", f(&r["after_one"], 0), f(&r["after_two"], 0))
            }),
            (">depth-one gain", |r| signed(&r["one_gain_pct"], 1) + "%"),
            (">queued gain", |r| signed(&r["two_gain_pct"], 1) + "%"),
        ],
    );
    out
}

/// `cargo xtask fake-bench`, lane-conformance's part: three arms through the Rust API.
fn arm_tables(d: &Value) -> String {
    let mut out = "### Three arms on the fake (`cargo xtask fake-bench`)\n\n".to_owned();
    out += &about(d);
    out += &table(
        &d["arms"],
        &[
            (">device time", device),
            ("arm", |r| t(&r["arm"])),
            (">runs/s", |r| f(&r["runs_per_s"], 0)),
            (">busy/run (us)", |r| f(&r["busy_us"], 1)),
            (">mean gap (us)", |r| f(&r["mean_gap_us"], 1)),
            (">median gap (us)", |r| f(&r["median_gap_us"], 1)),
            (">p99 gap (us)", |r| f(&r["p99_gap_us"], 1)),
            (">host/run (us)", |r| f(&r["host_us"], 1)),
            (">queued launches", |r| t(&r["queued_launches"])),
        ],
    );
    out
}

/// `cargo xtask fake-bench`, the C ABI's part: the runner loops, the anchors, sixteen lanes.
pub(crate) fn capi_tables(d: &Value) -> String {
    let mut out =
        "### The C ABI loops, the anchors and sixteen lanes (`cargo xtask fake-bench`)\n\n"
            .to_owned();
    out += &about(d);
    out += "#### The runner loops (the first round)\n\n";
    out += &table(
        &d["loops"],
        &[
            (">kernel", kernel),
            ("loop", |r| t(&r["loop"])),
            (">depth two: median gap (us)", |r| f(&r["two_median_us"], 1)),
            (">p99 (us)", |r| f(&r["two_p99_us"], 1)),
            (">depth one: median gap (us)", |r| f(&r["one_median_us"], 1)),
            (">p99 (us)", |r| f(&r["one_p99_us"], 1)),
            (">depth two / depth one", |r| f(&r["ratio"], 2)),
            (">floor: median (us)", |r| f(&r["floor_us"], 1)),
            (">depth two: submit to launch, median (us)", |r| f(&r["submit_median_us"], 1)),
            (">p99 (us)", |r| f(&r["submit_p99_us"], 1)),
        ],
    );
    out += &table(
        &d["loop_targets"],
        &[
            (">kernel", kernel),
            ("the loops' target", |r| match r["holds"] {
                Value::Bool(true) => "holds".to_owned(),
                _ => "missed".to_owned(),
            }),
            ("each round, of what the target allows", |r| list(&r["of_target"], |v| f(v, 2))),
            ("the queued anchor's gap per round (us)", |r| {
                list(&r["queued_anchor_us"], |v| f(v, 1))
            }),
            (">the anchors' own queued / depth one", |r| f(&r["anchors_ratio"], 2)),
        ],
    );
    out += "#### Beside the hand-written anchors (every round)\n\n";
    // A ratio, or for the idle figures a difference in us.
    fn against(r: &Value, v: &Value) -> String {
        match r["difference"] {
            Value::Bool(true) => signed(v, 1),
            _ => f(v, 2),
        }
    }
    out += &table(
        &d["anchors"],
        &[
            (">kernel", kernel),
            ("figure", |r| t(&r["figure"])),
            ("anchor: median (us)", |r| list(&r["anchor_us"], |v| f(v, 1))),
            ("lane: median (us)", |r| list(&r["lane_us"], |v| f(v, 1))),
            ("lane / anchor (idle: lane - anchor, us)", |r| list(&r["against"], |v| against(r, v))),
            (">middle round", |r| against(r, &r["middle"])),
            ("target", |r| t(&r["target"])),
            ("met", |r| t(&r["met"])),
        ],
    );
    out += &table(
        &d["misses"],
        &[
            (">kernel", kernel),
            ("missed", |r| t(&r["figure"])),
            (">by (us)", |r| f(&r["by_us"], 1)),
            (">spread over the rounds (us)", |r| f(&r["spread_us"], 1)),
            ("within the spread", |r| t(&r["within_spread"])),
            (">hand-off loop / depth-one anchor", |r| f(&r["hand_over"], 2)),
            (">lane / hand-off loop", |r| f(&r["lane_over_hand_off"], 2)),
        ],
    );
    out += &table(
        &d["idle_misses"],
        &[
            (">kernel", kernel),
            ("missed", |r| t(&r["figure"])),
            (">beyond the 5 us (us)", |r| f(&r["beyond_us"], 1)),
            (">lane: to the AICore launch (us)", |r| f(&r["lane_us"], 1)),
            (">anchor: its arm copy (us)", |r| f(&r["anchor_us"], 1)),
            (">lane, option off: to the AICore launch (us)", |r| f(&r["lane_off_us"], 1)),
        ],
    );
    out += "#### The three targets, the lane's threads beside the caller driving it (the middle round)\n\n";
    out += &table(
        &d["targets"],
        &[
            (">kernel", kernel),
            ("lane", |r| t(&r["lane"])),
            ("target", |r| t(&r["target"])),
            (">lane: median (us)", |r| f(&r["lane_us"], 1)),
            (">anchor: median (us)", |r| f(&r["anchor_us"], 1)),
            (">the target allows (us)", |r| f(&r["allowed_us"], 1)),
            (">lane over that (us)", |r| signed(&r["over_us"], 1)),
            ("met", |r| match r["met"] {
                Value::Null => "stated".to_owned(),
                _ => t(&r["met"]),
            }),
        ],
    );
    out += "#### Where a depth-one gap goes (the middle round of each part)\n\n";
    out += &table(
        &d["depth_one_split"],
        &[
            (">kernel", kernel),
            ("loop", |r| t(&r["loop"])),
            (">device end to the AICore launch's start (us)", |r| f(&r["react_us"], 1)),
            (">the launch's calls (us)", |r| f(&r["launch_us"], 1)),
            (">then to the run's device start (us)", |r| f(&r["start_us"], 1)),
            (">device start to the next run's (us)", |r| f(&r["period_us"], 1)),
            (">device span (us)", |r| f(&r["span_us"], 1)),
        ],
    );
    out += "#### Sixteen lanes at once, beside a hung and a poisoned device\n\n";
    fn outcomes(v: &Value) -> String {
        format!("runs {}, Ok {}, poisons {}", t(&v[0]), t(&v[1]), t(&v[2]))
    }
    out += &table(
        &d["lanes"],
        &[
            ("case", |r| t(&r["case"])),
            (">repeat", |r| t(&r["repeat"])),
            (">devices 0-13: median gap (us)", |r| f(&r["median_us"], 1)),
            (">p99 (us)", |r| f(&r["p99_us"], 1)),
            (">devices 0-13: runs Ok", |r| format!("{} / {}", t(&r["ok"]), t(&r["runs"]))),
            ("device 14 (hung)", |r| outcomes(&r["hung"])),
            ("device 15 (poisoned)", |r| outcomes(&r["poisoned"])),
        ],
    );
    out += &pairs(
        ["devices 0-13, over the repeats", ">value"],
        &d["lanes_verdict"],
        &[
            ("healthy 16: mean of the median gaps (us)", |v| f(&v["healthy_us"], 2)),
            ("beside the faulty 2: mean of the median gaps (us)", |v| f(&v["faulty_us"], 2)),
            ("difference (us)", |v| signed(&v["difference_us"], 2)),
            ("noise: the larger spread of one case (us)", |v| f(&v["noise_us"], 2)),
            ("repeats of each case", |v| t(&v["repeats"])),
            ("the difference within the noise", |v| t(&v["within"])),
        ],
    );
    let cost = &d["lanes_cost"];
    out += &table(
        &json!([["threads", cost["threads"], 0], ["VmRSS (MiB)", cost["rss_mib"], 1]]),
        &[
            ("one process of sixteen lanes", |r| t(&r[0])),
            (">before the lanes", |r| f(&r[1][0], usize::from(r[2] == 1))),
            (">created", |r| f(&r[1][1], usize::from(r[2] == 1))),
            (">ran", |r| f(&r[1][2], usize::from(r[2] == 1))),
            (">after destroy", |r| f(&r[1][3], usize::from(r[2] == 1))),
        ],
    );
    out += &pairs(
        ["a lane's share", ">value"],
        cost,
        &[
            ("threads a lane, once created", |c| t(&c["threads_per_lane"])),
            ("threads named `lane*`, once they ran", |c| t(&c["lane_threads"])),
            ("threads named `fake-acl-*`, once they ran", |c| t(&c["fake_stream_threads"])),
            ("VmRSS a lane, once created (KiB)", |c| f(&c["per_lane_kib"][0], 0)),
            ("VmRSS a lane, once they ran (KiB)", |c| f(&c["per_lane_kib"][1], 0)),
        ],
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small bench.json: one micro-benchmark, one sweep point, one jitter point.
    fn bench_fixture() -> Value {
        json!({
            "provenance": { "commit": "abc1234", "load_before": "0.10 0.20 0.30" },
            "settings": { "repeat": 3 },
            "micro": [
                { "benchmark": "lane::full_run_cycle::a2a3", "measures": "one run", "target_ns": 250.0,
                  "met": true, "median_ns": 221.4, "slowest_ns": 230.0, "instructions": 3578 },
                { "benchmark": "status_latch::decode", "measures": "a decode", "target_ns": null,
                  "met": null, "median_ns": 8.8, "slowest_ns": 9.126, "instructions": null },
            ],
            "lane_run": { "cycle_ns": 221.4, "of_h_pct": 0.1703 },
            "model": { "r_us": 37.3, "both_host_bound_below_us": 81.7 },
            "points": [{
                "device_us": 20.0, "host_bound": true, "d_us": 29.0, "one_runs_per_s": 7812.5,
                "two_runs_per_s": 7692.3, "ratio": 0.98461, "one_util_pct": 22.7,
                "two_util_pct": 22.34, "one_gap_us": 99.0, "two_gap_us": 101.0,
                "t1_runs_per_s": 7812.5, "t2_runs_per_s": 7692.3, "model_ratio": 0.98461,
                "two_of_model_pct": 100.0, "three_runs_per_s": 18698.1, "three_over_one": 2.3934,
                "three_over_two": 2.4308, "three_util_pct": 54.3, "t3_runs_per_s": 18692.0,
                "three_of_model_pct": 100.032, "bound_by": "prepare chain",
            }],
            "checks": [{ "check": "queued / model T2", "worst_pct": 100.0, "at_us": 20.0,
                         "target_pct": 99.0, "met": true }],
            "jitter": [],
            "two_copies": { "r_us": [46.8, 37.3], "h_us": [149.0, 130.0] },
            "layouts": [{ "device_us": 250.0, "before_one": 3270.0, "before_two": 3771.0,
                          "after_one": 3375.0, "after_two": 3771.0, "one_gain_pct": 3.21,
                          "two_gain_pct": 0.0 }],
        })
    }

    #[test]
    fn the_bench_tables_render_each_figure_from_its_data() {
        let text = bench_tables(&bench_fixture());
        for row in [
            "- commit: abc1234\n",
            "- repeat: 3\n",
            "| `lane::full_run_cycle::a2a3` | one run | ≤ 250 ns | yes | 221 ns | 230 ns | 3578 |",
            "| `status_latch::decode` | a decode | reported | - | 8.80 ns | 9.13 ns | - |",
            "| host time (`lane::full_run_cycle::a2a3`) | 221 ns |",
            "| the run's share of `H` | 0.17% |",
            "| `R` | 37.3 |",
            "| both arms host-bound below (`H1 > D + R`) | 81.7 |",
            "| 20 us (host-bound) | 29.0 us | 7812 | 7692 | 0.985 | 22.7% → 22.3% | 99.0 → 101.0 | 7812 | 7692 | 0.985 | 100.00% |",
            "| 20 us | 7812 | 7692 | 18698 | 2.39x | 2.43x | 54.3% | 18692 | 100.03% | prepare chain |",
            "| queued / model T2 | 100.00% | 20 us | ≥ 99% | yes |",
            "| `H` | 149.0 | 130.0 |",
            "| 250 us | 3270 / 3771 | 3375 / 3771 | +3.2% | +0.0% |",
        ] {
            assert!(text.contains(row), "no `{row}` in:\n{text}");
        }
        // A figure the data lacks is a dash, not a guess.
        assert!(text.contains("| `V` | - |"), "{text}");
        // The table's header and alignment row.
        assert!(text.contains(
            "| device time | queued runs/s | model T2 runs/s | queued / model | E[max] runs/s | queued / E[max] |\n|---:|---:|---:|---:|---:|---:|\n\n"
        ), "an empty table keeps its header: {text}");
    }

    #[test]
    fn the_arm_tables_render_a_row_per_arm_with_unmeasured_figures_as_dashes() {
        let data = json!({ "arms": [{
            "device_us": 100, "arm": "queued + on-stream copies + workers", "runs_per_s": 3204.4,
            "busy_us": 285.31, "mean_gap_us": 26.4, "median_gap_us": 9.94, "p99_gap_us": 127.8,
            "host_us": null, "queued_launches": 298,
        }]});
        assert!(arm_tables(&data).contains(
            "| 100 us | queued + on-stream copies + workers | 3204 | 285.3 | 26.4 | 9.9 | 127.8 | - | 298 |"
        ));
    }

    #[test]
    fn a_region_is_replaced_between_its_markers_and_the_rest_is_left_alone() {
        let begin = "<!-- docs/data/bench.json: begin (rendered by `cargo xtask codegen`) -->";
        let end = "<!-- docs/data/bench.json: end -->";
        let doc = format!("# P\n\nBy hand.\n\n{begin}\n\nold\n\n{end}\n\nAlso by hand.\n");
        let once = splice(&doc, "bench", "new\n").unwrap();
        assert_eq!(once, format!("# P\n\nBy hand.\n\n{begin}\n\nnew\n\n{end}\n\nAlso by hand.\n"));
        assert_eq!(splice(&once, "bench", "new").unwrap(), once, "the same text changes nothing");
        let missing = splice("# P\n", "bench", "new").unwrap_err();
        assert!(missing.contains("has no region"), "{missing}");
    }

    #[test]
    fn a_data_file_reads_back_as_written_with_a_line_per_row() {
        let data = bench_fixture();
        let text = to_text(&data);
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), data);
        // One row a line, one setting a line.
        let rows = ["\n    {\"benchmark\":\"status_latch::decode\",", "\n    \"repeat\": 3\n"];
        crate::testkit::assert_contains(&text, &rows);
    }

    #[test]
    fn the_machine_line_says_whether_an_idle_cpu_halts_at_once() {
        assert_eq!(
            describe_idle("haltpoll", Some("0\n")),
            "cpuidle haltpoll: an idle CPU halts at once, with no guest polling"
        );
        assert_eq!(
            describe_idle("haltpoll", Some("200000")),
            "cpuidle haltpoll: an idle CPU polls up to 200000 ns before it halts"
        );
        assert_eq!(describe_idle("intel_idle", None), "cpuidle intel_idle");
    }

    #[test]
    fn dates_come_out_in_the_civil_calendar() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        // 2000-02-29 12:34 UTC, a leap day.
        assert_eq!(utc_date(951_827_640), "2000-02-29 12:34 UTC");
    }
}
