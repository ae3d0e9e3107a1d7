"""Deletes from several Python processes at once (spawned, so each has its own runtime)."""

import multiprocessing


def _delete_each(location: str, names: list) -> list:
    import atlas_collections as ac

    collection = ac.open(location)
    reports = []
    for name in names:
        report = collection.delete([name])
        reports.append((name, report.newly_deleted, report.attempts))
    return reports


def run_concurrent_deletes(location: str, names: list, processes: int) -> int:
    """Deletes ``names`` one at a time, split round-robin over ``processes`` processes, and
    checks that each delete reported deleting its one name (none lost to a racing deleter,
    none counted twice); returns the total commit attempts (more than ``len(names)`` means
    deleters raced)."""
    parts = [names[i::processes] for i in range(processes)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes) as pool:
        reports = [r for part in pool.starmap(_delete_each, [(location, p) for p in parts]) for r in part]
    assert sorted(name for name, _, _ in reports) == sorted(names)
    wrong = [(name, newly) for name, newly, _ in reports if newly != 1]
    assert not wrong, f"deletes that did not delete exactly their one name: {wrong}"
    assert all(attempts >= 1 for _, _, attempts in reports)
    return sum(attempts for _, _, attempts in reports)
