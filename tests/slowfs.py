"""A test-only fsspec filesystem: `slow:///PATH` is the local file PATH, opened after a pause of
$DDTRIAGE_SLOW_OPEN seconds (default none). It gives a Dask test one unit that is still running
when a worker is killed. Dask workers load it with `--preload slowfs`."""

from __future__ import annotations

import os
import time

from fsspec import register_implementation
from fsspec.implementations.local import LocalFileSystem


class SlowFileSystem(LocalFileSystem):
    protocol = ("slow",)
    root_marker = "/"

    @classmethod
    def _strip_protocol(cls, path):
        path = str(path)
        if path.startswith("slow://"):
            path = path[len("slow://"):]
        return super()._strip_protocol(path)

    def unstrip_protocol(self, name):
        return "slow://" + self._strip_protocol(name)

    def _open(self, path, mode="rb", **kwargs):
        time.sleep(float(os.environ.get("DDTRIAGE_SLOW_OPEN", "0")))
        return super()._open(path, mode, **kwargs)


register_implementation("slow", SlowFileSystem, clobber=True)
