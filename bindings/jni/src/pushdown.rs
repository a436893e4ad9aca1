//! What a Spark scan pushed into the core: the read's *spec*, a JSON object
//! the Java `KafkaLogScanBuilder` writes once Spark has pushed everything:
//!
//! ```json
//! {"options": {"path": "/data"}, "columns": ["offset", "timestamp"],
//!  "predicates": [{"column": "timestamp", "op": ">=", "literals": [{"timestamp_us": 1700000000000000}]}],
//!  "limit": 10}
//! ```
//!
//! `options` are Spark's options as given (checked by the core); `columns`
//! the pruned read schema's names (absent: all); `limit` a pushed `LIMIT`;
//! `predicates` Spark's V2 predicates only *marshalled* (column, operator,
//! literals; `{"not": p}`, `{"and": [p, ...]}`, `{"other": text}` for the
//! rest): which are pushed, and which exactly, is the core's decision
//! ([`kafkabatch::scan::pushdown`], the Python source's rules).

use jni::objects::{JClass, JString};
use jni::EnvUnowned;
use serde_json::Value;

use kafkabatch::arrow_out::Columns;
use kafkabatch::scan::options::ScanOptions;
use kafkabatch::scan::{filter_of, translate, Literal, Op, Predicate, Scan};

use crate::{entry, options_of, scan_of, Failure};

/// A read as the Java side planned it: options and what Spark pushed.
pub(crate) struct Spec {
    pub(crate) options: ScanOptions,
    columns: Option<Columns>,
    predicates: Vec<Predicate>,
    limit: Option<u64>,
}

fn bad(what: impl std::fmt::Display) -> Failure {
    Failure::Core(format!("a scan spec from the JVM is malformed: {what}"))
}

impl Spec {
    /// The spec's JSON (see the module notes).
    pub(crate) fn parse(json: &str) -> Result<Spec, Failure> {
        let spec: Value = serde_json::from_str(json).map_err(bad)?;
        let options = spec.get("options").ok_or_else(|| bad("no options"))?;
        let options = options_of(&options.to_string())?;
        let columns = match spec.get("columns") {
            None | Some(Value::Null) => None,
            Some(Value::Array(names)) => {
                let mut names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
                if options.internal_topic.is_some() {
                    // the columns internalTopic adds are decoded from key and value (module `internal`)
                    names.retain(|n| crate::internal::is_core_column(n));
                }
                Some(Columns::named(names).map_err(bad)?)
            }
            Some(other) => return Err(bad(format!("columns {other}"))),
        };
        let mut predicates = Vec::new();
        if let Some(list) = spec.get("predicates").and_then(Value::as_array) {
            for p in list {
                conjuncts(p, &mut predicates);
            }
        }
        let limit = spec.get("limit").and_then(Value::as_u64);
        Ok(Spec {
            options,
            columns,
            predicates,
            limit,
        })
    }

    /// Reads `names` too where columns were pruned (typed values checked by the reader).
    pub(crate) fn also_read(&mut self, names: &[&str]) -> Result<(), Failure> {
        if let Some(columns) = self.columns {
            self.columns = Some(columns.union(Columns::named(names.iter().copied()).map_err(bad)?));
        }
        Ok(())
    }

    /// The core's scan of this read: the options' scan, the columns, the
    /// filter the pushable predicates make, and the limit.
    pub(crate) fn scan(&self) -> Result<Scan, Failure> {
        let mut scan = scan_of(&self.options)?;
        if let Some(columns) = self.columns {
            scan = scan.columns(columns);
        }
        if !self.predicates.is_empty() {
            scan = scan.record_filter(translate(&self.predicates).0);
        }
        Ok(scan.limit(self.limit))
    }
}

fn literal_of(value: &Value) -> Literal {
    let Some((kind, v)) = value.as_object().and_then(|o| o.iter().next()) else {
        return Literal::Other;
    };
    match (kind.as_str(), v) {
        ("int", v) => v.as_i64().map_or(Literal::Other, Literal::Int),
        ("str", Value::String(s)) => Literal::Str(s.clone()),
        ("timestamp_us", v) => v.as_i64().map_or(Literal::Other, Literal::TimestampUs),
        ("bool", Value::Bool(b)) => Literal::Bool(*b),
        ("null", _) => Literal::Null,
        _ => Literal::Other,
    }
}

/// Spark's comparison names (`Predicate.name()`) as the core's operators.
fn op_of(name: &str) -> Option<Op> {
    Some(match name {
        "=" | "<=>" => Op::Eq,
        "<>" => Op::Ne,
        "<" => Op::Lt,
        "<=" => Op::Le,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "STARTS_WITH" => Op::StartsWith,
        "ENDS_WITH" => Op::EndsWith,
        "CONTAINS" => Op::Contains,
        _ => return None,
    })
}

/// One marshalled predicate that is not an `AND`.
fn leaf(p: &Value) -> Predicate {
    if let Some(child) = p.get("not") {
        return match child.get("not").or_else(|| child.get("and")) {
            // NOT of NOT, NOT of AND: the core takes NOT of one comparison only
            Some(_) => Predicate::Other,
            None => Predicate::Not(Box::new(leaf(child))),
        };
    }
    let (Some(column), Some(op)) = (
        p.get("column").and_then(Value::as_str),
        p.get("op").and_then(Value::as_str),
    ) else {
        return Predicate::Other;
    };
    let column = column.to_string();
    let literals: Vec<Literal> = p
        .get("literals")
        .and_then(Value::as_array)
        .map(|l| l.iter().map(literal_of).collect())
        .unwrap_or_default();
    match (op, literals.as_slice()) {
        ("IS_NULL", []) => Predicate::IsNull { column },
        ("IS_NOT_NULL", []) => Predicate::IsNotNull { column },
        ("IN", _) => Predicate::In {
            column,
            values: literals,
        },
        (name, [value]) => match op_of(name) {
            Some(op) => Predicate::Compare {
                column,
                op,
                value: value.clone(),
            },
            None => Predicate::Other,
        },
        _ => Predicate::Other,
    }
}

/// The conjuncts of one marshalled predicate (`AND`s flattened), appended to `out`.
fn conjuncts(p: &Value, out: &mut Vec<Predicate>) {
    // a work list, not recursion: the nesting comes from the query
    let mut todo = vec![p];
    while let Some(p) = todo.pop() {
        match p.get("and").and_then(Value::as_array) {
            Some(parts) => todo.extend(parts.iter().rev()),
            None => out.push(leaf(p)),
        }
    }
}

/// How the core takes one of Spark's predicates: 0 not pushed (Spark
/// evaluates it), 1 pushed but only narrowing (Spark still evaluates it),
/// 2 pushed exactly (Spark drops it).
fn pushed(p: &Value) -> u8 {
    let mut parts = Vec::new();
    conjuncts(p, &mut parts);
    let taken: Vec<Option<bool>> = parts
        .iter()
        .map(|part| filter_of(part).ok().map(|(_, exact)| exact))
        .collect();
    if taken.iter().all(|t| *t == Some(true)) {
        2
    } else if taken.iter().any(Option::is_some) {
        1
    } else {
        0
    }
}

/// `String pushPredicates(String predicatesJson)`: for a JSON array of
/// marshalled predicates, a JSON array of how each is taken (see `pushed`).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_pushPredicates<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    predicates: JString<'local>,
) -> JString<'local> {
    entry(&mut env, |env| {
        let list: Value = serde_json::from_str(&predicates.try_to_string(env)?).map_err(bad)?;
        let list = list.as_array().ok_or_else(|| bad("predicates are not an array"))?;
        let taken: Vec<u8> = list.iter().map(pushed).collect();
        let text = serde_json::to_string(&taken).map_err(bad)?;
        Ok(JString::from_str(env, text)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(json: &str) -> u8 {
        pushed(&serde_json::from_str(json).unwrap())
    }

    #[test]
    fn marshalled_predicates_take_the_cores_rules() {
        assert_eq!(taken(r#"{"column":"offset","op":">=","literals":[{"int":5}]}"#), 2);
        assert_eq!(
            taken(r#"{"column":"offset","op":"IN","literals":[{"int":5},{"int":9}]}"#),
            1
        );
        assert_eq!(taken(r#"{"column":"key","op":"=","literals":[{"str":"k"}]}"#), 0);
        assert_eq!(
            taken(r#"{"not":{"column":"timestamp","op":"<","literals":[{"timestamp_us":7}]}}"#),
            2
        );
        assert_eq!(
            taken(r#"{"not":{"not":{"column":"offset","op":"=","literals":[{"int":5}]}}}"#),
            0
        );
        assert_eq!(
            taken(
                r#"{"and":[{"column":"topic","op":"=","literals":[{"str":"a"}]},{"column":"value","op":"IS_NULL","literals":[]}]}"#
            ),
            1
        );
        assert_eq!(taken(r#"{"other":"OR(...)"}"#), 0);
        assert_eq!(taken(r#"{"column":"offset","op":"=","literals":[{"null":true}]}"#), 0);
        let spec = Spec::parse(
            r#"{"options":{"path":"/nowhere"},"columns":["offset"],"limit":3,
                "predicates":[{"column":"offset","op":"<","literals":[{"int":0}]}]}"#,
        )
        .unwrap();
        assert_eq!(spec.predicates.len(), 1);
        assert!(spec.scan().is_ok());
        assert!(Spec::parse(r#"{"options":{"path":"/d"},"columns":["nope"]}"#).is_err());
    }
}
