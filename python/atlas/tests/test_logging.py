"""Rust `tracing` events reach Python's `logging`, under loggers named after the Rust modules."""

import logging

import atlas_collections as ac


def test_a_delete_is_logged_by_the_rust_crate(collection_dir, caplog):
    collection = ac.open(collection_dir)
    with caplog.at_level(logging.INFO, logger="atlas_reader"):
        collection.delete(["ds_001"])
    records = [r for r in caplog.records if r.name.startswith("atlas_reader")]
    assert [r.levelno for r in records] == [logging.INFO], caplog.records
    message = records[0].getMessage()
    assert "deleted datasets" in message and "newly_deleted=1" in message
