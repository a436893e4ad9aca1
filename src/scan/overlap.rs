//! The overlap rule: every offset read once when copies overlap.
