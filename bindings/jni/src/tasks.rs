//! Planning a batch read into Spark tasks: the core's plan, its splits cut
//! at `maxBytesPerPartition` (local files at batch boundaries, Aiven
//! segments at chunks, other remote objects at their `.index`) and packed
//! into tasks by the core, as the Python source's are
//! ([`kafkabatch::scan::tasks::tasks_of_plan`]).

use jni::objects::{JByteArray, JClass, JObjectArray, JString};
use jni::sys::jint;
use jni::EnvUnowned;

use kafkabatch::scan::tasks::{split_work, tasks_of_plan, Tasks};
use kafkabatch::scan::Split;

use crate::pushdown::Spec;
use crate::{entry, Failure};

/// The splits of a spec's read, in topic, partition, offset order, grouped
/// into tasks; `default_min_partitions` (Spark's default parallelism)
/// stands in for an unset `minPartitions`.
fn plan_tasks(spec: &str, default_min_partitions: i64) -> Result<Vec<Vec<Vec<u8>>>, Failure> {
    plan_tasks_by(spec, default_min_partitions, split_work)
}

/// As `plan_tasks`, the tasks balanced by `work` (a split's estimated cost).
pub(crate) fn plan_tasks_by(
    spec: &str,
    default_min_partitions: i64,
    work: fn(&Split) -> u64,
) -> Result<Vec<Vec<Vec<u8>>>, Failure> {
    let spec = Spec::parse(spec)?;
    let scan = spec.scan()?;
    let context = scan.context()?;
    let plan = scan.plan_with(&context)?;
    for problem in &plan.problems {
        // mode DROPMALFORMED/PERMISSIVE: left out, and said (as the Python source logs it)
        eprintln!("WARN kafka-log {}: skipped {problem}", spec.options.mode.as_str());
    }
    spec.options
        .check_named_partitions(plan.partitions.iter().map(|p| (p.topic.as_str(), p.partition)))
        .map_err(|e| Failure::Options(e.0))?;
    let tasks = tasks_of_plan(&plan, &spec.options, default_min_partitions, work, &context);
    warn_index(&tasks);
    Ok(serialised(&tasks))
}

/// Index files the cuts could not trust, on the driver's stderr (the Python
/// source's `IndexFileWarning`s): their segments are read from their start.
pub(crate) fn warn_index(tasks: &Tasks) {
    for text in &tasks.index_warnings {
        eprintln!("WARN kafka-log: {text}");
    }
}

/// Tasks of the core's splits, each split serialised.
pub(crate) fn serialised(tasks: &Tasks) -> Vec<Vec<Vec<u8>>> {
    tasks
        .tasks
        .iter()
        .map(|task| task.iter().map(Split::to_bytes).collect())
        .collect()
}

/// `byte[][][] planTasks(String spec, int defaultMinPartitions)`: each task's
/// splits (the core's serialised `Split`s), tasks in topic, partition, offset order.
#[no_mangle]
pub extern "system" fn Java_io_github_kafkabatch_spark_Native_planTasks<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    spec: JString<'local>,
    default_min_partitions: jint,
) -> JObjectArray<'local, JObjectArray<'local, JByteArray<'local>>> {
    entry(&mut env, |env| {
        let tasks = plan_tasks(&spec.try_to_string(env)?, i64::from(default_min_partitions))?;
        java_tasks(env, &tasks)
    })
}

/// Tasks of splits as Java's `byte[][][]`.
pub(crate) fn java_tasks<'local>(
    env: &mut jni::Env<'local>,
    tasks: &[Vec<Vec<u8>>],
) -> Result<JObjectArray<'local, JObjectArray<'local, JByteArray<'local>>>, Failure> {
    let out = JObjectArray::<JObjectArray<JByteArray>>::new(env, tasks.len(), JObjectArray::<JByteArray>::null())?;
    for (i, task) in tasks.iter().enumerate() {
        let group = JObjectArray::<JByteArray>::new(env, task.len(), JByteArray::null())?;
        for (j, split) in task.iter().enumerate() {
            let bytes = env.byte_array_from_slice(split)?;
            group.set_element(env, j, &bytes)?;
            // one local reference per split would pile up until the call returns
            env.delete_local_ref(bytes);
        }
        out.set_element(env, i, &group)?;
        env.delete_local_ref(group);
    }
    Ok(out)
}
