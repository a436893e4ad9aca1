//! `internalTopic` on the JVM source: the columns of Kafka's internal topics'
//! records ([`kafkabatch::kmsg::appended`]), appended to the Kafka source schema.
//!
//! The driver resolves the option (`readColumns`: the kinds, and the files of
//! `definitions` read there) and hands Java the added columns in the Arrow types
//! Spark reads (unsigned integers widened, UUIDs binary: [`spark_ready`]); the
//! resolved option travels to the executors with the typed-value specs
//! ([`crate::values::Resolved`]), so they never need the driver's folder. A
//! reader decodes only when the query selects a decoded column.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema, SchemaRef};

use kafkabatch::arrow_out::Columns;
use kafkabatch::kmsg::appended::Internal;
use kafkabatch::kmsg::Definitions;
use kafkabatch::values::spec::spark_ready;
use kafkabatch::vocabulary::{in_words, Words};

use crate::Failure;

/// The added columns of `internal` for `topics`, in Spark's Arrow types; `None` when none is decoded.
pub(crate) fn spark_fields(internal: &Internal, topics: &[String]) -> Result<Vec<Field>, Failure> {
    let defs = internal.definitions().map_err(Failure::Options)?;
    let Some(added) = internal.added_schema(&defs, topics.iter().map(String::as_str)) else {
        return Ok(Vec::new());
    };
    added
        .fields()
        .iter()
        .map(|f| {
            let data_type = spark_ready(f.data_type()).map_err(|e| Failure::Core(format!("{}: {e}", f.name())))?;
            Ok(Field::new(f.name(), data_type, true))
        })
        .collect()
}

/// Whether `name` is one of the core's columns (the Kafka source schema), not an added one.
pub(crate) fn is_core_column(name: &str) -> bool {
    Columns::NAMES.contains(&name)
}

/// The decoding step of a reader whose read schema selects decoded columns.
pub(crate) struct Decoding {
    internal: Internal,
    defs: Arc<Definitions>,
    /// The selected decoded columns, in Spark's Arrow types (the read schema's).
    selected: SchemaRef,
}

impl Decoding {
    /// The step for `target` (the read schema), `None` when it selects no decoded column.
    pub(crate) fn new(internal: Option<Internal>, target: &Schema) -> Result<Option<Self>, Failure> {
        let selected: Vec<Arc<Field>> = target
            .fields()
            .iter()
            .filter(|f| !is_core_column(f.name()))
            .cloned()
            .collect();
        if selected.is_empty() {
            return Ok(None);
        }
        let Some(internal) = internal else {
            return Err(Failure::Core(format!(
                "the read schema asks for {}, but no internalTopic decodes them",
                selected
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let defs = internal.definitions().map_err(Failure::Options)?;
        Ok(Some(Decoding {
            internal,
            defs,
            selected: Arc::new(Schema::new(selected)),
        }))
    }

    /// The columns the decoder reads: the reader builds them even when the query does not select them.
    pub(crate) const NEEDS: [&'static str; 3] = ["key", "value", "topic"];

    /// `batch` with the selected decoded columns appended.
    pub(crate) fn apply(&self, batch: &RecordBatch) -> Result<RecordBatch, Failure> {
        self.internal
            .append(&self.defs, batch, &self.selected)
            .map_err(|e| Failure::Core(in_words(&e, Words::Spark)))
    }
}
