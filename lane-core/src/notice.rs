//! Device fault notices (L-19): the driver's late report of a device exception. A notice
//! decides no run; one that names this lane's device and stream makes the device suspect.

use core::fmt;

use status_latch::AclCode;

/// A device fault notice as the driver reports it: a logical device, a stream id (the number
/// `aclrtStreamGetId` gave the stream) and a code, up to seconds after the fault.
///
/// It says which streams, not which run (membership, not provenance), so the lane lets its
/// launched runs reach their own verdicts before it recovers the device. Whether a notice
/// names this lane's streams is the backend's to say: only it knows the stream ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FaultNotice {
    /// The logical device id the notice names.
    pub device: u32,
    /// The stream id the notice names.
    pub stream_id: u32,
    /// The fault's code.
    pub code: AclCode,
}

impl fmt::Display for FaultNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "device fault notice on device {} stream {}: ACL {} {}",
            self.device,
            self.stream_id,
            self.code.raw(),
            self.code.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_prints_its_device_stream_and_code() {
        let notice = FaultNotice {
            device: 1,
            stream_id: 7,
            code: AclCode::from_raw(507_015).unwrap_or(AclCode::Unknown(507_015)),
        };
        let text = notice.to_string();
        assert!(text.contains("device 1 stream 7"), "{text}");
        assert!(text.contains("507015"), "{text}");
    }
}
