//! Names: `<topic>-<partition>` folders and segment file names.
