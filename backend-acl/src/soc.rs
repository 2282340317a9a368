//! The SoC name to profile mapping of the probe.

use lane_core::Profile;

/// The profile for a SoC name from `aclrtGetSocName`: a2a3 for `Ascend910B*` (910B) and
/// `Ascend910_93*` (910C), a5 for `Ascend950*`; `None` for any other name (the caller must
/// then pass a profile explicitly).
#[must_use]
pub fn profile_for_soc(name: &str) -> Option<Profile> {
    if name.starts_with("Ascend910B") || name.starts_with("Ascend910_93") {
        Some(Profile::a2a3())
    } else if name.starts_with("Ascend950") {
        Some(Profile::a5())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_910b_and_910c_families_get_a2a3() {
        for name in ["Ascend910B1", "Ascend910B4", "Ascend910_9392", "Ascend910_9382"] {
            assert_eq!(profile_for_soc(name), Some(Profile::a2a3()), "{name}");
        }
    }

    #[test]
    fn the_950_family_gets_a5() {
        for name in ["Ascend950PR_9599", "Ascend950DT_9591"] {
            assert_eq!(profile_for_soc(name), Some(Profile::a5()), "{name}");
        }
    }

    #[test]
    fn other_names_get_no_profile() {
        // The old 910 (no B), 310 inference cards and near misses are not a2a3 or a5.
        for name in ["Ascend910A", "Ascend910", "Ascend310P3", "ascend910B1", "", "Ascend95"] {
            assert_eq!(profile_for_soc(name), None, "{name}");
        }
    }
}
