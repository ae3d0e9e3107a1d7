"""pytest plugin used by `cargo xtask test` (``-p pytest_noskip``): a skipped test is a failure.

Every test dependency is pinned in python/requirements-test.txt and installed, so a skip can
only mean something is missing or misconfigured; the suite must say so instead of passing.
"""

import pytest

_skips: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail"):
        _skips.append(report.nodeid)
        report.outcome = "failed"
        report.longrepr = f"skipped, and skips are failures in this suite: {report.longrepr}"


def pytest_collectreport(report):
    if report.skipped:
        _skips.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    if _skips and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    if _skips:
        terminalreporter.write_line(
            f"pytest_noskip: {len(_skips)} skipped test(s) or module(s) counted as failures: "
            + ", ".join(_skips),
            red=True,
        )
