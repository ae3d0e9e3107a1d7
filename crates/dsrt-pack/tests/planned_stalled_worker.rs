//! A worker held up on one planned shard does not let the others run ahead with every shard
//! they finish open: the shards waiting for the slow one, and so the open files, stay bounded
//! by the jobs. Alone in its test binary, so no other test's files count.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: a failure is the test failing.

use dsrt_pack::{Convert, Emit, ImageFolder, PackError, PlanAhead, PlannedSampleFn};
use dsrt_reader::{Cache, OpenOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[path = "support/trees.rs"]
mod trees;
use trees::image_folder;
#[path = "support/open_files.rs"]
mod open_files;
use open_files::pack_counting_open_files;

type Unit = <ImageFolder as Convert>::Unit;

/// An image folder whose very first payload takes a second to read.
struct FirstPayloadStalls {
    folder: ImageFolder,
    stalled: AtomicBool,
}

impl Convert for FirstPayloadStalls {
    type Unit = Unit;

    fn cache_schema(&self) -> dsrt_schema::Schema {
        ImageFolder::schema()
    }

    fn units(&self) -> &[Unit] {
        self.folder.units()
    }

    fn convert(&self, unit: &Unit, emit: &mut Emit<'_>) -> Result<(), PackError> {
        self.folder.convert(unit, emit)
    }

    fn plan_ahead(&self) -> Option<&dyn PlanAhead<Unit>> {
        Some(self)
    }
}

impl PlanAhead<Unit> for FirstPayloadStalls {
    fn plan_unit(&self, unit: &Unit, sample: &mut PlannedSampleFn<'_>) -> Result<(), PackError> {
        self.folder.plan_ahead().unwrap().plan_unit(unit, sample)
    }

    fn read_payload(
        &self,
        unit: &Unit,
        index: usize,
        payload: &mut Vec<u8>,
    ) -> Result<(), PackError> {
        let first = std::ptr::eq(unit, &self.folder.units()[0]) && index == 0;
        if first && !self.stalled.swap(true, Ordering::Relaxed) {
            std::thread::sleep(Duration::from_secs(1));
        }
        self.folder
            .plan_ahead()
            .unwrap()
            .read_payload(unit, index, payload)
    }
}

#[test]
fn a_stalled_worker_keeps_the_finished_shards_waiting_for_it_bounded() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("images");
    image_folder(&input, 3_000, 2_000);
    let convert = FirstPayloadStalls {
        folder: ImageFolder::scan(&input).unwrap(),
        stalled: AtomicBool::new(false),
    };
    let out = root.path().join("out");
    let (before, most) = pack_counting_open_files(&convert, &out, 1_500, 3);
    assert!(convert.stalled.load(Ordering::Relaxed));
    let cache = Cache::open(&out, OpenOptions::validated()).unwrap();
    assert!(cache.manifest().description().shards.len() > 2_000);
    // The shards being written (3), handed out (3) and waiting (12), the writer's own files and
    // its sync queue: tens, while the slow shard is read for a second.
    assert!(
        most > 0 && most - before < 48,
        "{most} open, {before} before"
    );
}
