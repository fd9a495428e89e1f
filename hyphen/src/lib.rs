//! Emulated HyphenLink and AP1000 buffer receiving (work in progress).
