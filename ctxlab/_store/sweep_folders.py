"""The temporary folders where sweep workers leave Parquet parts for the parent to store.

A sweep killed with SIGKILL cannot remove its folder (hundreds of files), so each folder says
whose it is and the next sweep removes those whose owner is gone. Only folders this module
made are touched: named `ctxlab-sweep-<pid>-...`, a real directory of this user, holding an
owner file that names this host and a process that no longer exists, and nothing but Parquet
parts besides. Anything else is left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

PREFIX = "ctxlab-sweep-"
OWNER = "ctxlab-sweep.owner"
"""The file in each folder naming the process that made it: `{"pid": ..., "host": ...}`."""
NAME = re.compile(rf"{re.escape(PREFIX)}(\d+)-")


@contextlib.contextmanager
def sweep_folder() -> Iterator[Path]:
    """A new folder for this sweep's parts (after clearing dead sweeps' folders), removed
    when the sweep ends."""
    clear_dead()
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    try:
        (folder / OWNER).write_text(json.dumps({"pid": os.getpid(), "host": _host()}))
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def clear_dead(root: Path | None = None) -> list[Path]:
    """Remove the folders of sweeps whose process is gone; returns those removed."""
    root = Path(root or tempfile.gettempdir())
    removed = []
    for folder in root.glob(f"{PREFIX}*"):
        if _dead_sweeps(folder):
            for file in folder.iterdir():
                file.unlink()
            folder.rmdir()
            removed.append(folder)
    return removed


def _dead_sweeps(folder: Path) -> bool:
    """Whether `folder` is a sweep folder of this user and host whose owner process is gone
    and which holds only its owner file and Parquet parts."""
    match = NAME.match(folder.name)
    if os.name != "posix" or match is None or folder.is_symlink() or not folder.is_dir():
        return False
    try:
        if folder.stat().st_uid != os.getuid():
            return False
        owner = json.loads((folder / OWNER).read_text())
        files = list(folder.iterdir())
    except (OSError, ValueError):
        return False
    if not isinstance(owner, dict) or owner.get("host") != _host():
        return False
    pid = owner.get("pid")
    if pid != int(match.group(1)) or _alive(pid):
        return False
    return all(
        f.is_file() and not f.is_symlink() and (f.name == OWNER or f.suffix == ".parquet")
        for f in files
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a process of another user
    return True


def _host() -> str:
    return socket.gethostname()
