"""Every Rust error variant becomes its Python class with its `kind`, taken from the variant.

The native module (built with its test hooks) converts one Rust error of every variant of every
error type it raises; a variant added in Rust appears here and fails this test until its class
and kind are listed.
"""

import pytest

import datasetrt

_testing = datasetrt._native._testing

EXPECTED = {
    "CacheError::NotADirectory": ("CacheError", "not_a_directory"),
    "CacheError::Incomplete": ("IncompleteCacheError", "incomplete"),
    "CacheError::Manifest": ("CorruptCacheError", "manifest"),
    "CacheError::Index": ("CorruptCacheError", "index"),
    "CacheError::Metadata": ("CorruptCacheError", "metadata"),
    "CacheError::MissingShard": ("CorruptCacheError", "missing_shard"),
    "CacheError::ShardLength": ("CorruptCacheError", "shard_length"),
    "CacheError::Checksum": ("ChecksumError", "checksum"),
    "CacheError::Record": ("CorruptCacheError", "record"),
    "CacheError::Resource": ("ResourceError", "resource"),
    "CacheError::Io": ("CacheError", "io"),
    "CacheError::Source": ("CacheError", "io"),
    "WriteError::TargetNotEmpty": ("WriteError", "target_not_empty"),
    "WriteError::InvalidOption": ("WriteError", "invalid_option"),
    "WriteError::Row": ("WriteError", "row"),
    "WriteError::PayloadTooLarge": ("WriteError", "payload_too_large"),
    "WriteError::Io": ("WriteError", "io"),
    "WriteError::Metadata": ("WriteError", "metadata"),
    "WriteError::Part": ("WriteError", "part"),
    "WriteError::Poisoned": ("WriteError", "poisoned"),
    "WriteError::Publish": ("WriteError", "publish"),
    "WriteError::DurabilityUnknown": ("WriteError", "durability_unknown"),
    "DatasetError::Cache": ("IncompleteCacheError", "incomplete"),
    "DatasetError::DuplicateCacheId": ("DatasetError", "duplicate_cache_id"),
    "DatasetError::DuplicatePath": ("DatasetError", "duplicate_path"),
    "DatasetError::UnknownCache": ("UnknownCacheError", "unknown_cache"),
    "DatasetError::SampleIndex": ("SampleIndexError", "sample_index"),
    "DatasetError::StepIndex": ("SampleIndexError", "step_index"),
    "DatasetError::Path": ("DatasetError", "path"),
    "DatasetError::Table": ("DatasetError", "table"),
    "DatasetError::Plan": ("DatasetError", "plan"),
    "DatasetError::SkippedAfterError": ("DatasetError", "skipped_after_error"),
    "DatasetError::WorkerStopped": ("DatasetError", "worker_stopped"),
    "DatasetError::Interrupted": ("DatasetError", "interrupted"),
    "DatasetError::TableWrite": ("DatasetError", "table_write"),
    "DatasetError::Batch": ("DatasetError", "batch"),
    "PackError::Io": ("WriteError", "io"),
    "PackError::Input": ("WriteError", "input"),
    "PackError::Column": ("WriteError", "column"),
    "PackError::BadSample": ("WriteError", "bad_sample"),
    "PackError::Parquet": ("WriteError", "parquet"),
    "PackError::Arrow": ("WriteError", "arrow"),
    "PackError::Encode": ("WriteError", "encode"),
    "PackError::TokenOutOfRange": ("WriteError", "token_out_of_range"),
    "PackError::Tokenizer": ("WriteError", "tokenizer"),
    "PackError::Write": ("WriteError", "poisoned"),
    "PackError::Cancelled": ("WriteError", "cancelled"),
    "PackError::WorkerPanicked": ("InternalError", "worker_panicked"),
    "RemoteError::Location": ("RemoteError", "location"),
    "RemoteError::Store(not_found)": ("RemoteError", "not_found"),
    "RemoteError::Store(store)": ("RemoteError", "store"),
    "RemoteError::Runtime": ("RemoteError", "runtime"),
    "RemoteError::LocalFile": ("RemoteError", "local_file"),
    "RemoteError::LocalManifest": ("RemoteError", "local_manifest"),
    "RemoteError::LocalSize": ("RemoteError", "local_size"),
    "RemoteError::Write": ("WriteError", "poisoned"),
    "RemoteError::AlreadyPublished": ("RemoteError", "already_published"),
    "RemoteError::PrefixNotEmpty": ("RemoteError", "prefix_not_empty"),
    "RemoteError::Upload": ("RemoteError", "upload"),
    "RemoteError::UploadedSize": ("RemoteError", "uploaded_size"),
    "RemoteError::TooLarge": ("RemoteError", "too_large"),
    "RemoteError::ShortRange": ("RemoteError", "short_range"),
    "RemoteError::LocalIo": ("RemoteError", "local_io"),
    "RemoteError::Manifest": ("RemoteError", "manifest"),
    "RemoteError::Integrity": ("RemoteIntegrityError", "integrity"),
    "RemoteError::ManifestChanged": ("ManifestChangedError", "manifest_changed"),
    "RemoteError::CacheLimit": ("CacheLimitError", "cache_limit"),
    "RemoteError::LocalCache": ("RemoteError", "local_cache"),
    "RemoteError::Cache": ("IncompleteCacheError", "incomplete"),
    "RemoteError::Opened": ("IncompleteCacheError", "incomplete"),
    "RemoteError::Dataset": ("UnknownCacheError", "unknown_cache"),
}

# Retryable: a store failure of the transport (or a server error outlasting the client's
# retries), and a short or mis-sized transfer; nothing else.
RETRYABLE = {
    "RemoteError::Store(store)",
    "RemoteError::Upload",
    "RemoteError::UploadedSize",
    "RemoteError::ShortRange",
}

EXAMPLES = _testing.error_examples()


def test_every_variant_is_listed_once():
    names = [name for name, _ in EXAMPLES]
    assert len(names) == len(set(names))
    assert set(names) == set(EXPECTED)


@pytest.mark.parametrize("name,exception", EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_each_variant_has_its_class_and_kind(name, exception):
    class_name, kind = EXPECTED[name]
    assert type(exception) is getattr(datasetrt, class_name), name
    assert exception.kind == kind
    assert exception.reason, name
    assert isinstance(exception, datasetrt.Error)
    if isinstance(exception, datasetrt.RemoteError):
        assert exception.retryable is (name in RETRYABLE), name
        assert exception.url is None or exception.url in str(exception)
    else:
        assert not hasattr(exception, "retryable") or exception.retryable is False


def test_a_reason_is_the_message_without_its_location():
    by_name = dict(EXAMPLES)
    shard = by_name["CacheError::ShardLength"]
    assert shard.reason == "shards/000000.bin is 9 bytes, the manifest says 10"
    assert str(shard) == f"{shard.path}: {shard.reason}"
    store = by_name["RemoteError::Store(store)"]
    assert str(store) == f"{store.url}: {store.reason}"


def test_lookups_that_miss_are_the_packages_errors_and_the_builtin_ones(tmp_path):
    from conftest import write_cache

    cache = datasetrt.Cache(write_cache(tmp_path / "c", 3))
    with pytest.raises(datasetrt.SampleIndexError) as past_end:
        cache[3]
    assert isinstance(past_end.value, IndexError) and isinstance(past_end.value, datasetrt.Error)
    assert past_end.value.kind == "sample_index" and "3 samples" in past_end.value.reason
    dataset = datasetrt.Dataset([tmp_path / "c"])
    with pytest.raises(datasetrt.UnknownCacheError) as unknown:
        dataset[(12345, 0)]
    assert isinstance(unknown.value, KeyError) and isinstance(unknown.value, datasetrt.DatasetError)
    assert unknown.value.kind == "unknown_cache" and unknown.value.cache_id == 12345
    (cache_id,) = dataset.cache_ids
    with pytest.raises(datasetrt.SampleIndexError):
        dataset[(cache_id, 3)]
