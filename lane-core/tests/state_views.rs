//! The read-only views of a lane's state that model checkers and tools use:
//! `Lane::fingerprint` (state identity) and `Lane::publication_phase`.

use lane_core::publication::PublicationPhase;
use lane_core::testkit::Succeed;
use lane_core::{CodeRef, Event, Lane, Profile, RunId, RunRequest, Timestamp};

const T: Timestamp = Timestamp(0);

#[test]
fn equal_histories_give_equal_fingerprints_and_any_step_changes_it() {
    let (mut a, mut b) = (Lane::new(Profile::a2a3()), Lane::new(Profile::a2a3()));
    assert_eq!(a.fingerprint(), b.fingerprint());
    assert_ne!(
        a.fingerprint(),
        Lane::new(Profile::depth_one()).fingerprint(),
        "the profile counts"
    );
    let before = a.fingerprint();
    a.submit(T, RunRequest::new()).unwrap();
    assert_ne!(a.fingerprint(), before, "an accepted run counts");
    b.submit(T, RunRequest::new()).unwrap();
    assert_eq!(a.fingerprint(), b.fingerprint());
    // An effect taken is no longer part of the state.
    let effect = a.poll_effect().expect("a prepare");
    assert_ne!(a.fingerprint(), b.fingerprint());
    let _ = b.poll_effect();
    assert_eq!(a.fingerprint(), b.fingerprint());
    // A rejected event changes nothing, so it does not change the fingerprint either.
    let stale = Event::Finalised { run: RunId(9), lease: effect_lease(effect) };
    assert!(a.handle(T, stale).is_err());
    assert_eq!(a.rejected_events(), 1);
    assert_eq!(a.fingerprint(), b.fingerprint());
    assert!(a.fingerprint().as_str().contains("\"a2a3\""), "the text names the profile");
}

#[test]
fn a_publication_is_seen_waiting_then_uploading_then_gone_once_delivered() {
    let mut lane = Lane::new(Profile::a2a3());
    lane.submit(T, RunRequest::new()).unwrap();
    let publication = lane.publish(T, CodeRef(3)).unwrap();
    assert_eq!(lane.publication_phase(publication), Some(PublicationPhase::Waiting));
    assert_eq!(lane.publication_phase(lane_core::PublicationId(99)), None);
    let mut backend = Succeed::new();
    // Answer everything but the upload: the run finishes, the upload is asked for.
    let mut upload = None;
    while let Some(effect) = lane.poll_effect() {
        if matches!(effect, lane_core::Effect::UploadCode { .. }) {
            upload = Some(effect);
        } else if let Some(event) = backend.answer(effect) {
            lane.handle(T, event).unwrap();
        }
    }
    assert_eq!(lane.publication_phase(publication), Some(PublicationPhase::Uploading));
    let uploaded = backend.answer(upload.expect("an upload"));
    lane.handle(T, uploaded.expect("an upload is answered")).unwrap();
    assert_eq!(lane.publication_phase(publication), None, "delivered");
}

/// The lease an effect names.
fn effect_lease(effect: lane_core::Effect) -> lane_core::Lease {
    match effect {
        lane_core::Effect::PrepareRun { lease, .. } => lease,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_lane_is_idle_only_with_nothing_pending_and_lost_only_after_recovery_failed() {
    let mut lane = Lane::new(Profile::a2a3());
    assert!(lane.is_idle());
    assert!(!lane.device_lost());
    lane.submit(T, RunRequest::new()).unwrap();
    assert!(!lane.is_idle());
    Succeed::new().drive(&mut lane, T).unwrap();
    assert!(lane.is_idle());
    assert!(!lane.device_lost(), "a healthy life loses nothing");
}
