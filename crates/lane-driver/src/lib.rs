//! The one driver loop that executes lane-core effects through an ACL-shaped backend trait.
