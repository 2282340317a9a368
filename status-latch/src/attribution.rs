//! Whose code a synchronize returned (SPEC L-8a): [`attribute`].
//!
//! A stream synchronize returns the first code its stream holds, whichever run left it, and
//! it waits for every run queued on the pair (device-truth §1). A run whose AICPU kernel
//! returned a fatal status leaves that code sticky on the AICPU stream; its own record says
//! so. So a code is charged by evidence, never by who asked: the AICPU stream's sticky mark,
//! then the records of the runs queued behind that the synchronize covered. Only an AICPU
//! code can be a fatal status; an AICore code and the synchronize's own timeout are never
//! explained. The rows ([`AttributionRule`]) are tried in order, first match wins, and are
//! rendered into `docs/status-codes.md`.

use core::fmt;

use crate::codes::AclCode;
use crate::record::Record;
use crate::verdict::{DeviceVerdict, RecordRead};

/// The record read of a run the synchronize covered: a run queued behind the awaited one.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CoveredRead {
    /// The covered run.
    pub run: u64,
    /// Its record, read after the synchronize returned and decoded for its own epoch.
    pub record: RecordRead,
}

impl CoveredRead {
    /// Whether its record reports an error: its fatal status may be the code.
    pub const fn reports_error(&self) -> bool {
        matches!(self.record, RecordRead::Read(Record::Error { .. }))
    }
}

/// One row of the attribution, in the order [`attribute`] tries them.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum AttributionRule {
    /// A stream's synchronize timed out.
    Timeout,
    /// The AICPU stream holds an earlier run's sticky code.
    StickyMark,
    /// A covered run's record reports an error.
    CoveredError,
    /// The AICPU code is explained, but the AICore stream returned a code of its own.
    AicoreBeside,
    /// Nothing explains the code.
    Charged,
}

impl AttributionRule {
    /// Every row, in the order [`attribute`] tries them.
    pub const ALL: [Self; 5] =
        [Self::Timeout, Self::StickyMark, Self::CoveredError, Self::AicoreBeside, Self::Charged];

    /// The row: its name, the evidence it matches, and what it concludes.
    pub const fn row(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Self::Timeout => (
                "timeout",
                "a stream's synchronize returned its timeout (507046)",
                "the awaited run's code: work may still be running (SPEC §5.4), so nothing explains it",
            ),
            Self::StickyMark => (
                "sticky-mark",
                "only the AICPU stream returned a code, and it holds an earlier run's sticky code (that \
                 run's record reported an error)",
                "that run's code: the awaited run is judged on a clean device verdict",
            ),
            Self::CoveredError => (
                "covered-error",
                "only the AICPU stream returned a code, and a covered run's record reports an error",
                "the earliest such run's code: the awaited run is judged on a clean device verdict",
            ),
            Self::AicoreBeside => (
                "aicore-beside",
                "the AICPU code is explained as above, but the AICore stream returned a code too",
                "the AICore code is the awaited run's: an AICore code is no run's fatal status",
            ),
            Self::Charged => (
                "charged",
                "anything else: nothing explains the code",
                "the awaited run's code (the AICPU stream's first): it is the earliest covered run without a \
                 published record; the poison that follows takes the runs behind it down (L-10)",
            ),
        }
    }

    /// The row's short name.
    pub const fn name(self) -> &'static str {
        self.row().0
    }
}

impl fmt::Display for AttributionRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whose code the device verdict returned (L-8a): the first row of [`AttributionRule::ALL`]
/// that matches, and the attributed verdict: [`DeviceVerdict::LeftBy`] when the code is
/// another run's, else the awaited run's own ([`DeviceVerdict::Fault`] with no covered run,
/// [`DeviceVerdict::Covering`] with some).
///
/// `aicpu` and `aicore` are what each stream's synchronize returned
/// ([`DeviceVerdict::Returned`]); `sticky` the run whose fatal status the AICPU stream held
/// before the awaited run was judged; `covered` the record reads of the runs queued behind
/// the awaited one, in submission order. Total and pure; with no code at all it is `Clean`.
pub fn attribute(
    aicpu: Option<AclCode>,
    aicore: Option<AclCode>,
    sticky: Option<u64>,
    covered: &[CoveredRead],
) -> (AttributionRule, DeviceVerdict) {
    use AttributionRule as R;
    let behind = u8::try_from(covered.len()).unwrap_or(u8::MAX);
    let charge = |code: AclCode| {
        if behind == 0 {
            DeviceVerdict::Fault(code)
        } else {
            DeviceVerdict::Covering { code, behind }
        }
    };
    let timeout = AclCode::RtStreamSyncTimeout;
    if aicpu == Some(timeout) || aicore == Some(timeout) {
        return (R::Timeout, charge(timeout));
    }
    let Some(code) = aicpu else {
        return match aicore {
            Some(own) => (R::Charged, charge(own)),
            None => (R::Charged, DeviceVerdict::Clean),
        };
    };
    let explained = match sticky {
        Some(left_by) => Some((R::StickyMark, left_by)),
        None => {
            covered.iter().find(|read| read.reports_error()).map(|read| (R::CoveredError, read.run))
        }
    };
    match (explained, aicore) {
        (Some(_), Some(own)) => (R::AicoreBeside, charge(own)),
        (Some((rule, left_by)), None) => (rule, DeviceVerdict::LeftBy { code, left_by }),
        (None, _) => (R::Charged, charge(code)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::RuntimeCode;
    use crate::record::RecordSource;

    const STICKY: AclCode = AclCode::RtAicpuException;

    fn covered(run: u64, record: Record) -> CoveredRead {
        CoveredRead { run, record: RecordRead::Read(record) }
    }

    fn error() -> Record {
        Record::Error {
            code: RuntimeCode::ScopeDeadlock,
            source: RecordSource::Header,
            payload_len: 0,
        }
    }

    #[test]
    fn a_sticky_mark_explains_an_aicpu_code_and_names_the_run_that_left_it() {
        assert_eq!(
            attribute(Some(STICKY), None, Some(5), &[]),
            (AttributionRule::StickyMark, DeviceVerdict::LeftBy { code: STICKY, left_by: 5 })
        );
    }

    #[test]
    fn the_earliest_covered_error_explains_an_aicpu_code() {
        let reads = [covered(6, Record::Ok), covered(7, error()), covered(8, error())];
        assert_eq!(
            attribute(Some(STICKY), None, None, &reads),
            (AttributionRule::CoveredError, DeviceVerdict::LeftBy { code: STICKY, left_by: 7 })
        );
    }

    #[test]
    fn an_unexplained_code_is_the_awaited_runs_and_says_how_many_runs_it_covered() {
        let reads = [covered(6, Record::Ok)];
        assert_eq!(
            attribute(Some(STICKY), None, None, &reads),
            (AttributionRule::Charged, DeviceVerdict::Covering { code: STICKY, behind: 1 })
        );
        assert_eq!(
            attribute(None, Some(AclCode::RtAicoreException), None, &[]),
            (AttributionRule::Charged, DeviceVerdict::Fault(AclCode::RtAicoreException))
        );
    }

    #[test]
    fn an_aicore_code_beside_an_explained_aicpu_code_is_the_awaited_runs() {
        assert_eq!(
            attribute(Some(STICKY), Some(AclCode::RtAicoreException), Some(5), &[]),
            (AttributionRule::AicoreBeside, DeviceVerdict::Fault(AclCode::RtAicoreException))
        );
    }

    #[test]
    fn a_synchronize_timeout_is_never_explained() {
        let reads = [covered(6, error())];
        assert_eq!(
            attribute(Some(AclCode::RtStreamSyncTimeout), None, Some(4), &reads).1,
            DeviceVerdict::Covering { code: AclCode::RtStreamSyncTimeout, behind: 1 }
        );
        assert_eq!(
            attribute(None, Some(AclCode::RtStreamSyncTimeout), Some(4), &[]).0,
            AttributionRule::Timeout
        );
    }

    #[test]
    fn an_unpublished_or_unread_covered_record_explains_nothing() {
        let reads = [
            covered(6, Record::NeverPublished { stamp: 0 }),
            CoveredRead { run: 7, record: RecordRead::Failed(AclCode::RtParamInvalid) },
        ];
        assert_eq!(attribute(Some(STICKY), None, None, &reads).0, AttributionRule::Charged);
    }
}
