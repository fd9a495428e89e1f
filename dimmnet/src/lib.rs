//! Emulated DIMMnet-1 (work in progress).
