"""Rust `tracing` events reach Python's `logging`, under loggers named after the Rust modules."""

import logging

import datasetrt

from conftest import write_cache


def test_a_manifest_migration_is_logged_by_the_rust_crate(tmp_path, caplog):
    cache = write_cache(tmp_path / "a", 3, version=2)
    with caplog.at_level(logging.INFO, logger="dsrt_migrate"):
        datasetrt.update_manifests([cache], version=3)
    records = [r for r in caplog.records if r.name.startswith("dsrt_migrate")]
    assert [r.levelno for r in records] == [logging.INFO], caplog.records
    assert "manifest updated" in records[0].getMessage()
    assert str(cache) in records[0].getMessage()


def test_records_below_the_logger_level_are_not_emitted(tmp_path, caplog):
    cache = write_cache(tmp_path / "a", 3, version=2)
    with caplog.at_level(logging.WARNING, logger="dsrt_migrate"):
        datasetrt.update_manifests([cache], version=3)
    assert not [r for r in caplog.records if r.name.startswith("dsrt_migrate")]
