//! Pins the orders of plans without a schedule: fingerprints of every position's sample and
//! shard, of each cache's stream positions along the epoch, and of the shares, for every
//! shuffle and sampling mode with and without weights and cuts. The values were recorded from
//! the code before schedules existed; a change to how an unscheduled epoch is ordered fails
//! here even where the behavioural tests still pass.
#![allow(clippy::unwrap_used)] // test code

use dsrt_plan::{CacheShape, EpochPlan, PlanConfig, Sampling, Shuffle};

/// FNV-1a over 64-bit words: stable across Rust versions, unlike `DefaultHasher`.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn word(&mut self, value: u64) {
        for byte in value.to_le_bytes() {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

fn shape(len: u64, per_shard: u64) -> CacheShape {
    CacheShape::from_shard_ids((0..len).map(|i| i / per_shard.max(1)))
}

fn fingerprint(plan: &EpochPlan) -> u64 {
    let mut hash = Fnv::new();
    hash.word(plan.len());
    for &share in plan.shares() {
        hash.word(share);
    }
    let mut cursor = plan.cursor();
    for position in 0..plan.len() {
        let (sample, shard) = cursor.locate(plan, position).unwrap();
        hash.word(sample.cache as u64);
        hash.word(sample.sample);
        hash.word(shard);
    }
    for position in (0..=plan.len()).step_by(97) {
        for at in plan.stream_positions_at(position) {
            hash.word(at);
        }
    }
    hash.0
}

#[test]
fn unscheduled_orders_are_unchanged() {
    let shapes = [shape(700, 30), shape(230, 17), shape(0, 1), shape(95, 95)];
    let mixes: [(Option<Vec<f64>>, Option<u64>); 3] = [
        (None, None),
        (Some(vec![1.0, 2.0, 0.0, 3.0]), Some(1500)),
        (Some(vec![0.0, 1.0, 0.0, 0.0]), Some(400)),
    ];
    let mut fingerprints = Vec::new();
    for shuffle in [
        Shuffle::Sequential,
        Shuffle::Full,
        Shuffle::Local { window_shards: 3 },
    ] {
        for sampling in [
            Sampling::WithoutReplacement,
            Sampling::WithReplacement,
            Sampling::RunsWithReplacement,
        ] {
            for (weights, samples_per_epoch) in &mixes {
                let config = PlanConfig {
                    seed: 77,
                    weights: weights.clone(),
                    samples_per_epoch: *samples_per_epoch,
                    sampling,
                    shuffle,
                    ..PlanConfig::default()
                };
                let plan = EpochPlan::build(&shapes, &config, 2).unwrap();
                fingerprints.push(fingerprint(&plan));
                fingerprints.push(fingerprint(&plan.with_cuts(&[333, 1000])));
            }
        }
    }
    assert_eq!(fingerprints, GOLDEN, "{fingerprints:#x?}");
}

/// Recorded from the code before schedules existed (commit 729ea25).
const GOLDEN: [u64; 54] = [
    0x89b67002f2cc65d5,
    0x89b67002f2cc65d5,
    0x5c741af9473b21b3,
    0x5c741af9473b21b3,
    0xa82f5a47a098acc9,
    0xa82f5a47a098acc9,
    0x677e8ed583df2b50,
    0x553e453b4f82c1fc,
    0x0a9294da5dac8626,
    0x861f483adac9b106,
    0x4d04fafd76b7eade,
    0x39612a131f7cf89d,
    0x5ba0977fee6a02f9,
    0x5ba0977fee6a02f9,
    0xbbbfe271aabbcc1f,
    0xbbbfe271aabbcc1f,
    0x3c956a5636d66e69,
    0x3c956a5636d66e69,
    0xdad677b4702e6a22,
    0xdad677b4702e6a22,
    0x6c7b5021c9278c02,
    0x6c7b5021c9278c02,
    0x6e8c2edcdd2aa37d,
    0x6e8c2edcdd2aa37d,
    0x8207378566d1ffd9,
    0x8207378566d1ffd9,
    0xbb78ccd27843b17f,
    0xbb78ccd27843b17f,
    0x2f7c82f567b1e9ba,
    0x2f7c82f567b1e9ba,
    0x7c349e40b55d9da2,
    0x7c349e40b55d9da2,
    0x288ce2501e565783,
    0x288ce2501e565783,
    0xb6f7c200902c71fd,
    0xb6f7c200902c71fd,
    0xa00d14afef85a4a6,
    0x1644a220af857bfe,
    0x8e4fd52fabf188f6,
    0x4d9f724ccccc9ec2,
    0xdc95fac84632822e,
    0xc0919b40796bef6e,
    0x40b07695bf3225e8,
    0x587f5c19979acefb,
    0x96bb3d5b350c9922,
    0xd3768974a30d5ad7,
    0x8f7e735d6c09727a,
    0x5fa9c951c703dfdb,
    0x4f3d40d5d651a8e6,
    0x78610055911f537a,
    0xfd72c7e4a35c5785,
    0x3b28481fee3f0761,
    0xea5d98fe85b6daaf,
    0x7c10d5c0bfa312af,
];
