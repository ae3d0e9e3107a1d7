//! One function per subcommand.

use crate::location::{file_url_path, open, parse_url};
use crate::Command;
use atlas::format::DType;
use atlas::ndarray::{ArcArray, ArrayD, IxDyn};
use atlas::object_store::local::LocalFileSystem;
use atlas::object_store::path::Path;
use atlas::object_store::ObjectStore;
use atlas::{
    ArraySpec, Atlas, AtlasWriter, Attr, DatasetSpec, DatasetView, FillValue, StatValue,
    WriterOptions,
};
use serde_json::{json, Value};
use std::error::Error;
use std::sync::Arc;

type BoxError = Box<dyn Error + Send + Sync>;

pub(crate) async fn run(command: Command, as_json: bool) -> Result<(), BoxError> {
    let out = match command {
        Command::Info { collection } => info(&open(&collection).await?),
        Command::Ls { collection } => ls(&open(&collection).await?),
        Command::Stats {
            collection,
            variable,
        } => stats(&open(&collection).await?, &variable).await?,
        Command::Attrs { collection, key } => attrs(&open(&collection).await?, &key).await?,
        Command::Read {
            collection,
            dataset,
            variable,
            start,
            shape,
        } => {
            let atlas = open(&collection).await?;
            let view = atlas
                .dataset(&dataset)
                .ok_or_else(|| format!("no dataset named '{dataset}'"))?;
            read(&view, &variable, start, shape).await?
        }
        Command::Delete { collection, names } => {
            let report = open(&collection).await?.delete(&names).await?;
            let total = report.total_deleted;
            Output::new(json!({"newly_deleted": report.newly_deleted, "total_deleted": total, "attempts": report.attempts}))
                .line(format!("deleted {} dataset(s); {total} hidden in total", report.newly_deleted))
        }
        Command::Verify { collection } => verify(&open(&collection).await?).await?,
        Command::Demo { out, datasets } => demo(&out, datasets).await?,
    };
    match out.print(as_json) {
        // A reader that went away on purpose (`atlas ls | head`) is not a failure.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("writing to stdout: {e}").into())
        }
        _ => Ok(()),
    }
}

/// What a command prints: lines for people, a JSON value for scripts.
struct Output {
    json: Value,
    lines: Vec<String>,
}

impl Output {
    fn new(json: Value) -> Self {
        Self {
            json,
            lines: Vec::new(),
        }
    }

    fn line(mut self, line: String) -> Self {
        self.lines.push(line);
        self
    }

    /// Writes to stdout; `println!` would panic when the reader has gone (`atlas ls | head`).
    fn print(&self, as_json: bool) -> std::io::Result<()> {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        if as_json {
            writeln!(stdout, "{}", self.json)?;
        } else {
            for line in &self.lines {
                writeln!(stdout, "{line}")?;
            }
        }
        stdout.flush()
    }
}

fn info(atlas: &Atlas) -> Output {
    let footer = atlas.footer();
    let segments: Vec<Value> = atlas
        .variables()
        .map(|(name, v)| json!({"name": name, "offset": v.seg_offset, "length": v.seg_len}))
        .collect();
    let mut out = Output::new(json!({
        "container": atlas.container_path().to_string(),
        "format_version": footer.version,
        "codec": footer.codec.to_string(),
        "created_unix_ms": footer.created_unix_ms,
        "datasets": footer.dataset_count(),
        "live_datasets": atlas.dataset_count(),
        "schemas": footer.schema_pool.len(),
        "strings": footer.string_pool.len(),
        "dtypes": footer.dtype_pool.len(),
        "segments": segments,
    }))
    .line(format!("container      {}", atlas.container_path()))
    .line(format!(
        "format version {}   codec {}   created {} ms",
        footer.version, footer.codec, footer.created_unix_ms
    ))
    .line(format!(
        "datasets       {} live of {}",
        atlas.dataset_count(),
        footer.dataset_count()
    ))
    .line(format!(
        "pools          {} strings, {} dtypes, {} schemas",
        footer.string_pool.len(),
        footer.dtype_pool.len(),
        footer.schema_pool.len()
    ))
    .line(format!(
        "{:<24} {:>14} {:>14}",
        "SEGMENT", "OFFSET", "BYTES"
    ));
    for (name, v) in atlas.variables() {
        out = out.line(format!("{name:<24} {:>14} {:>14}", v.seg_offset, v.seg_len));
    }
    out
}

fn ls(atlas: &Atlas) -> Output {
    let mut rows = Vec::new();
    let mut lines = vec![format!("{:>8}  {:<32} ARRAYS", "ORDINAL", "DATASET")];
    for dataset in atlas.datasets() {
        let arrays: Vec<String> = dataset
            .schema()
            .arrays()
            .map(|a| format!("{}:{}", a.name(), a.dtype()))
            .collect();
        lines.push(format!(
            "{:>8}  {:<32} {}",
            dataset.ordinal(),
            dataset.name(),
            arrays.join(", ")
        ));
        rows.push(json!({"ordinal": dataset.ordinal(), "name": dataset.name(), "arrays": arrays}));
    }
    Output {
        json: Value::Array(rows),
        lines,
    }
}

fn stat_json(value: &Option<StatValue>) -> Value {
    match value {
        None => Value::Null,
        Some(StatValue::Int(v) | StatValue::TimestampNs(v)) => json!(v),
        Some(StatValue::UInt(v)) => json!(v),
        Some(StatValue::Float(v)) => json!(v),
        Some(StatValue::Bytes(v)) => json!(String::from_utf8_lossy(v)),
    }
}

async fn stats(atlas: &Atlas, variable: &str) -> Result<Output, BoxError> {
    let s = atlas.array_stats(variable).await?;
    let (min, max) = (stat_json(&s.min), stat_json(&s.max));
    Ok(Output::new(
        json!({"array": variable, "datasets": s.datasets, "min": min, "max": max,
        "null_count": s.null_count, "row_count": s.row_count}),
    )
    .line(format!(
        "{:<10} {:>10} {:>16} {:>16} {:>12} {:>12}",
        "ARRAY", "DATASETS", "MIN", "MAX", "NULLS", "ROWS"
    ))
    .line(format!(
        "{variable:<10} {:>10} {:>16} {:>16} {:>12} {:>12}",
        s.datasets,
        min.to_string(),
        max.to_string(),
        s.null_count,
        s.row_count
    )))
}

async fn attrs(atlas: &Atlas, key: &str) -> Result<Output, BoxError> {
    let values = atlas.attributes_by_dataset(key).await?;
    let mut lines = vec![format!("{:<32} {key}", "DATASET")];
    let mut rows = serde_json::Map::new();
    for (dataset, value) in values {
        lines.push(format!("{dataset:<32} {}", attr_text(&value)));
        rows.insert(dataset, serde_json::to_value(&value)?);
    }
    Ok(Output {
        json: Value::Object(rows),
        lines,
    })
}

fn attr_text(value: &Attr) -> String {
    match value {
        Attr::String(s) => s.clone(),
        other => serde_json::to_value(other)
            .map(|v| v.to_string())
            .unwrap_or_default(),
    }
}

async fn read(
    view: &DatasetView<'_>,
    variable: &str,
    start: Vec<usize>,
    shape: Vec<usize>,
) -> Result<Output, BoxError> {
    let meta = view
        .schema()
        .array(variable)
        .ok_or_else(|| format!("dataset '{}' has no array '{variable}'", view.name()))?;
    let (shape_out, values) = match meta.dtype() {
        DType::Float32 => values(view.read_array::<f32>(variable, start, shape).await?, |v| {
            json!(v)
        }),
        DType::Float64 => values(view.read_array::<f64>(variable, start, shape).await?, |v| {
            json!(v)
        }),
        DType::Int8 => values(view.read_array::<i8>(variable, start, shape).await?, |v| {
            json!(v)
        }),
        DType::Int16 => values(view.read_array::<i16>(variable, start, shape).await?, |v| {
            json!(v)
        }),
        DType::Int32 => values(view.read_array::<i32>(variable, start, shape).await?, |v| {
            json!(v)
        }),
        DType::Int64 => values(view.read_array::<i64>(variable, start, shape).await?, |v| {
            json!(v)
        }),
        DType::UInt8 => values(view.read_array::<u8>(variable, start, shape).await?, |v| {
            json!(v)
        }),
        DType::UInt16 => values(view.read_array::<u16>(variable, start, shape).await?, |v| {
            json!(v)
        }),
        DType::UInt32 => values(view.read_array::<u32>(variable, start, shape).await?, |v| {
            json!(v)
        }),
        DType::UInt64 => values(view.read_array::<u64>(variable, start, shape).await?, |v| {
            json!(v)
        }),
        DType::String => values(
            view.read_array::<String>(variable, start, shape).await?,
            |v| json!(v),
        ),
        DType::Binary => values(
            view.read_array::<Vec<u8>>(variable, start, shape).await?,
            |v| json!(v),
        ),
        DType::TimestampNs => values(
            view.read_array::<atlas::TimestampNs>(variable, start, shape)
                .await?,
            |v| json!(v.0),
        ),
        other => return Err(format!("reading {other} arrays is not supported by the CLI").into()),
    };
    let text: Vec<String> = values.iter().map(Value::to_string).collect();
    Ok(Output::new(
        json!({"dataset": view.name(), "array": variable, "shape": shape_out, "values": values}),
    )
    .line(format!("{}/{variable} shape {shape_out:?}", view.name()))
    .line(text.join(" ")))
}

fn values<T>(array: ArcArray<T, IxDyn>, to_json: impl Fn(&T) -> Value) -> (Vec<usize>, Vec<Value>) {
    (array.shape().to_vec(), array.iter().map(to_json).collect())
}

async fn verify(atlas: &Atlas) -> Result<Output, BoxError> {
    let mut checked = 0usize;
    let mut problems = Vec::new();
    for dataset in atlas.datasets() {
        for array in dataset.schema().arrays() {
            checked += 1;
            if let Err(e) = dataset.array_layout(array.name()).await {
                problems.push(format!("{}/{}: {e}", dataset.name(), array.name()));
            }
        }
    }
    if !problems.is_empty() {
        return Err(format!(
            "{} of {checked} arrays failed verification:\n{}",
            problems.len(),
            problems.join("\n")
        )
        .into());
    }
    Ok(Output::new(
        json!({"ok": true, "arrays_checked": checked, "datasets": atlas.dataset_count()}),
    )
    .line(format!(
        "ok: {checked} arrays in {} datasets match the footer",
        atlas.dataset_count()
    )))
}

/// Where `demo` writes: a local directory (created if missing) or an object-store URL.
fn demo_target(out: &str) -> Result<(Arc<dyn ObjectStore>, Path), BoxError> {
    let dir = match file_url_path(out)? {
        Some(dir) => dir,
        None if out.contains("://") => return parse_url(out),
        None => std::path::PathBuf::from(out),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{out}: {e}"))?;
    Ok((
        Arc::new(LocalFileSystem::new_with_prefix(&dir)?),
        Path::default(),
    ))
}

async fn demo(out: &str, datasets: usize) -> Result<Output, BoxError> {
    let (store, prefix) = demo_target(out)?;
    let mut writer = AtlasWriter::new(store, &prefix, WriterOptions::default());
    for i in 0..datasets {
        let base = i as f32;
        let temperature = ArrayD::from_shape_vec(
            IxDyn(&[4, 8]),
            (0..32).map(|j| base + j as f32 * 0.5).collect(),
        )?;
        let station = ArrayD::from_shape_vec(IxDyn(&[1]), vec![format!("station-{}", i % 3)])?;
        let spec = DatasetSpec::new(format!("month_{i:03}"))
            .array(
                ArraySpec::new("temperature", temperature)
                    .dims(["y", "x"])
                    .chunks(vec![2, 4])
                    .attr("units", "celsius"),
            )
            .array(ArraySpec::new("station", station))
            .array(ArraySpec::declared::<f64>("pressure", vec![4]).fill(FillValue::Float(f64::NAN)))
            .attr("month", Attr::Int64(i as i64));
        writer.write_dataset(spec)?;
    }
    let summary = writer.finish().await?;
    Ok(Output::new(json!({"datasets": summary.datasets, "segments": summary.segments, "bytes": summary.container_bytes}))
        .line(format!("wrote {} datasets in {} segments, {} bytes, to {out}", summary.datasets, summary.segments, summary.container_bytes)))
}
