//! Executes lane effects with ACL on a real Ascend NPU.
