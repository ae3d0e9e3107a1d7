"""Deletes from several Python processes at once (spawned, so each has its own runtime)."""

import multiprocessing


def _delete_each(location: str, names: list) -> int:
    import atlas_collections as ac

    collection = ac.open(location)
    attempts = 0
    for name in names:
        attempts += collection.delete([name]).attempts
    return attempts


def run_concurrent_deletes(location: str, names: list, processes: int) -> int:
    """Deletes ``names`` one at a time, split round-robin over ``processes`` processes; returns
    the total commit attempts (more than ``len(names)`` means deleters raced)."""
    parts = [names[i::processes] for i in range(processes)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes) as pool:
        return sum(pool.starmap(_delete_each, [(location, part) for part in parts]))
