"""Build fault bundles the way the cluster log collector does, from plain logs, in a test's tmp dir."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from pathlib import Path


def tar_bytes(members: dict[str, bytes], mode: str = "w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1762918800
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def collector_bundle(node_dir: Path) -> bytes:
    """One node's `.tar.gz` as the collector writes it: plog.tar.gz and device_log.tar.gz for the
    Ascend log tree, the application logs as `*.log.gz` rotations, all under `<node>/`."""
    node = node_dir.name
    plogs, devices, apps = {}, {}, {}
    for path in sorted(node_dir.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(node_dir)
        parts = rel.parts
        if "plog" in parts:
            plogs["/".join(parts[parts.index("log") + 1:])] = path.read_bytes()
        elif any(p.startswith("device-") for p in parts[:-1]):
            devices["/".join(parts[parts.index("log") + 1:])] = path.read_bytes()
        else:
            apps[str(rel) + ".1.gz"] = gzip.compress(path.read_bytes(), mtime=0)
    members = {f"{node}/plog.tar.gz": gzip.compress(tar_bytes(plogs), mtime=0),
               f"{node}/device_log.tar.gz": gzip.compress(tar_bytes(devices), mtime=0)}
    members.update({f"{node}/{k}": v for k, v in apps.items()})
    return gzip.compress(tar_bytes(members), mtime=0)
