//! Roots (paths, URIs, globs, lists) to the segments of each partition.
