//! The overlap rule: when a partition's segments come from several places (a
//! bucket and a broker log dir, two uploads of the same offsets), every offset
//! is read from exactly one segment.
//!
//! Segments are taken in base-offset order (at equal base offsets the one known
//! to hold more offsets first, then broker log dirs before LocalTieredStorage
//! before Aiven remote storage, then by path); each returns its offsets from
//! above everything returned before it; a segment holding nothing new is
//! dropped. A segment whose last offset is unknown (the newest of its folder,
//! with no manifest) yields to the next segment in order at that segment's base
//! offset.
//!
//! ```
//! use kafkabatch::scan::overlap::{resolve, Claim};
//! let mut claims = vec![Claim::new(0, Some(99), 2, "s3://b/0.log"), Claim::new(50, None, 0, "/data/50.log")];
//! resolve(&mut claims);
//! assert_eq!((claims[1].floor, claims[1].dropped), (Some(100), false));
//! ```

/// Everything, for a segment whose end is unknown and that nothing follows.
pub const EVERYTHING: i64 = 1 << 62;

/// One segment's place in the overlap rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub base: i64,
    /// The last offset held, `None` when unknown.
    pub end: Option<i64>,
    /// 0 broker log dir, 1 LocalTieredStorage, 2 Aiven remote storage.
    pub rank: u8,
    /// The path, to break ties the same way every time.
    pub key: String,
    /// Offsets below are left to an earlier segment.
    pub floor: Option<i64>,
    /// Offsets at or above are left to a later segment.
    pub stop: Option<i64>,
    pub dropped: bool,
}

impl Claim {
    pub fn new(base: i64, end: Option<i64>, rank: u8, key: impl Into<String>) -> Self {
        Claim {
            base,
            end,
            rank,
            key: key.into(),
            floor: None,
            stop: None,
            dropped: false,
        }
    }

    /// Whether this claim reaches from at or before `offset` to at or past it.
    pub fn covers(&self, offset: i64) -> bool {
        self.base <= offset && self.end.is_none_or(|end| end >= offset)
    }
}

/// Decide, for the claims of one topic-partition, which returns which offsets
/// (`floor`, `stop`, `dropped` set in place).
pub fn resolve(claims: &mut [Claim]) {
    let mut order: Vec<usize> = (0..claims.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |c: &Claim| (c.base, -(c.end.map_or(EVERYTHING as i128, i128::from)), c.rank);
        key(&claims[a])
            .cmp(&key(&claims[b]))
            .then_with(|| claims[a].key.cmp(&claims[b].key))
    });
    let mut covered: Option<i64> = None; // the first offset not yet returned
    for (i, &at) in order.iter().enumerate() {
        let (base, end) = (claims[at].base, claims[at].end);
        if let (Some(c), Some(e)) = (covered, end) {
            if e < c {
                claims[at].dropped = true;
                continue;
            }
        }
        if let Some(c) = covered {
            if c > base {
                claims[at].floor = Some(c);
            }
        }
        match end {
            Some(e) => covered = Some(e.saturating_add(1)),
            None => {
                // Python's `covered or claim.base`: 0 counts as nothing covered.
                let from = base.max(covered.filter(|&c| c != 0).unwrap_or(base));
                match order[i + 1..].iter().map(|&o| claims[o].base).find(|&b| b > from) {
                    Some(later) => {
                        claims[at].stop = Some(later);
                        covered = Some(later);
                    }
                    None => covered = Some(EVERYTHING),
                }
            }
        }
        if let (Some(c), Some(floor)) = (covered, claims[at].floor) {
            if floor >= c {
                claims[at].dropped = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(claims: &[Claim]) -> Vec<(Option<i64>, Option<i64>, bool)> {
        claims.iter().map(|c| (c.floor, c.stop, c.dropped)).collect()
    }

    #[test]
    fn bucket_and_broker_dir() {
        // The bucket holds 0..=99 and 100..=199; the broker dir 150.. (its newest, end unknown).
        let mut claims = vec![
            Claim::new(0, Some(99), 2, "s3://b/0.log"),
            Claim::new(100, Some(199), 2, "s3://b/100.log"),
            Claim::new(150, None, 0, "/d/150.log"),
        ];
        resolve(&mut claims);
        assert_eq!(
            outcome(&claims),
            [(None, None, false), (None, None, false), (Some(200), None, false)]
        );
    }

    #[test]
    fn copies_of_the_same_offsets() {
        let mut claims = vec![
            Claim::new(0, Some(99), 2, "s3://b/0-b.log"),
            Claim::new(0, Some(99), 2, "s3://b/0-a.log"),
            Claim::new(0, Some(49), 0, "/d/0.log"),
            Claim::new(0, None, 1, "/t/0.log"),
        ];
        resolve(&mut claims);
        // The unknown end sorts first and yields to nothing later at a higher base: it takes all.
        assert_eq!(
            outcome(&claims),
            [
                (None, None, true),
                (None, None, true),
                (None, None, true),
                (None, None, false)
            ]
        );
    }

    #[test]
    fn unknown_end_yields_to_the_next_base() {
        let mut claims = vec![
            Claim::new(0, None, 0, "/d/0.log"),
            Claim::new(10, Some(20), 2, "s3://b/10.log"),
        ];
        resolve(&mut claims);
        assert_eq!(outcome(&claims), [(None, Some(10), false), (None, None, false)]);
        assert!(claims[1].covers(20) && !claims[1].covers(21) && claims[0].covers(1 << 40));
    }
}
