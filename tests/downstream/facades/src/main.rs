//! The README's library examples, compiled and run as a downstream crate would: DatasetRT
//! (write, open, read, iterate a dataset) and Atlas (write, open, read, stats, delete).

use std::sync::Arc;

fn datasetrt_example(dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    use datasetrt::{
        Cache, CacheWriter, Column, ColumnType, Dataset, Loader, LoaderConfig, OpenOptions, Row,
        Schema, WriterOptions,
    };
    for (name, label) in [("train", 7i64), ("val", 8)] {
        let schema = Schema::new(vec![Column::new("label", ColumnType::Int64, false)])?;
        let options = WriterOptions::new(format!("my-source-{name}"), schema);
        let mut writer = CacheWriter::create(dir.join(name), options)?;
        writer.add(b"payload bytes", &Row::new().with("label", label))?;
        writer.finish()?; // manifest.json is published last
    }
    let cache = Cache::open(dir.join("train"), OpenOptions::default())?;
    let sample = cache.sample(0)?;
    assert_eq!(sample.payload, b"payload bytes");

    let paths = [dir.join("train"), dir.join("val")];
    let dataset = Arc::new(Dataset::open(&paths, OpenOptions::default())?);
    let config = LoaderConfig {
        rank: 0,
        world_size: 1,
        workers: 2,
        prefetch: 512,
        ..LoaderConfig::default()
    };
    let mut seen = 0;
    for sample in Loader::new(dataset, config)? {
        let sample = sample?;
        assert_eq!(&sample.payload[..], b"payload bytes");
        seen += 1;
    }
    assert_eq!(seen, 2, "one epoch over both caches");
    println!("datasetrt: wrote, read and iterated 2 caches");
    Ok(())
}

async fn atlas_example() -> Result<(), Box<dyn std::error::Error>> {
    use atlas::ndarray::{ArrayD, IxDyn};
    use atlas::object_store::{memory::InMemory, path::Path, ObjectStore};
    use atlas::{ArraySpec, Atlas, AtlasWriter, Attr, DatasetSpec, WriterOptions};

    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let prefix = Path::from("weather");
    let mut writer = AtlasWriter::new(store.clone(), &prefix, WriterOptions::default());
    for (name, base) in [("jan_2024", 1.0f32), ("feb_2024", 2.0)] {
        let data = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![base; 4])?;
        let temperature = ArraySpec::new("temperature", data)
            .dims(["y", "x"])
            .attr("units", "K");
        writer.write_dataset(
            DatasetSpec::new(name)
                .array(temperature)
                .attr("station", "north"),
        )?;
    }
    writer.finish().await?;

    let atlas = Atlas::open(store, &prefix).await?;
    let feb = atlas.dataset("feb_2024").ok_or("feb_2024 was written")?;
    let values = feb.read_array::<f32>("temperature", vec![], vec![]).await?;
    assert_eq!(values.sum(), 8.0);
    assert_eq!(
        feb.get_attribute("station").await?,
        Some(Attr::from("north"))
    );
    assert_eq!(atlas.array_stats("temperature").await?.datasets, 2);
    atlas.delete(&["jan_2024"]).await?;
    assert!(atlas.dataset("jan_2024").is_none());
    println!("atlas: wrote, read, summarised and deleted in a 2-dataset collection");
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    datasetrt_example(dir.path())?;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    runtime.block_on(atlas_example())
}
