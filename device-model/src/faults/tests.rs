use super::*;

#[test]
fn a_spec_prints_back_to_itself() {
    for spec in [
        "latch=1@run:3",
        "exception=507015@rate:0.01",
        "hang@run:2,5",
        "stream-create=207008@call:1",
        "reset=507899",
        "prepare-incompatible@rate:0.0025",
        "call:aclrtMalloc=207001@call:2-3",
        "call:aclrtSetDevice=0@call:1-",
        "kernel-exception=507014/engine:aicore",
        "kernel-latch@call:1-2/engine:aicpu/header:ee01",
        "kernel-latch=100@run:2/threads:3,1",
        "copy=507899@call:1",
    ] {
        let rule = FaultRule::parse(spec).unwrap();
        assert_eq!(rule.to_string(), spec);
        assert_eq!(FaultRule::parse(&rule.to_string()).unwrap(), rule);
    }
}

#[test]
fn codes_parse_by_name_and_default_when_omitted() {
    let rule = FaultRule::parse("latch=SCOPE_DEADLOCK@run:1").unwrap();
    assert_eq!(rule.code, FaultCode::Runtime(RuntimeCode::ScopeDeadlock));
    let rule = FaultRule::parse("exception").unwrap();
    assert_eq!(rule.code, FaultCode::Acl(AclCode::RtAicoreException));
    assert_eq!(
        FaultRule::parse("rate=5%").unwrap_err(),
        FaultError::UnknownKind { got: "rate".to_owned() }
    );
}

#[test]
fn bad_specs_name_the_problem_and_the_fix() {
    let msg = |s: &str| FaultRule::parse(s).unwrap_err().to_string();
    assert!(msg("melt").contains("unknown fault kind 'melt'; use one of: stream-create"));
    assert!(msg("hang=5").contains("takes no code"));
    assert!(msg("latch=0").contains("not a runtime latch code"));
    assert!(msg("reset@run:1").contains("does not happen to a run"));
    assert!(msg("hang@rate:2").contains("outside 0..=1"));
    assert!(msg("hang@when:2").contains("bad selector"));
    assert!(msg("hang@call:0").contains("selects no calls"));
}

#[test]
fn a_scheduler_latch_names_its_threads_and_round_trips_through_the_text_form() {
    let rule = FaultRule::parse("latch=SCHEDULER_TIMEOUT@run:2/threads:3,1").unwrap();
    assert_eq!(rule.threads, [3, 1]);
    assert_eq!(
        rule.injected(),
        Injected::Latch(Latched {
            code: RuntimeCode::SchedulerTimeout,
            first_thread: 3,
            bitmap: 0b1010
        })
    );
    assert_eq!(rule.to_string(), "latch=100@run:2/threads:3,1");
    assert_eq!(FaultRule::parse(&rule.to_string()).unwrap(), rule);
}

#[test]
fn threads_are_refused_unless_a_scheduler_code_is_latched_by_distinct_threads() {
    let msg = |spec: &str| FaultRule::parse(spec).unwrap_err().to_string();
    assert!(msg("latch=SCOPE_DEADLOCK/threads:1").contains("scheduler code"));
    assert!(msg("hang/threads:1").contains("scheduler code"));
    assert!(msg("latch=100/threads:1,1").contains("distinct"));
    assert!(msg("latch=100/threads:32").contains("distinct"));
    assert!(msg("latch=100/threads:x").contains("bad selector"));
}

#[test]
fn the_first_installed_rule_that_fires_wins() {
    let mut faults = Faults::new(7);
    faults.install(FaultRule::parse("latch=1@run:2").unwrap());
    faults.install(FaultRule::parse("hang").unwrap());
    assert_eq!(faults.decide(Site::Run, Some(1)), Some(Injected::Hang));
    assert_eq!(
        faults.decide(Site::Run, Some(2)),
        Some(Injected::Latch(Latched {
            code: RuntimeCode::ScopeDeadlock,
            first_thread: 0,
            bitmap: 1
        }))
    );
    assert_eq!(faults.decide(Site::Prepare, Some(2)), None);
    faults.heal();
    assert_eq!(faults.decide(Site::Run, Some(2)), None);
}

#[test]
fn calls_count_per_site_from_one() {
    let mut faults = Faults::new(7);
    faults.install(FaultRule::parse("stream-create@call:2").unwrap());
    assert_eq!(faults.decide(Site::StreamCreate, None), None);
    assert_eq!(faults.decide(Site::Reset, None), None);
    assert!(faults.decide(Site::StreamCreate, None).is_some());
    assert_eq!(faults.decide(Site::StreamCreate, None), None);
}

#[test]
fn rates_are_reproducible_per_seed_and_differ_across_seeds() {
    let draws = |seed| {
        let mut faults = Faults::new(seed);
        faults.install(FaultRule::parse("hang@rate:0.5").unwrap());
        (0..64).map(|_| faults.decide(Site::Run, Some(1)).is_some()).collect::<Vec<_>>()
    };
    assert_eq!(draws(1), draws(1));
    assert_ne!(draws(1), draws(2));
    let fired = draws(1).into_iter().filter(|f| *f).count();
    assert!((16..=48).contains(&fired), "about half of 64 fire, got {fired}");
}

#[test]
fn swarm_derives_the_same_mix_from_the_same_seed() {
    assert_eq!(swarm(42), swarm(42));
    let mixes: Vec<_> = (0..16).map(swarm).collect();
    assert!(mixes.windows(2).any(|w| w[0] != w[1]));
    for rule in mixes.iter().flatten() {
        assert_eq!(FaultRule::parse(&rule.to_string()).as_ref(), Ok(rule));
    }
}
