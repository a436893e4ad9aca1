//! Which of an engine's filters a scan can take: predicates on `topic`,
//! `partition`, `offset` and `timestamp` become a [`RecordFilter`] (folders
//! kept by name, offset and time bounds), and each is either *exact* (the
//! scan returns only matching rows: the engine may drop it) or only narrows
//! the read (`offset IN (...)`: a range holding the values), or is not
//! pushable at all (other columns, `!=` on offsets...), left to the engine.
//!
//! The rules of the Python source's `kafkabatch.spark.pushdown`, over a small
//! [`Predicate`] the JVM source builds from Spark's V2 predicates (column,
//! operator, literal; `NOT` of one predicate; `IN`). Spark hands the AND of
//! its predicates as a list: [`translate`] takes the list.

use std::collections::BTreeSet;

use super::options::parse_timestamp_us;
use crate::prune::HeaderBounds;

/// A literal of a predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Literal {
    Int(i64),
    Str(String),
    /// A timestamp (Spark's `TimestampType`), microseconds since the epoch.
    TimestampUs(i64),
    Bool(bool),
    Null,
    /// Anything else (doubles, binary...): never pushed.
    Other,
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    StartsWith,
    EndsWith,
    Contains,
}

impl Op {
    /// The operator of `NOT (column op value)` on a column that is never null.
    pub fn negated(self) -> Option<Op> {
        Some(match self {
            Op::Eq => Op::Ne,
            Op::Gt => Op::Le,
            Op::Ge => Op::Lt,
            Op::Lt => Op::Ge,
            Op::Le => Op::Gt,
            Op::In => Op::NotIn,
            _ => return None,
        })
    }
}

/// One of the engine's predicates, as the scan sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Predicate {
    /// `column op value` (`=` and `<=>` are both [`Op::Eq`]).
    Compare {
        column: String,
        op: Op,
        value: Literal,
    },
    /// `column IN (values)`.
    In {
        column: String,
        values: Vec<Literal>,
    },
    IsNull {
        column: String,
    },
    IsNotNull {
        column: String,
    },
    /// `NOT` of one predicate (a `NOT` of a `NOT` is not pushed).
    Not(Box<Predicate>),
    /// Anything else (`OR`, other functions): never pushed.
    Other,
}

/// Why a predicate is left to the engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not pushable: {0}")]
pub struct NotPushable(pub String);

/// Columns the scan always fills (no nulls; a message without a timestamp has -1 ms).
const NEVER_NULL: [&str; 5] = ["topic", "partition", "offset", "timestamp", "timestampType"];

/// A literal of a name predicate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum NameValue {
    Topic(String),
    Partition(i64),
}

/// A predicate on `topic` or `partition`, decided per folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamePredicate {
    /// `topic` or `partition`.
    pub column: String,
    pub op: Op,
    /// One value, or the set of `IN`/`NOT IN`.
    pub values: BTreeSet<NameValue>,
}

/// The AND of predicates on `topic`, `partition`, `offset` and `timestamp`:
/// name predicates, half-open offset and time ranges, or a contradiction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordFilter {
    pub names: Vec<NamePredicate>,
    pub start_offset: Option<i64>,
    pub end_offset: Option<i64>,
    pub start_ts_us: Option<i64>,
    pub end_ts_us: Option<i64>,
    /// No record can match.
    pub nothing: bool,
}

fn max_of(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn min_of(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl RecordFilter {
    /// Both filters.
    pub fn and(mut self, other: RecordFilter) -> RecordFilter {
        self.names.extend(other.names);
        RecordFilter {
            names: self.names,
            start_offset: max_of(self.start_offset, other.start_offset),
            end_offset: min_of(self.end_offset, other.end_offset),
            start_ts_us: max_of(self.start_ts_us, other.start_ts_us),
            end_ts_us: min_of(self.end_ts_us, other.end_ts_us),
            nothing: self.nothing || other.nothing,
        }
    }

    /// Whether the folder `<topic>-<partition>` could hold a match.
    pub fn keeps(&self, topic: &str, partition: i64) -> bool {
        if self.nothing {
            return false;
        }
        self.names.iter().all(|p| {
            let here = if p.column == "topic" {
                NameValue::Topic(topic.to_string())
            } else {
                NameValue::Partition(partition)
            };
            let Some(first) = p.values.iter().next() else {
                // an empty IN / NOT IN
                return p.op == Op::NotIn;
            };
            let text = |v: &NameValue| match v {
                NameValue::Topic(t) => t.clone(),
                NameValue::Partition(p) => p.to_string(),
            };
            match p.op {
                Op::Eq => here == *first,
                Op::Ne => here != *first,
                Op::Lt => here < *first,
                Op::Le => here <= *first,
                Op::Gt => here > *first,
                Op::Ge => here >= *first,
                Op::In => p.values.contains(&here),
                Op::NotIn => !p.values.contains(&here),
                Op::StartsWith => topic.starts_with(&text(first)),
                Op::EndsWith => topic.ends_with(&text(first)),
                Op::Contains => topic.contains(&text(first)),
            }
        })
    }

    /// These offset and time ranges, intersected with `base` (a scan's own bounds).
    pub fn bounds(&self, base: &HeaderBounds) -> HeaderBounds {
        HeaderBounds {
            start_offset: max_of(self.start_offset, base.start_offset),
            end_offset: min_of(self.end_offset, base.end_offset),
            start_ts_us: max_of(self.start_ts_us, base.start_ts_us),
            end_ts_us: min_of(self.end_ts_us, base.end_ts_us),
        }
    }

    /// One predicate `column op values` (one value unless `IN`/`NOT IN`), as
    /// the Python package's `RecordFilter.where` takes it.
    pub fn single(column: &str, op: Op, values: &[Literal]) -> Result<RecordFilter, NotPushable> {
        let text = || NotPushable(format!("{column} {op:?} {values:?}"));
        let set = matches!(op, Op::In | Op::NotIn);
        if !set && values.len() != 1 {
            return Err(text());
        }
        match column {
            "topic" | "partition" => {
                if column == "partition" && matches!(op, Op::StartsWith | Op::EndsWith | Op::Contains) {
                    return Err(text());
                }
                let mut out = BTreeSet::new();
                for v in values {
                    out.insert(match (column, v) {
                        ("topic", Literal::Str(s)) => NameValue::Topic(s.clone()),
                        ("partition", Literal::Int(n)) => NameValue::Partition(*n),
                        _ => return Err(text()),
                    });
                }
                Ok(RecordFilter {
                    names: vec![NamePredicate {
                        column: column.to_string(),
                        op,
                        values: out,
                    }],
                    ..Default::default()
                })
            }
            "offset" | "timestamp" => {
                if matches!(op, Op::Ne | Op::NotIn | Op::StartsWith | Op::EndsWith | Op::Contains) {
                    return Err(text());
                }
                let mut numbers = Vec::with_capacity(values.len());
                for v in values {
                    numbers.push(match (column, v) {
                        ("offset", Literal::Int(n)) => *n,
                        ("timestamp", Literal::TimestampUs(us)) => *us,
                        ("timestamp", Literal::Str(s)) => parse_timestamp_us(s).ok_or_else(text)?,
                        _ => return Err(text()),
                    });
                }
                let (lo, hi) = if op == Op::In {
                    let (Some(lo), Some(hi)) = (numbers.iter().min(), numbers.iter().max()) else {
                        return Ok(RecordFilter {
                            nothing: true,
                            ..Default::default()
                        });
                    };
                    // a range holding them all: not exact
                    (Some(*lo), Some(hi.checked_add(1).ok_or_else(text)?))
                } else {
                    let n = numbers[0];
                    let next = || n.checked_add(1).ok_or_else(text);
                    match op {
                        Op::Eq => (Some(n), Some(next()?)),
                        Op::Lt => (None, Some(n)),
                        Op::Le => (None, Some(next()?)),
                        Op::Gt => (Some(next()?), None),
                        Op::Ge => (Some(n), None),
                        _ => return Err(text()),
                    }
                };
                Ok(if column == "offset" {
                    RecordFilter {
                        start_offset: lo,
                        end_offset: hi,
                        ..Default::default()
                    }
                } else {
                    RecordFilter {
                        start_ts_us: lo,
                        end_ts_us: hi,
                        ..Default::default()
                    }
                })
            }
            _ => Err(text()),
        }
    }
}

/// One predicate as `(RecordFilter, exact)`: `exact` when applying the
/// filter decides the predicate by itself (the engine may drop it).
pub fn filter_of(predicate: &Predicate) -> Result<(RecordFilter, bool), NotPushable> {
    let (inner, negated) = match predicate {
        Predicate::Not(child) => (child.as_ref(), true),
        p => (p, false),
    };
    let other = || NotPushable(format!("{predicate:?}"));
    let (column, op, values): (&str, Op, Vec<Literal>) = match inner {
        Predicate::IsNull { column } | Predicate::IsNotNull { column } => {
            if !NEVER_NULL.contains(&column.as_str()) {
                return Err(other());
            }
            let always_true = matches!(inner, Predicate::IsNotNull { .. }) != negated;
            let filter = RecordFilter {
                nothing: !always_true,
                ..Default::default()
            };
            return Ok((filter, true));
        }
        Predicate::Compare { column, op, value } => {
            if matches!(op, Op::In | Op::NotIn) {
                return Err(other());
            }
            (column, *op, vec![value.clone()])
        }
        Predicate::In { column, values } => (column, Op::In, values.clone()),
        Predicate::Not(_) | Predicate::Other => return Err(other()),
    };
    // comparing with NULL: the engine folds these; leave them to it
    if values.contains(&Literal::Null) {
        return Err(other());
    }
    let op = if negated { op.negated().ok_or_else(other)? } else { op };
    let filter = RecordFilter::single(column, op, &values)?;
    let exact = !(matches!(column, "offset" | "timestamp") && op == Op::In);
    Ok((filter, exact))
}

/// The AND of `predicates` as one filter, and the positions of those the
/// engine must still evaluate (not pushable, or not decided exactly).
pub fn translate(predicates: &[Predicate]) -> (RecordFilter, Vec<usize>) {
    let mut filter = RecordFilter::default();
    let mut rest = Vec::new();
    for (i, p) in predicates.iter().enumerate() {
        match filter_of(p) {
            Ok((f, exact)) => {
                filter = filter.and(f);
                if !exact {
                    rest.push(i);
                }
            }
            Err(_) => rest.push(i),
        }
    }
    (filter, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(column: &str, op: Op, value: Literal) -> Predicate {
        Predicate::Compare {
            column: column.into(),
            op,
            value,
        }
    }

    #[test]
    fn the_python_sources_rules() {
        // the module example of kafkabatch.spark.pushdown
        let (f, rest) = translate(&[
            cmp("topic", Op::Eq, Literal::Str("orders".into())),
            cmp("offset", Op::Ge, Literal::Int(100)),
        ]);
        assert!(rest.is_empty());
        assert_eq!(f.start_offset, Some(100));
        assert!(f.keeps("orders", 3) && !f.keeps("clicks", 3));

        // IN on offsets narrows but is not exact; on names it is
        let (f, rest) = translate(&[
            Predicate::In {
                column: "offset".into(),
                values: vec![Literal::Int(7), Literal::Int(3)],
            },
            Predicate::In {
                column: "partition".into(),
                values: vec![Literal::Int(1), Literal::Int(2)],
            },
        ]);
        assert_eq!((f.start_offset, f.end_offset, rest), (Some(3), Some(8), vec![0]));
        assert!(f.keeps("t", 2) && !f.keeps("t", 0));

        // NOT on never-null columns
        let not = |p| Predicate::Not(Box::new(p));
        let (f, exact) = filter_of(&not(cmp("timestamp", Op::Lt, Literal::TimestampUs(5_000)))).unwrap();
        assert_eq!((f.start_ts_us, f.end_ts_us, exact), (Some(5_000), None, true));
        let (f, _) = filter_of(&not(Predicate::In {
            column: "topic".into(),
            values: vec![Literal::Str("a".into())],
        }))
        .unwrap();
        assert!(!f.keeps("a", 0) && f.keeps("b", 0));
        assert!(
            filter_of(&not(cmp("offset", Op::Eq, Literal::Int(5)))).is_err(),
            "!= on offsets"
        );
        assert!(filter_of(&not(cmp("topic", Op::StartsWith, Literal::Str("a".into())))).is_err());
        assert!(filter_of(&not(not(cmp("offset", Op::Eq, Literal::Int(5))))).is_err());

        // IS NULL / IS NOT NULL
        let is_null = |c: &str| Predicate::IsNull { column: c.into() };
        assert_eq!(
            filter_of(&is_null("offset")).unwrap(),
            (
                RecordFilter {
                    nothing: true,
                    ..Default::default()
                },
                true
            )
        );
        assert_eq!(
            filter_of(&not(is_null("timestampType"))).unwrap(),
            (RecordFilter::default(), true)
        );
        assert!(filter_of(&is_null("key")).is_err());

        // literals of the wrong type, NULL, other columns, OR
        for p in [
            cmp("offset", Op::Eq, Literal::Str("5".into())),
            cmp("partition", Op::Eq, Literal::Bool(true)),
            cmp("timestamp", Op::Ge, Literal::Int(5)),
            cmp("offset", Op::Ge, Literal::Null),
            cmp("value", Op::Eq, Literal::Str("x".into())),
            cmp("partition", Op::Contains, Literal::Int(1)),
            Predicate::Other,
        ] {
            assert!(filter_of(&p).is_err(), "{p:?}");
        }
        // timestamps as ISO text; == and <= make half-open ranges
        let (f, _) = filter_of(&cmp("timestamp", Op::Le, Literal::Str("2023-11-14T22:13:20Z".into()))).unwrap();
        assert_eq!(f.end_ts_us, Some(1_700_000_000_000_001));
        let (f, _) = filter_of(&cmp("offset", Op::Eq, Literal::Int(9))).unwrap();
        assert_eq!((f.start_offset, f.end_offset), (Some(9), Some(10)));
        // an empty IN matches nothing
        let (f, _) = filter_of(&Predicate::In {
            column: "offset".into(),
            values: vec![],
        })
        .unwrap();
        assert!(f.nothing && !f.keeps("t", 0));
        // ANDs intersect
        let (f, rest) = translate(&[
            cmp("offset", Op::Ge, Literal::Int(10)),
            cmp("offset", Op::Lt, Literal::Int(20)),
            cmp("offset", Op::Gt, Literal::Int(12)),
            cmp("key", Op::Eq, Literal::Str("k".into())),
        ]);
        assert_eq!((f.start_offset, f.end_offset, rest), (Some(13), Some(20), vec![3]));
        let base = HeaderBounds {
            start_offset: Some(15),
            ..Default::default()
        };
        assert_eq!(f.bounds(&base).start_offset, Some(15));
    }

    #[test]
    fn a_scan_with_the_pushed_filter_returns_the_rows_that_match() {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};

        use crate::generate::{Kind, PartitionConfig, PartitionGenerator};
        use crate::scan::Scan;

        let dir = std::env::temp_dir().join(format!("kb-pushdown-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (topic, partition, kind) in [("orders", 0, Kind::Orders), ("clicks", 2, Kind::Clicks)] {
            let mut cfg = PartitionConfig::new(dir.join(format!("{topic}-{partition}")), topic, partition, kind);
            cfg.target_bytes = 150 << 10;
            cfg.segment_bytes = 40 << 10;
            let mut g = PartitionGenerator::new(cfg).unwrap();
            g.step(u64::MAX).unwrap();
            g.finish().unwrap();
        }
        let root = dir.to_str().unwrap();
        type Row = (String, i32, i64, i64);
        let rows = |scan: Scan| -> Vec<Row> {
            let mut out = Vec::new();
            for b in scan.reader().unwrap() {
                let b = b.unwrap();
                let (t, p) = (b.column(2).as_string::<i32>(), b.column(3).as_primitive::<Int32Type>());
                let (o, ts) = (
                    b.column(4).as_primitive::<Int64Type>(),
                    b.column(5).as_primitive::<TimestampMicrosecondType>(),
                );
                for i in 0..b.num_rows() {
                    out.push((t.value(i).to_string(), p.value(i), o.value(i), ts.value(i)));
                }
            }
            out
        };
        let all = rows(Scan::new([root]));
        let mut stamps: Vec<i64> = all
            .iter()
            .filter(|r| r.0 == "orders" && r.2 >= 100)
            .map(|r| r.3)
            .collect();
        stamps.sort_unstable();
        let mid = stamps[stamps.len() / 2];
        let predicates = [
            cmp("topic", Op::Eq, Literal::Str("orders".into())),
            cmp("offset", Op::Ge, Literal::Int(100)),
            cmp("timestamp", Op::Lt, Literal::TimestampUs(mid)),
            cmp("key", Op::Eq, Literal::Str("k".into())),
        ];
        let (filter, rest) = translate(&predicates);
        assert_eq!(rest, [3]);
        let want: Vec<Row> = all
            .iter()
            .filter(|r| r.0 == "orders" && r.2 >= 100 && r.3 < mid)
            .cloned()
            .collect();
        assert!(!want.is_empty() && want.len() < all.len());
        assert_eq!(rows(Scan::new([root]).record_filter(filter)), want);
        let (nothing, _) = translate(&[cmp("offset", Op::Lt, Literal::Int(0))]);
        assert!(rows(Scan::new([root]).record_filter(nothing)).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
