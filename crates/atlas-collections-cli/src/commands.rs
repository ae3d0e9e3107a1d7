//! One function per subcommand.

use crate::error::CliError;
use crate::location::{open, place, At};
use crate::npy::{self, NpyElement};
use crate::{Command, ReadArgs};
use atlas::format::DType;
use atlas::ndarray::{ArcArray, ArrayD, IxDyn};
use atlas::{
    collect_garbage, create_tag, Appender, ArraySpec, Atlas, AtlasError, AtlasWriter, Attr,
    DatasetSpec, DatasetView, FillValue, GcOptions, Occupancy, StatValue, TargetError, VerifyDepth,
    WriterOptions,
};
use comfy_table::{presets, CellAlignment, Table};
use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};
use std::io::IsTerminal;
use std::path::PathBuf;
use terminal_text::{escape, Escaped};

pub(crate) async fn run(command: Command, as_json: bool, at: At) -> Result<(), CliError> {
    let open = |collection: &str| {
        let collection = collection.to_owned();
        let at = at.clone();
        async move { open(&collection, &at).await }
    };
    let out = match command {
        Command::Info { collection } => info(&open(&collection).await?),
        Command::Ls { collection } => ls(&open(&collection).await?),
        Command::Stats {
            collection,
            variable,
        } => stats(&open(&collection).await?, &variable).await?,
        Command::Attrs { collection, key } => attrs(&open(&collection).await?, &key).await?,
        Command::Read(args) => {
            let atlas = open(&args.collection).await?;
            let view = atlas
                .dataset(&args.dataset)
                .ok_or_else(|| AtlasError::DatasetNotFound(args.dataset.clone()))?;
            read(&view, args).await?
        }
        Command::Delete { collection, names } => {
            let report = open(&collection).await?.delete(&names).await?;
            let total = report.total_deleted;
            Output::new(json!({"newly_deleted": report.newly_deleted, "total_deleted": total, "attempts": report.attempts}))
                .line(format!("deleted {} dataset(s); {total} hidden in total", report.newly_deleted))
        }
        Command::Verify { collection, full } => {
            return verify(&collection, full, as_json, &at).await;
        }
        Command::Demo {
            out,
            datasets,
            name_prefix,
        } => demo(&out, datasets, &name_prefix).await?,
        Command::Append {
            replace,
            collection,
            sources,
        } => append(&collection, &sources, replace).await?,
        Command::Log { collection } => log(&open(&collection).await?),
        Command::Compact { collection } => compact(&collection).await?,
        Command::Tag {
            collection,
            name,
            tagged_version,
        } => {
            let report = create_tag(&place(&collection)?, &name, tagged_version).await?;
            Output::new(json!({"tag": report.name, "version": report.version})).line(format!(
                "tag {} names version {}",
                report.name, report.version
            ))
        }
        Command::Gc {
            collection,
            keep_versions,
            grace_seconds,
            dry_run,
        } => {
            let options = GcOptions {
                keep_versions,
                grace: std::time::Duration::from_secs(grace_seconds),
                dry_run,
            };
            gc(&collection, &options).await?
        }
    };
    out.print(as_json).map_err(CliError::Stdout)
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

    /// Appends `table`'s lines.
    fn table(mut self, table: &Table) -> Self {
        self.lines
            .extend(table.lines().map(|l| l.trim_end().to_owned()));
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

/// A table for people: columns as wide as their widest cell, whatever the names' lengths.
fn table(header: &[&str], right_aligned: &[usize]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_header(header.to_vec());
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    for &column in right_aligned {
        if let Some(column) = table.column_mut(column) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

fn info(atlas: &Atlas) -> Output {
    let footer = atlas.footer();
    // A growing collection's own footer is empty: its datasets are its parts'.
    let stored = match atlas.version() {
        Some(_) => atlas
            .commits()
            .iter()
            .map(|c| usize::try_from(c.datasets).unwrap_or(usize::MAX))
            .sum(),
        None => footer.dataset_count(),
    };
    let segments: Vec<Value> = atlas
        .variables()
        .map(|(name, v)| json!({"name": name, "offset": v.seg_offset, "length": v.seg_len}))
        .collect();
    let mut table = table(&["SEGMENT", "OFFSET", "SIZE"], &[1, 2]);
    for (name, v) in atlas.variables() {
        table.add_row(vec![
            escape(name).into_owned(),
            v.seg_offset.to_string(),
            HumanBytes(v.seg_len).to_string(),
        ]);
    }
    Output::new(json!({
        "container": atlas.container_path().to_string(),
        "format_version": footer.version,
        "codec": footer.codec.to_string(),
        "created_unix_ms": footer.created_unix_ms,
        "datasets": stored,
        "live_datasets": atlas.dataset_count(),
        "version": atlas.version(),
        "latest_version": atlas.latest_version(),
        "schemas": footer.schema_pool.len(),
        "strings": footer.string_pool.len(),
        "dtypes": footer.dtype_pool.len(),
        "segments": segments,
    }))
    .line(format!(
        "container      {}",
        Escaped(atlas.container_path().as_ref())
    ))
    .line(format!(
        "format version {}   codec {}   created {} ms",
        footer.version, footer.codec, footer.created_unix_ms
    ))
    .line(format!(
        "datasets       {} live of {}",
        atlas.dataset_count(),
        stored
    ))
    .line(match (atlas.version(), atlas.latest_version()) {
        (Some(version), Some(latest)) => format!(
            "growing        version {version} of {latest}, {} part(s)",
            atlas.commits().len()
        ),
        _ => "plain          one container".to_owned(),
    })
    .line(format!(
        "pools          {} strings, {} dtypes, {} schemas",
        footer.string_pool.len(),
        footer.dtype_pool.len(),
        footer.schema_pool.len()
    ))
    .table(&table)
}

fn ls(atlas: &Atlas) -> Output {
    let mut rows = Vec::new();
    let mut table = table(&["ORDINAL", "DATASET", "ARRAYS"], &[0]);
    for dataset in atlas.datasets() {
        let arrays: Vec<String> = dataset
            .schema()
            .arrays()
            .map(|a| format!("{}:{}", a.name(), a.dtype()))
            .collect();
        let shown: Vec<String> = dataset
            .schema()
            .arrays()
            .map(|a| format!("{}:{}", Escaped(a.name()), a.dtype()))
            .collect();
        table.add_row(vec![
            dataset.ordinal().to_string(),
            escape(dataset.name()).into_owned(),
            shown.join(", "),
        ]);
        rows.push(json!({"ordinal": dataset.ordinal(), "name": dataset.name(), "arrays": arrays}));
    }
    Output::new(Value::Array(rows)).table(&table)
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

async fn stats(atlas: &Atlas, variable: &str) -> Result<Output, CliError> {
    let s = atlas.array_stats(variable).await?;
    let (min, max) = (stat_json(&s.min), stat_json(&s.max));
    let mut table = table(
        &["ARRAY", "DATASETS", "MIN", "MAX", "NULLS", "ROWS"],
        &[1, 2, 3, 4, 5],
    );
    table.add_row(vec![
        escape(variable).into_owned(),
        s.datasets.to_string(),
        min.to_string(),
        max.to_string(),
        s.null_count.to_string(),
        s.row_count.to_string(),
    ]);
    Ok(Output::new(
        json!({"array": variable, "datasets": s.datasets, "min": min, "max": max,
        "null_count": s.null_count, "row_count": s.row_count}),
    )
    .table(&table))
}

async fn attrs(atlas: &Atlas, key: &str) -> Result<Output, CliError> {
    let values = atlas.attributes_by_dataset(key).await?;
    let mut table = table(&["DATASET", &escape(key)], &[]);
    let mut rows = serde_json::Map::new();
    for (dataset, value) in values {
        table.add_row(vec![
            escape(&dataset).into_owned(),
            escape(&attr_text(&value)).into_owned(),
        ]);
        rows.insert(dataset, attr_json(&value));
    }
    Ok(Output::new(Value::Object(rows)).table(&table))
}

fn attr_json(value: &Attr) -> Value {
    serde_json::to_value(value).unwrap_or_else(|e| Value::String(format!("<{e}>")))
}

fn attr_text(value: &Attr) -> String {
    match value {
        Attr::String(s) => s.clone(),
        other => serde_json::to_value(other)
            .map(|v| v.to_string())
            .unwrap_or_default(),
    }
}

/// Elements in a region of `shape`; saturates instead of overflowing.
fn elements(shape: impl IntoIterator<Item = u64>) -> u64 {
    shape.into_iter().fold(1u64, u64::saturating_mul)
}

async fn read(view: &DatasetView<'_>, args: ReadArgs) -> Result<Output, CliError> {
    let ReadArgs {
        variable,
        start,
        shape,
        max_elements,
        all,
        npy,
        ..
    } = args;
    let meta = view
        .schema()
        .array(&variable)
        .ok_or_else(|| AtlasError::ArrayNotFound {
            dataset: view.name().to_owned(),
            array: variable.clone(),
        })?;
    // The size is known before a value is read: from the selection, or from the segment.
    let count = if shape.is_empty() {
        let layout = view.array_layout(&variable).await?;
        elements(layout.shape.iter().map(|&n| u64::from(n)))
    } else {
        elements(shape.iter().map(|&n| n as u64))
    };
    if npy.is_none() && !all && count > max_elements {
        return Err(CliError::Usage(format!(
            "{}/{variable}: the region holds {count} elements, more than --max-elements \
             {max_elements}; select a smaller region (--start, --shape), raise --max-elements, \
             pass --all, or write it to a file with --npy FILE",
            view.name()
        )));
    }
    let target = Target {
        dataset: view.name(),
        variable: &variable,
        npy,
    };
    macro_rules! read_as {
        ($t:ty, $json:expr) => {
            target.emit(view.read_array::<$t>(&variable, start, shape).await?, $json)?
        };
    }
    Ok(match meta.dtype() {
        DType::Float32 => read_as!(f32, |v| json!(v)),
        DType::Float64 => read_as!(f64, |v| json!(v)),
        DType::Int8 => read_as!(i8, |v| json!(v)),
        DType::Int16 => read_as!(i16, |v| json!(v)),
        DType::Int32 => read_as!(i32, |v| json!(v)),
        DType::Int64 => read_as!(i64, |v| json!(v)),
        DType::UInt8 => read_as!(u8, |v| json!(v)),
        DType::UInt16 => read_as!(u16, |v| json!(v)),
        DType::UInt32 => read_as!(u32, |v| json!(v)),
        DType::UInt64 => read_as!(u64, |v| json!(v)),
        DType::String => read_as!(String, |v| json!(v)),
        DType::Binary => read_as!(Vec<u8>, |v| json!(v)),
        DType::TimestampNs => read_as!(atlas::TimestampNs, |v| json!(v.0)),
        other => {
            return Err(CliError::Usage(format!(
                "reading {other} arrays is not supported by the CLI"
            )))
        }
    })
}

/// Where `read` sends the values: stdout, or a `.npy` file.
struct Target<'a> {
    dataset: &'a str,
    variable: &'a str,
    npy: Option<PathBuf>,
}

/// Temp-file prefix of a `.npy` file being published.
const NPY_TEMP_PREFIX: &str = ".atlas-npy.tmp-";

impl Target<'_> {
    fn emit<T: NpyElement + Clone>(
        &self,
        array: ArcArray<T, IxDyn>,
        to_json: impl Fn(&T) -> Value,
    ) -> Result<Output, CliError> {
        let (dataset, variable) = (self.dataset, self.variable);
        let shape = array.shape().to_vec();
        let Some(path) = &self.npy else {
            let values: Vec<Value> = array.iter().map(to_json).collect();
            // JSON text escapes C0 controls but not DEL, C1 controls or bidi overrides.
            let text: Vec<String> = values
                .iter()
                .map(|v| escape(&v.to_string()).into_owned())
                .collect();
            return Ok(Output::new(
                json!({"dataset": dataset, "array": variable, "shape": shape, "values": values}),
            )
            .line(format!(
                "{}/{} shape {shape:?}",
                Escaped(dataset),
                Escaped(variable)
            ))
            .line(text.join(" ")));
        };
        // C order whatever the array's memory layout.
        let values: Vec<T> = array.iter().cloned().collect();
        let bytes = npy::encode(&shape, &values).ok_or_else(|| {
            CliError::Usage(format!(
                "{dataset}/{variable}: shape {shape:?} does not fit a .npy 1.0 header"
            ))
        })?;
        let shown = path.display().to_string();
        match durable_fs::publish(&durable_fs::StdFileSystem, path, NPY_TEMP_PREFIX, &bytes) {
            Ok(durable_fs::Published::DurabilityUnknown(e)) => {
                eprintln!("atlas: {shown}: written, but the directory fsync failed: {e}");
            }
            Ok(_) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(Output::new(
            json!({"dataset": dataset, "array": variable, "shape": shape,
            "npy": shown, "bytes": bytes.len()}),
        )
        .line(format!(
            "{}/{} shape {shape:?}: {} to {}",
            Escaped(dataset),
            Escaped(variable),
            HumanBytes(bytes.len() as u64),
            Escaped(&shown)
        )))
    }
}

/// `atlas verify`: one report, printed the same way whether the collection passes or not (a
/// collection that does not even open is a report with that one problem); exit 1 on any problem.
async fn verify(collection: &str, full: bool, as_json: bool, at: &At) -> Result<(), CliError> {
    let depth = if full {
        VerifyDepth::Full
    } else {
        VerifyDepth::Structure
    };
    let (report, datasets) = match open(collection, at).await {
        Ok(atlas) => (Some(atlas.verify(depth).await), atlas.dataset_count()),
        Err(CliError::Atlas(error)) => {
            let problems = vec![json!({"location": "container", "error": error.to_string()})];
            let out = verify_output(collection, full, None, 0, problems);
            out.print(as_json).map_err(CliError::Stdout)?;
            return Err(CliError::VerificationFailed { problems: 1 });
        }
        Err(other) => return Err(other),
    };
    let problems: Vec<Value> = report
        .iter()
        .flat_map(|r| &r.problems)
        .map(|p| json!({"location": p.location, "error": p.error.to_string()}))
        .collect();
    let count = problems.len();
    verify_output(collection, full, report.as_ref(), datasets, problems)
        .print(as_json)
        .map_err(CliError::Stdout)?;
    if count > 0 {
        return Err(CliError::VerificationFailed { problems: count });
    }
    Ok(())
}

fn verify_output(
    collection: &str,
    full: bool,
    report: Option<&atlas::VerifyReport>,
    datasets: usize,
    problems: Vec<Value>,
) -> Output {
    let (segments, arrays, chunks, skipped) = report.map_or((0, 0, 0, Vec::new()), |r| {
        (
            r.segments_checked,
            r.arrays_checked,
            r.chunks_decoded,
            r.skipped.clone(),
        )
    });
    let ok = problems.is_empty();
    let mut out = Output::new(json!({
        "collection": collection,
        "ok": ok,
        "full": full,
        "datasets": datasets,
        "segments_checked": segments,
        "arrays_checked": arrays,
        "chunks_decoded": chunks,
        "skipped": skipped,
        "problems": problems,
    }));
    let what = if full {
        format!(
            "{segments} segments, {arrays} arrays in {datasets} datasets, {chunks} chunks decoded"
        )
    } else {
        format!("{segments} segments, {arrays} arrays in {datasets} datasets (no data block read; --full decodes them)")
    };
    if ok {
        out = out.line(format!("ok: {what}"));
    } else {
        out = out.line(format!(
            "FAILED: {} problem(s); checked {what}",
            problems.len()
        ));
        for p in &problems {
            let location = p["location"].as_str().unwrap_or_default();
            let error = p["error"].as_str().unwrap_or_default();
            out = out.line(format!("  {}: {}", Escaped(location), Escaped(error)));
        }
    }
    for s in &skipped {
        out = out.line(format!(
            "  skipped (element type not decodable here): {}",
            Escaped(s)
        ));
    }
    out
}

/// The demo's shapes are constants; a mismatch would be a bug here, reported, not a panic.
fn shape_bug(e: atlas::ndarray::ShapeError) -> CliError {
    CliError::Usage(format!("demo data: {e}"))
}

/// Where `demo` writes: a new or empty local directory (created if missing) or an
/// object-store prefix that holds nothing ([`Occupancy::Empty`]). A collection is write-once,
/// and a `deleted.mask` left beside a new `data.atlas` would hide its datasets, so anything
/// already there is refused before a byte is written.
async fn demo_target(out: &str) -> Result<atlas::Target, CliError> {
    (atlas::Target::open(&place(out)?, Occupancy::Empty).await).map_err(|error| match error {
        TargetError::NotEmpty { found, .. } => CliError::OutputNotEmpty {
            path: out.to_owned(),
            found,
        },
        error => CliError::Target(error),
    })
}

async fn demo(out: &str, datasets: usize, name_prefix: &str) -> Result<Output, CliError> {
    let target = demo_target(out).await?;
    let mut writer = AtlasWriter::new(target.store, &target.prefix, WriterOptions::default());
    for i in 0..datasets {
        let base = i as f32;
        let temperature = ArrayD::from_shape_vec(
            IxDyn(&[4, 8]),
            (0..32).map(|j| base + j as f32 * 0.5).collect(),
        )
        .map_err(shape_bug)?;
        let station = ArrayD::from_shape_vec(IxDyn(&[1]), vec![format!("station-{}", i % 3)])
            .map_err(shape_bug)?;
        let spec = DatasetSpec::new(format!("{name_prefix}{i:03}"))
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

/// `atlas append`: each source as one part and one version, in order; with `replace`, each
/// version hides the datasets of the names its source holds.
async fn append(collection: &str, sources: &[String], replace: bool) -> Result<Output, CliError> {
    let target = place(collection)?;
    let mut reports = Vec::with_capacity(sources.len());
    let mut lines = Vec::with_capacity(sources.len());
    for source in sources {
        let from = place(source)?;
        let appender = Appender::open(&target, WriterOptions::default())
            .await?
            .with_replace(replace);
        let report = appender.adopt(&from).await?;
        lines.push(format!(
            "version {}: {} dataset(s) from {} as part {} ({}){}{}",
            report.version,
            report.datasets,
            Escaped(source),
            report.part,
            HumanBytes(report.container_bytes),
            match report.replaced {
                0 => String::new(),
                n => format!(", replacing {n}"),
            },
            match report.attempts {
                1 => String::new(),
                n => format!(", committed at attempt {n}"),
            }
        ));
        reports.push(json!({
            "source": source,
            "version": report.version,
            "datasets": report.datasets,
            "replaced": report.replaced,
            "part": report.part,
            "bytes": report.container_bytes,
            "attempts": report.attempts,
        }));
    }
    let mut out = Output::new(Value::Array(reports));
    for line in lines {
        out = out.line(line);
    }
    Ok(out)
}

/// `atlas gc`: the parts removed (or, with `--dry-run`, that would be) and those left young.
async fn gc(collection: &str, options: &GcOptions) -> Result<Output, CliError> {
    let report = collect_garbage(&place(collection)?, options).await?;
    let verb = if options.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let mut out = Output::new(json!({
        "latest_version": report.latest,
        "oldest_kept_version": report.oldest_kept,
        "oldest_readable_version": report.oldest_readable_version,
        "removed_parts": report.removed_parts,
        "removed_objects": report.removed_objects,
        "removed_bytes": report.removed_bytes,
        "young_parts": report.young_parts,
        "dry_run": options.dry_run,
    }))
    .line(format!(
        "{verb} {} part(s), {} object(s), {}; versions {}..={} kept",
        report.removed_parts.len(),
        report.removed_objects,
        HumanBytes(report.removed_bytes),
        report.oldest_kept,
        report.latest
    ));
    if report.oldest_readable_version > 1 {
        out = out.line(format!(
            "versions before {} are no longer readable (their parts were compacted)",
            report.oldest_readable_version
        ));
    }
    if !report.young_parts.is_empty() {
        out = out.line(format!(
            "left {} unreferenced part(s) younger than {} s (an append may still commit them)",
            report.young_parts.len(),
            options.grace.as_secs()
        ));
    }
    Ok(out)
}

/// `atlas compact`: the compacted part and the version it made; a bar of datasets copied on
/// stderr, shown only to a person (hidden when stderr is not a terminal).
async fn compact(collection: &str) -> Result<Output, CliError> {
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(0);
        bar.set_draw_target(ProgressDrawTarget::stderr());
        // A template error would be a bug in the constant; the default style then serves.
        if let Ok(style) = ProgressStyle::with_template(COMPACT_BAR) {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut progress = |done: usize, total: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    };
    let report = atlas::compact(&place(collection)?, &mut progress).await;
    bar.finish_and_clear();
    let report = report?;
    Ok(Output::new(json!({
        "version": report.version,
        "part": report.part,
        "datasets": report.datasets,
        "replaced_parts": report.replaced_parts,
        "container_bytes": report.container_bytes,
        "carried_deletes": report.carried_deletes,
        "attempts": report.attempts,
    }))
    .line(format!(
        "compacted {} dataset(s) of {} part(s) into part {} ({}) as version {}",
        report.datasets,
        report.replaced_parts,
        report.part,
        HumanBytes(report.container_bytes),
        report.version
    )))
}

/// The bar `atlas compact` draws: datasets copied of all of them.
const COMPACT_BAR: &str =
    "compacting [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} datasets (eta {eta})";

/// `atlas log`: the commits of the version open, oldest first.
fn log(atlas: &Atlas) -> Output {
    let commits = atlas.commits();
    let mut table = table(
        &[
            "VERSION",
            "KIND",
            "COMMITTED (UTC)",
            "DATASETS",
            "HIDDEN",
            "PART",
        ],
        &[0, 3, 4],
    );
    let mut rows = Vec::with_capacity(commits.len());
    for commit in commits {
        table.add_row(vec![
            commit.version.to_string(),
            commit.label().to_owned(),
            utc(commit.created_unix_ms),
            commit.datasets.to_string(),
            commit.hides.len().to_string(),
            commit.part.clone(),
        ]);
        rows.push(json!({
            "version": commit.version,
            "kind": commit.label(),
            "created_unix_ms": commit.created_unix_ms,
            "datasets": commit.datasets,
            "hidden": commit.hides.len(),
            "part": commit.part,
        }));
    }
    let out = Output::new(Value::Array(rows));
    if atlas.version().is_none() {
        return out.line("a plain collection: no versions".to_owned());
    }
    out.table(&table)
}

/// `ms` since the Unix epoch as `YYYY-MM-DD HH:MM:SS.mmm` (UTC, proleptic Gregorian).
fn utc(ms: i64) -> String {
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Days to a civil date (Howard Hinnant's `civil_from_days`).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1_000 % 60,
        ms_of_day % 1_000,
    );
    format!("{year:04}-{month:02}-{day:02} {h:02}:{m:02}:{s:02}.{milli:03}")
}

#[cfg(test)]
mod utc_tests {
    #[test]
    fn commit_times_print_as_utc() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00.000");
        assert_eq!(super::utc(1_764_780_000_123), "2025-12-03 16:40:00.123");
        assert_eq!(super::utc(951_782_400_000), "2000-02-29 00:00:00.000");
        assert_eq!(super::utc(-1), "1969-12-31 23:59:59.999");
    }
}
