"""A Jupyter server extension that keeps a stripped notebook stripped when JupyterLab saves it.

The repository's notebooks are committed the way `nbstripout` leaves them: no outputs, no cell
metadata, and notebook metadata holding only the kernel's name and language
(tests/test_notebooks.py). Merely opening one in JupyterLab marked it changed, and its next
save (or autosave) wrote what the kernel reports of itself: the kernel's display name
("Python 3 (ipykernel)") and a full `language_info` with the Python version ("3.11.7"), so
`git status` showed every opened notebook as modified. Writing those values into the
notebooks instead would not do: the Python version differs from one machine to the next.

So a pre-save hook puts back the notebook-level `kernelspec` and `language_info` the file on
disk holds, when that file is stripped (its `language_info` is the language's name alone) and
the save keeps the same kernel and language. Everything else a user changes (cells, outputs,
another kernel) is saved as it comes. Other notebooks are never touched.

`ctxlab quickstart --lab` starts JupyterLab with `LAB_FLAGS`, which enable this extension;
`jupyter lab notebooks/` takes the same flag. (An `etc/jupyter/jupyter_server_config.d` file
installed with the package would enable it for every Lab, but setuptools' editable installs,
the way a clone is installed, do not install data files.)
"""

from __future__ import annotations

import json
import os
from typing import Any

LAB_FLAGS = ("--ServerApp.jpserver_extensions=ctxlab._view.lab_save=True",)
"""What JupyterLab's command line takes to run with this extension."""

STRIPPED_KEYS = ("kernelspec", "language_info")
"""The notebook-level metadata a stripped notebook holds, and the only keys restored."""


def _stripped_metadata(path: str) -> dict[str, Any] | None:
    """The notebook metadata of the file at `path` when it is a stripped notebook (metadata
    of `STRIPPED_KEYS` only, `language_info` the language's name alone), else None."""
    try:
        with open(path, encoding="utf-8") as f:
            metadata = json.load(f).get("metadata", {})
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(metadata, dict) or set(metadata) != set(STRIPPED_KEYS):
        return None
    if not isinstance(metadata["language_info"], dict) or set(metadata["language_info"]) != {
        "name"
    }:
        return None
    return metadata


def keep_stripped(model: dict[str, Any], path: str, contents_manager: Any, **_: Any) -> None:
    """`ContentsManager` pre-save hook: in a notebook about to be saved over a stripped one,
    restore the stripped `kernelspec` and `language_info` when the kernel's name and the
    language did not change (see the module docstring)."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    root = getattr(contents_manager, "root_dir", "")
    on_disk = _stripped_metadata(os.path.join(root, path.lstrip("/")))
    if on_disk is None:
        return
    metadata = model["content"].setdefault("metadata", {})
    kernel = (metadata.get("kernelspec") or {}).get("name")
    language = (metadata.get("language_info") or {}).get("name")
    if kernel != on_disk["kernelspec"].get("name") or language != on_disk["language_info"]["name"]:
        return
    for key in STRIPPED_KEYS:
        metadata[key] = on_disk[key]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """Jupyter's entry point: this module is the extension."""
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Register `keep_stripped` beside any pre-save hook the user configured."""
    serverapp.contents_manager.register_pre_save_hook(keep_stripped)
