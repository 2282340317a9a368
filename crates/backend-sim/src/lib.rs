//! A deterministic, fault-injecting simulated Ascend device.
