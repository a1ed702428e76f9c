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


def model_dir() -> Path:
    """The model memo (:func:`occmodel.model.memo`): ``model/<key[:2]>/<key>.json``."""
    return root() / "model"


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


# ------------------------------------------------------- bounds, sizes, clearing
TRITON_LIMIT_MB = 256        # default bound of Triton's cache under root()/triton ($OCCMODEL_TRITON_CACHE_MB)
_TRIM_GRACE_S = 120.0        # a Triton cache folder this young may still be written: never trimmed


def triton_root() -> Path:
    return root() / "triton"


def triton_limit() -> int:
    """The bound on Triton's cache, in bytes: $OCCMODEL_TRITON_CACHE_MB (0: keep nothing old), else 256 MB."""
    text = os.environ.get("OCCMODEL_TRITON_CACHE_MB", "").strip()
    try:
        mb = float(text) if text else TRITON_LIMIT_MB
    except ValueError:
        mb = TRITON_LIMIT_MB
    return int(max(mb, 0.0) * 1024 * 1024)


def _tree(path: Path) -> tuple[int, int, float]:
    """(files, bytes, newest mtime) of a folder tree; what vanishes meanwhile is skipped."""
    files = size = 0
    newest = 0.0
    stack = [path]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(Path(e.path))
                        elif e.is_file(follow_symlinks=False):
                            st = e.stat(follow_symlinks=False)
                            files += 1
                            size += st.st_size
                            newest = max(newest, st.st_mtime)
                    except OSError:
                        continue
        except OSError:
            continue
    return files, size, newest


def triton_entries() -> list[tuple[Path, int, float]]:
    """Triton's cache entries under occmodel's folder: (folder, bytes, newest mtime), one per
    compiled kernel (``triton/<class>/<triton key>/``)."""
    out = []
    base = triton_root()
    try:
        classes = [Path(e.path) for e in os.scandir(base) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return out
    for cls in classes:
        try:
            entries = [Path(e.path) for e in os.scandir(cls) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in entries:
            _files, size, newest = _tree(entry)
            out.append((entry, size, newest or _mtime(entry)))
    return out


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def trim_triton(limit: int | None = None, now: float | None = None) -> tuple[int, int]:
    """Delete Triton's oldest cache entries until the folder holds at most `limit` bytes
    (default :func:`triton_limit`). Entries written in the last two minutes are kept (a
    compile may be writing them). Returns (entries removed, bytes freed). occmodel's own
    results never depend on Triton's cache: a trimmed entry only costs a recompile."""
    import shutil
    import time
    limit = triton_limit() if limit is None else limit
    now = time.time() if now is None else now
    entries = triton_entries()
    total = sum(size for _p, size, _t in entries)
    removed = freed = 0
    for path, size, newest in sorted(entries, key=lambda e: e[2]):
        if total <= limit:
            break
        if now - newest < _TRIM_GRACE_S:
            continue
        shutil.rmtree(path, ignore_errors=True)
        total -= size
        removed += 1
        freed += size
    return removed, freed


def compile_entries() -> list[tuple[str, list[Path], int, float]]:
    """occmodel's compile cache: (key, its files (entry .json first, then sidecars), bytes, mtime of the entry)."""
    groups: dict[str, list[Path]] = {}
    for path in _shard_files(compile_dir()):
        groups.setdefault(path.name.split(".", 1)[0], []).append(path)
    out = []
    for key, paths in groups.items():
        paths.sort(key=lambda p: (p.suffix != ".json", p.name))
        size = 0
        for p in paths:
            try:
                size += p.stat().st_size
            except OSError:
                pass
        out.append((key, paths, size, _mtime(paths[0])))
    return out


def model_entries() -> list[tuple[Path, int, float]]:
    """The model memo's files: (path, bytes, mtime); a memo is rebuilt from the card on a miss."""
    out = []
    for path in _shard_files(model_dir()):
        try:
            st = path.stat()
        except OSError:
            continue
        out.append((path, st.st_size, st.st_mtime))
    return out


def _shard_files(base: Path) -> list[Path]:
    """The files of a sharded folder (``base/<shard>/<file>``), leaving out a write in progress
    (``.name.tmp`` starts with "."); an unreadable folder is skipped."""
    try:
        shards = [Path(e.path) for e in os.scandir(base) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    out = []
    for shard in shards:
        try:
            out += [Path(e.path) for e in os.scandir(shard)
                    if e.is_file(follow_symlinks=False) and not e.name.startswith(".")]
        except OSError:
            continue
    return out


def compile_times(arch: str, kernel: str | None = None) -> list[float]:
    """compile_seconds of the cached compiles for `arch` (of `kernel` when given), successes and
    compiler failures alike (both are real compiles)."""
    out = []
    for key, paths, _size, _t in compile_entries():
        if paths[0].suffix != ".json":
            continue
        data = read_json(paths[0])
        if not isinstance(data, dict) or data.get("arch") != arch:
            continue
        if kernel is not None and data.get("kernel") != kernel:
            continue
        secs = data.get("compile_seconds")
        if isinstance(secs, (int, float)) and not isinstance(secs, bool) and secs > 0:
            out.append(float(secs))
    return out


CACHES = ("compile", "triton", "model")      # what `occmodel cache` shows and clears


def clear(older_than_s: float | None = None, now: float | None = None) -> dict[str, dict[str, int]]:
    """Delete occmodel's compile results, Triton's cache and the model memo under root() (only
    entries last written more than `older_than_s` seconds ago, when given). An entry's .json goes
    before its sidecars, so a reader never finds an entry whose files are half gone. Calibrations
    (``calibration/``) are measurements, not a cache: never touched. Returns what was freed:
    {"compile": {"entries", "bytes"}, "triton": {...}, "model": {...}}."""
    import shutil
    import time
    now = time.time() if now is None else now
    done = {name: {"entries": 0, "bytes": 0} for name in CACHES}
    for _key, paths, size, mtime in compile_entries():
        if older_than_s is not None and now - mtime < older_than_s:
            continue
        for p in paths:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        done["compile"]["entries"] += 1
        done["compile"]["bytes"] += size
    for path, size, newest in triton_entries():
        if older_than_s is not None and now - newest < older_than_s:
            continue
        shutil.rmtree(path, ignore_errors=True)
        done["triton"]["entries"] += 1
        done["triton"]["bytes"] += size
    for path, size, mtime in model_entries():
        if older_than_s is not None and now - mtime < older_than_s:
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        done["model"]["entries"] += 1
        done["model"]["bytes"] += size
    for folder in (compile_dir(), triton_root(), model_dir()):     # empty shard / class folders
        with contextlib.suppress(OSError):
            for sub in os.scandir(folder):
                with contextlib.suppress(OSError):
                    os.rmdir(sub.path)
    return done
