"""The model's name when no flag or file names it (where its config.json lies) and the
scenario's name made from it (a slug)."""

from __future__ import annotations

import re
from pathlib import Path


def name_slug(text: str) -> str:
    """``text`` lower-cased, each run of other characters than ``a-z``, ``0-9`` and ``.``
    a ``-``, cut to 60 characters, without a leading or trailing ``-``."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower())[:60].strip("-")


#: A Hugging Face hub cache folder of a snapshot's file: ``models--ORG--NAME/snapshots/REV``
#: (huggingface_hub ``file_download.repo_folder_name``: ``models--`` + the repo id with
#: ``/`` as ``--``), where ``hf_hub_download`` puts a config.json.
_HF_CACHE_SNAPSHOT = re.compile(r"models--(?P<repo>.+)/snapshots/[^/]+")


def folder_model_name(config: Path) -> tuple[str, str]:
    """(a model name, its origin) from where a config.json lies when the file names none:
    the repo id of a Hugging Face cache snapshot (``Qwen/Qwen3-32B`` for
    ``models--Qwen--Qwen3-32B/snapshots/REV/config.json``, not the revision hash), else the
    folder's name."""
    parent = config.resolve().parent
    cached = _HF_CACHE_SNAPSHOT.search(parent.as_posix())
    if cached is not None and parent.parent.name == "snapshots":
        folder = parent.parent.parent.name
        return cached["repo"].replace("--", "/"), f"the Hugging Face cache folder {folder}"
    return parent.name, "the config.json's folder name"
