//! Read a Kafka log folder (a broker's log dir, a `<topic>-<partition>`
//! folder, a segment file or a glob) into Arrow record batches and print the
//! records per topic.
//!
//! ```text
//! cargo run --example read_folder -- /var/lib/kafka/data
//! cargo run --example read_folder -- /var/lib/kafka/data --read-committed --start-ms 1714521600000
//! ```

use std::collections::BTreeMap;
use std::process::ExitCode;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use kafkabatch::scan::{Scan, ScanIsolation};

const USAGE: &str = "usage: read_folder DIR [--read-committed] [--start-ms MS] [--end-ms MS] [--start-offset N]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("read_folder: {message}");
            ExitCode::FAILURE
        }
    }
}

fn number(args: &mut impl Iterator<Item = String>, flag: &str) -> Result<i64, String> {
    let text = args.next().ok_or_else(|| format!("{flag} needs a number\n{USAGE}"))?;
    text.parse().map_err(|_| format!("{flag}: not a number: {text:?}"))
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut root = None;
    let mut scan_options: Vec<Box<dyn FnOnce(Scan) -> Scan>> = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--read-committed" => scan_options.push(Box::new(|s| s.isolation(ScanIsolation::ReadCommitted))),
            "--start-ms" => {
                let ms = number(&mut args, "--start-ms")?;
                scan_options.push(Box::new(move |s| s.start_timestamp_ms(Some(ms))));
            }
            "--end-ms" => {
                let ms = number(&mut args, "--end-ms")?;
                scan_options.push(Box::new(move |s| s.end_timestamp_ms(Some(ms))));
            }
            "--start-offset" => {
                let offset = number(&mut args, "--start-offset")?;
                scan_options.push(Box::new(move |s| s.start_offset(Some(offset))));
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ if arg.starts_with('-') => return Err(format!("unknown option {arg:?}\n{USAGE}")),
            _ if root.is_none() => root = Some(arg),
            _ => return Err(format!("one folder only\n{USAGE}")),
        }
    }
    let root = root.ok_or(USAGE)?;
    let scan = scan_options
        .into_iter()
        .fold(Scan::new([root]), |scan, option| option(scan));

    let mut per_topic: BTreeMap<String, (u64, u64)> = BTreeMap::new(); // rows, value bytes
    let mut batches = 0;
    for batch in scan.reader().map_err(|e| e.to_string())? {
        let batch = batch.map_err(|e| e.to_string())?;
        batches += 1;
        let topics = batch.column(2).as_string::<i32>();
        let values = batch.column(1).as_binary::<i32>();
        for i in 0..batch.num_rows() {
            let entry = per_topic.entry(topics.value(i).to_string()).or_default();
            entry.0 += 1;
            entry.1 += if values.is_valid(i) {
                values.value(i).len() as u64
            } else {
                0
            };
        }
    }
    println!("{:<32} {:>12} {:>14}", "topic", "records", "value bytes");
    for (topic, (rows, bytes)) in &per_topic {
        println!("{topic:<32} {rows:>12} {bytes:>14}");
    }
    let total: u64 = per_topic.values().map(|(rows, _)| rows).sum();
    println!("{total} records in {batches} Arrow batches");
    Ok(())
}
