"""Deletes from several Python processes at once (spawned, so each has its own runtime)."""

import multiprocessing


def _delete_each(location: str, names: list[str]) -> list[tuple[str, int, int, int]]:
    import atlas_collections as ac

    collection = ac.open(location)
    reports = []
    for name in names:
        report = collection.delete([name])
        reports.append((name, report.newly_deleted, report.total_deleted, report.attempts))
    return reports


def run_concurrent_deletes(location: str, names: list[str], processes: int) -> int:
    """Deletes ``names`` one at a time, split round-robin over ``processes`` processes, and
    checks every delete's report. The collection must have no deleted dataset before.

    Each delete must report deleting its one name (none lost to a racing deleter, none counted
    twice), and the mask each one committed must hide one dataset more than the commit before
    it: the totals the deletes report are 1, 2, ..., ``len(names)``, each exactly once. A
    commit merged into a stale mask (a lost update) would repeat a total and skip another.
    Returns the total commit attempts (more than ``len(names)`` means deleters raced)."""
    parts = [names[i::processes] for i in range(processes)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes) as pool:
        reports = [
            r for part in pool.starmap(_delete_each, [(location, p) for p in parts]) for r in part
        ]
    assert sorted(name for name, _, _, _ in reports) == sorted(names)
    wrong = [(name, newly) for name, newly, _, _ in reports if newly != 1]
    assert not wrong, f"deletes that did not delete exactly their one name: {wrong}"
    totals = sorted(total for _, _, total, _ in reports)
    assert totals == list(range(1, len(names) + 1)), f"the commits' totals: {totals}"
    assert all(attempts >= 1 for _, _, _, attempts in reports)
    return sum(attempts for _, _, _, attempts in reports)
