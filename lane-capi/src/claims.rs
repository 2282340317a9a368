//! One lane per device id (SPEC L-25, decision 0028): a lane that opens a device id holds its
//! claim until it is destroyed, and a second lane on that id is refused at create, naming the
//! first. A force reset destroys every stream, event and buffer on the device, so two lanes
//! on one id would reset under one another; refusing the second keeps the one reset the one
//! lane's, with no cross-lane protocol to get wrong.

use std::sync::{Mutex, PoisonError};

/// The device ids claimed by live lanes, each with its lane's serial.
static CLAIMED: Mutex<Vec<(i32, u64)>> = Mutex::new(Vec::new());

/// A device id held by one lane; dropping it lets another lane have it.
#[derive(Debug)]
pub(crate) struct DeviceClaim {
    device_id: i32,
    serial: u64,
}

/// Why a device id could not be claimed: the lane that holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Claimed {
    /// The device id.
    pub(crate) device_id: i32,
    /// The serial of the lane that holds it (lanes are numbered from 1 in creation order).
    pub(crate) holder: u64,
}

impl std::fmt::Display for Claimed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "device {} already has a lane (lane {}, the {} this process created): one lane per \
             device id, since a lane's force reset destroys every stream on the device, the \
             other lane's included; destroy that lane first, or give this one another device_id",
            self.device_id,
            self.holder,
            ordinal(self.holder)
        )
    }
}

/// `1st`, `2nd`, `3rd`, `4th`, ...
fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Claims `device_id` for lane `serial`, or names the lane that holds it.
pub(crate) fn claim(device_id: i32, serial: u64) -> Result<DeviceClaim, Claimed> {
    let mut claimed = CLAIMED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(&(_, holder)) = claimed.iter().find(|(id, _)| *id == device_id) {
        return Err(Claimed { device_id, holder });
    }
    claimed.push((device_id, serial));
    Ok(DeviceClaim { device_id, serial })
}

impl Drop for DeviceClaim {
    fn drop(&mut self) {
        let mut claimed = CLAIMED.lock().unwrap_or_else(PoisonError::into_inner);
        claimed.retain(|&entry| entry != (self.device_id, self.serial));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claimed_device_id_is_refused_naming_its_lane_until_the_claim_is_dropped() {
        let first = claim(-41, 7).expect("free");
        let refused = claim(-41, 8).unwrap_err();
        assert_eq!(refused, Claimed { device_id: -41, holder: 7 });
        assert!(refused.to_string().contains("lane 7, the 7th"), "{refused}");
        let other = claim(-42, 8).expect("another id is free");
        drop(first);
        let again = claim(-41, 9).expect("free once dropped");
        drop((other, again));
    }

    #[test]
    fn ordinals_read_as_english() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111].map(ordinal).into();
        assert_eq!(
            got,
            ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]
        );
    }
}
