"""The on-disk compile cache: where it lives, and how entries are written and read back.

Storage only; what an entry must contain is :mod:`occmodel.compile`'s to check. Rules:

* ``$OCCMODEL_CACHE_DIR/compile/<key[:2]>/<key>.json`` is one entry; its sidecars
  (``.ttgir``, ``.ptx``, ``.sass``, ``.cubin``) sit beside it and the entry holds the
  sha256 of each, so a truncated or swapped sidecar is a miss, never served.
* Every write goes to a temp file in the same folder, is fsynced, renamed over the
  target (atomic on POSIX) and the folder fsynced: a crash or a concurrent writer
  leaves the old entry or the new one, never half of one.
* Sidecars are written before the entry that vouches for them.
* A cache folder that cannot be written (read-only, a file, no space for a probe)
  is :class:`CacheError` (one line, exit 2) before anything compiles.
* Triton's own compile cache is kept under ``$OCCMODEL_CACHE_DIR/triton/<class>/``
  (see :func:`triton_dir`): Triton keys constexprs by ``str(value)``, so ``"fp16"`` and
  ``tl.float16`` collide there; each class of constexpr types and each ptxas gets its
  own folder so they cannot. ``$TRITON_CACHE_DIR`` is never used by occmodel's compiles.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import OccmodelError


class CacheError(OccmodelError):
    """The compile cache folder cannot be used (read-only, not a folder, no space)."""


def root() -> Path:
    """$OCCMODEL_CACHE_DIR, or ~/.cache/occmodel."""
    return Path(os.environ.get("OCCMODEL_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "occmodel"))


def compile_dir() -> Path:
    return root() / "compile"


def entry_path(key: str, suffix: str = ".json") -> Path:
    return compile_dir() / key[:2] / f"{key}{suffix}"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_mode() -> int:
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


_FILE_MODE = _file_mode()


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the whole new one (fsynced)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.", suffix=".tmp")
    try:
        os.chmod(tmp, _FILE_MODE)              # mkstemp makes 0600; a written file gets the usual mode
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_json(path: Path) -> Any:
    """The parsed JSON at `path`, or None when it is missing, unreadable or not JSON."""
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def read_sidecar(key: str, name: str, digest: Any) -> bytes | None:
    """The bytes of sidecar `name` of entry `key` if their sha256 equals `digest`, else None."""
    if not isinstance(digest, str):
        return None
    try:
        data = entry_path(key, f".{name}").read_bytes()
    except OSError:
        return None
    return data if sha256(data) == digest else None


def store(key: str, entry: dict[str, Any], sidecars: dict[str, bytes]) -> None:
    """Write the sidecars, then the entry with their hashes (``entry["sidecars"]``).
    A failed write (full disk, read-only) leaves no entry and never fails the compile."""
    try:
        hashes = {}
        for name, data in sidecars.items():
            atomic_write(entry_path(key, f".{name}"), data)
            hashes[name] = sha256(data)
        doc = dict(entry, sidecars=hashes)
        atomic_write(entry_path(key), json.dumps(doc, indent=1, default=str).encode())
    except OSError:
        pass


def check_usable() -> None:
    """CacheError (one line) unless the compile cache and Triton's folder under it can be written."""
    _check_usable(str(root()))


@functools.lru_cache(maxsize=None)
def _check_usable(where: str) -> None:
    base = Path(where)
    for folder in (base / "compile", base / "triton"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe.")
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            what = exc.strerror or type(exc).__name__
            if isinstance(exc, (FileExistsError, NotADirectoryError)):
                what = "a file, not a folder, is in the way"
            _check_usable.cache_clear()
            raise CacheError(f"compile cache {str(folder)!r} cannot be written ({what}); set "
                             "OCCMODEL_CACHE_DIR to a writable folder") from None


def triton_dir(type_class: Any, ptxas: Any) -> str:
    """Triton's cache folder for compiles whose constexpr types are `type_class` with `ptxas`.

    Inside one folder every constexpr of a given name has the same Python type, so
    Triton's ``str(value)`` key cannot confuse ``"fp16"`` with ``tl.float16`` (or 16
    with ``"16"``); a different ptxas binary gets a different folder too."""
    tag = sha256(json.dumps([type_class, ptxas], sort_keys=True, default=str).encode())[:16]
    return str(root() / "triton" / tag)
