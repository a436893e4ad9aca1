//! Spark's pushed aggregates answered from batch headers on the driver
//! ([`kafkabatch::scan::Plan::header_aggregates`]): the same answers and the
//! same refusals as the core gives every front end.

use jni::objects::{JClass, JString};
use jni::EnvUnowned;
use serde_json::{json, Value};

use kafkabatch::scan::{Aggregate, GroupBy};

use crate::pushdown::Spec;
use crate::{entry, Failure};

fn aggregate_of(name: &str) -> Result<Aggregate, Failure> {
    Ok(match name {
        "count" => Aggregate::Count,
        "min_offset" => Aggregate::MinOffset,
        "max_offset" => Aggregate::MaxOffset,
        "min_timestamp" => Aggregate::MinTimestamp,
        "max_timestamp" => Aggregate::MaxTimestamp,
        other => return Err(Failure::Core(format!("no header aggregate {other:?}"))),
    })
}

/// The answer as JSON: `{"rows": [[topic, partition, [values]], ...]}` (nulls
/// where a group has no topic or partition, or a MIN/MAX of no rows), or
/// `{"why": text}` when the headers can't answer exactly.
fn answer(spec_json: &str, aggregates: &str, group_by: &str) -> Result<Value, Failure> {
    let spec = Spec::parse(spec_json)?;
    let asked = aggregates
        .split(',')
        .filter(|a| !a.is_empty())
        .map(aggregate_of)
        .collect::<Result<Vec<_>, _>>()?;
    let group_by = match group_by {
        "all" => GroupBy::All,
        "topic" => GroupBy::Topic,
        "partition" => GroupBy::TopicPartition,
        other => return Err(Failure::Core(format!("no grouping {other:?}"))),
    };
    if let Some(specs) = crate::values::resolved_in_spec(spec_json)? {
        if let Some(column) = crate::values::raising(&specs).first() {
            // every value is parsed, and a bad one fails the read (the Python source's rule)
            return Ok(json!({ "why": format!("the {column} column is typed and onValueError is raise") }));
        }
    }
    let scan = spec.scan()?;
    let plan = scan.plan()?;
    spec.options
        .check_named_partitions(plan.partitions.iter().map(|p| (p.topic.as_str(), p.partition)))
        .map_err(|e| Failure::Options(e.0))?;
    Ok(match plan.header_aggregates(&scan, &asked, group_by)? {
        Ok(rows) => {
            let rows: Vec<Value> = rows
                .into_iter()
                .map(|r| json!([r.topic, r.partition, r.values]))
                .collect();
            json!({ "rows": rows })
        }
        Err(why) => json!({ "why": why.to_string() }),
    })
}

/// `String headerAggregates(String spec, String aggregates, String groupBy)`:
/// `aggregates` comma-separated (`count`, `min_offset`, `max_offset`,
/// `min_timestamp`, `max_timestamp`), `groupBy` `all`, `topic` or
/// `partition` (topic and partition); the answer as JSON (see `answer`).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_headerAggregates<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    spec: JString<'local>,
    aggregates: JString<'local>,
    group_by: JString<'local>,
) -> JString<'local> {
    entry(&mut env, |env| {
        let value = answer(
            &spec.try_to_string(env)?,
            &aggregates.try_to_string(env)?,
            &group_by.try_to_string(env)?,
        )?;
        Ok(JString::from_str(env, value.to_string())?)
    })
}
