//! Spark's pushed aggregates answered from batch headers on the driver
//! ([`kafkabatch::scan::Plan::header_aggregates`]): the same answers and the
//! same refusals as the core gives every front end; where they refuse, each
//! task's partial aggregates of its splits ([`kafkabatch::scan::split_aggregates`]),
//! which Spark's final aggregation adds up.

use jni::objects::{JByteArray, JClass, JObjectArray, JString};
use jni::EnvUnowned;
use serde_json::{json, Value};

use jni::sys::jint;

use kafkabatch::scan::{aggregate_work, split_aggregates, Aggregate, AggregateRow, GroupBy};

use crate::pushdown::Spec;
use crate::tasks::{java_tasks, plan_tasks_by};
use crate::{entry, splits_of, Failure};

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

/// The aggregates (comma-separated names) and the grouping asked for.
fn asked(aggregates: &str, group_by: &str) -> Result<(Vec<Aggregate>, GroupBy), Failure> {
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
    Ok((asked, group_by))
}

/// `{"rows": [[topic, partition, [values]], ...]}`.
fn rows_json(rows: Vec<AggregateRow>) -> Value {
    let rows: Vec<Value> = rows
        .into_iter()
        .map(|r| json!([r.topic, r.partition, r.values]))
        .collect();
    json!({ "rows": rows })
}

/// The answer as JSON: `{"rows": [[topic, partition, [values]], ...]}` (nulls
/// where a group has no topic or partition, or a MIN/MAX of no rows), or
/// `{"why": text}` when the headers can't answer exactly (tasks then aggregate
/// partially), with `"decline": true` when no aggregate may be pushed at all.
fn answer(spec: &str, aggregates: &str, group_by: &str) -> Result<Value, Failure> {
    if let Some(specs) = crate::values::resolved_in_spec(spec)? {
        if let Some(column) = crate::values::raising(&specs).first() {
            // every value is parsed, and a bad one fails the read (the Python source's rule):
            // no aggregate is pushed, not even partially
            let why = format!("the {column} column is typed and onValueError is raise");
            return Ok(json!({ "why": why, "decline": true }));
        }
    }
    let spec = Spec::parse(spec)?;
    let (asked, group_by) = asked(aggregates, group_by)?;
    let scan = spec.scan()?;
    let plan = scan.plan()?;
    spec.options
        .check_named_partitions(plan.partitions.iter().map(|p| (p.topic.as_str(), p.partition)))
        .map_err(|e| Failure::Options(e.0))?;
    Ok(match plan.header_aggregates(&scan, &asked, group_by)? {
        Ok(rows) => rows_json(rows),
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

/// `String splitAggregates(byte[][] splits, String spec, String aggregates, String groupBy)`:
/// one task's partial aggregates of its splits (from `planTasks` of the same
/// spec), as `headerAggregates`' rows JSON: a row per group of these splits
/// (a row of all even of none).
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_splitAggregates<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    splits: JObjectArray<'local, JByteArray<'local>>,
    spec: JString<'local>,
    aggregates: JString<'local>,
    group_by: JString<'local>,
) -> JString<'local> {
    entry(&mut env, |env| {
        let spec = Spec::parse(&spec.try_to_string(env)?)?;
        let (asked, group_by) = asked(&aggregates.try_to_string(env)?, &group_by.try_to_string(env)?)?;
        let context = spec.scan()?.context()?;
        let parsed = splits_of(env, &splits)?;
        let rows = split_aggregates(&parsed, &context, &asked, group_by)?;
        Ok(JString::from_str(env, rows_json(rows).to_string())?)
    })
}

/// `byte[][][] planAggregateTasks(String spec, int defaultMinPartitions)`:
/// as `planTasks`, the tasks balanced by what `splitAggregates` costs (legacy
/// message sets decompressed, v2 batches' headers walked), not by decoding.
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_planAggregateTasks<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    spec: JString<'local>,
    default_min_partitions: jint,
) -> JObjectArray<'local, JObjectArray<'local, JByteArray<'local>>> {
    entry(&mut env, |env| {
        let tasks = plan_tasks_by(
            &spec.try_to_string(env)?,
            i64::from(default_min_partitions),
            aggregate_work,
        )?;
        java_tasks(env, &tasks)
    })
}
