"""Stage: progress. The bar shows only after a delay, redraws at most every interval, and clears
itself; time comes from an injected clock, not the wall.
"""

import io

from analyzer.core.progress import DELAY, INTERVAL, ProgressBar


class Clock:
    """Seconds that pass only when the test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_bar_draws_and_clears():
    out, clock = io.StringIO(), Clock()
    bar = ProgressBar(out, clock=clock)
    bar.start(4 << 20, 2)
    clock.now += DELAY + 0.1  # the scan has been running for a while
    bar.advance(2 << 20)
    assert "2.0 MiB of 4.0 MiB" in out.getvalue() and "0/2 files" in out.getvalue()
    bar.file_done()  # too soon after the last draw
    assert "1/2 files" not in out.getvalue()
    clock.now += INTERVAL  # past the redraw interval
    bar.file_done()
    assert "2/2 files" in out.getvalue()
    bar.finish()
    assert out.getvalue().endswith("\r" + " " * 79 + "\r")  # the line is blank again


def test_quick_scans_draw_no_progress():
    out, clock = io.StringIO(), Clock()
    bar = ProgressBar(out, clock=clock)
    bar.start(10, 1)
    clock.now += DELAY / 2
    bar.advance(10)
    bar.file_done()
    bar.finish()
    assert out.getvalue() == ""
