"""File output and bounded input: outputs checked before a run and written atomically.

Rules (every command that writes follows them):

- an output path is checked before any work starts (``check_output_file``,
  ``check_output_dir``): its parent must be a directory (or creatable), writable, the name
  not too long, no symlink loop on the way;
- an existing target is replaced only when it is a regular file; a symlink is followed
  (the file it points to is replaced, the link stays) and a device, FIFO, socket or
  directory is refused, never replaced;
- the text goes to a temporary file next to the (resolved) target, is flushed to disk and
  renamed over it, so readers and an interrupted run see the old file or the new, never
  half; a full disk or any other write error is one ``SpecsimError`` and no partial file;
- an input file is read whole only up to a stated size (``read_bounded_text``).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from sim.errors import SpecsimError

#: Largest input file specsim reads (scenario, result document, log, scrape, bench output):
#: the biggest real inputs are server logs of a long run (tens of MB); 256 MiB leaves room
#: while a file of that size still fits the memory of a small machine many times over.
MAX_INPUT_BYTES = 256 * 1024 * 1024


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def os_reason(exc: OSError) -> str:
    """The reason of an OSError in words (``no space left on device``), without the path."""
    if exc.errno is not None:
        return os.strerror(exc.errno).lower()
    return str(exc) or exc.__class__.__name__


def _resolve_target(path: Path, source: str) -> Path:
    """The file an output to ``path`` lands in: a symlink's target, else ``path`` itself.

    Refuses special files (devices, FIFOs, sockets), directories, symlink loops and
    dangling links into directories that do not exist.
    """
    try:
        st = path.lstat()
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise SpecsimError(f"cannot write: {os_reason(exc)}", source=source) from None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = path.resolve(strict=False)
        except (RuntimeError, OSError):
            raise SpecsimError("cannot write: symbolic link loop", source=source) from None
        try:
            os.stat(path)
        except FileNotFoundError:
            return target  # dangling link: the file it names is created
        except OSError as exc:
            raise SpecsimError(f"cannot write: {os_reason(exc)}", source=source) from None
        return _resolve_target(target, source)
    if stat.S_ISDIR(st.st_mode):
        raise SpecsimError("cannot write: is a directory", source=source)
    if not stat.S_ISREG(st.st_mode):
        raise SpecsimError(
            "cannot write: not a regular file (a device, FIFO or socket is never replaced)",
            source=source,
        )
    return path


def _check_directory_chain(directory: Path, source: str) -> None:
    """``directory`` is a writable directory, or can be created (no file in the way)."""
    probe = directory
    while True:
        try:
            st = probe.stat()
        except FileNotFoundError:
            if probe.parent == probe:
                raise SpecsimError("cannot write: no such directory", source=source) from None
            probe = probe.parent
            continue
        except OSError as exc:
            raise SpecsimError(f"cannot write: {os_reason(exc)}", source=source) from None
        break
    if not stat.S_ISDIR(st.st_mode):
        raise SpecsimError(f"cannot write: {probe} is not a directory", source=source)
    if not os.access(probe, os.W_OK | os.X_OK):
        raise SpecsimError(f"cannot write: permission denied in {probe}", source=source)


def _exists(path: Path) -> bool:
    try:
        os.lstat(path)
    except OSError:
        return False
    return True


def _check_name_length(path: Path, source: str) -> None:
    probe = path.absolute().parent
    while not _exists(probe) and probe.parent != probe:
        probe = probe.parent
    try:
        name_max = os.pathconf(probe, "PC_NAME_MAX")
        path_max = os.pathconf(probe, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    # the temporary file adds a dot, a random part and ".tmp" to the name
    for part in path.parts:
        if len(os.fsencode(part)) + 16 > name_max:
            raise SpecsimError(
                f"cannot write: file name too long (limit {name_max - 16} bytes here)",
                source=source,
            )
    if len(os.fsencode(str(path.absolute()))) + 16 > path_max:
        raise SpecsimError("cannot write: path too long", source=source)


def check_output_file(path: str | Path, source: str | None = None) -> Path:
    """Check that a file can be written at ``path`` (before the work); returns the target.

    The target is the file itself, or what a symlink at ``path`` points to.
    """
    source = source or str(path)
    p = Path(path)
    if str(path) == "" or p.name in ("", ".", ".."):
        raise SpecsimError("cannot write: not a file name", source=source)
    _check_name_length(p, source)
    target = _resolve_target(p, source)
    _check_directory_chain(target.parent, source)
    return target


def check_output_dir(path: str | Path, source: str | None = None) -> Path:
    """Check that ``path`` is a directory files can be written into (or can be created)."""
    source = source or str(path)
    p = Path(path)
    if str(path) == "":
        raise SpecsimError("cannot write: empty directory name", source=source)
    _check_name_length(p / "x", source)
    try:
        st = p.stat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise SpecsimError(f"cannot write: {os_reason(exc)}", source=source) from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise SpecsimError("cannot write: exists and is not a directory", source=source)
    _check_directory_chain(p, source)
    return p


def make_dirs(path: Path, source: str) -> list[Path]:
    """``mkdir -p path``; returns the directories it created (outermost first)."""
    created: list[Path] = []
    probe = path
    while not _exists(probe):
        created.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpecsimError(f"cannot write: {os_reason(exc)}", source=source) from None
    return created[::-1]


def atomic_write_text(path: str | Path, text: str | bytes, *, source: str | None = None) -> None:
    """Write ``text`` (or bytes) to ``path`` atomically, with the usual permissions.

    The target is checked as ``check_output_file`` does (a symlink is followed, a special
    file refused). The text goes to a temporary file in the target's directory, is flushed
    to disk, given the mode a plain ``open(path, "w")`` would give (0666 less the umask;
    mkstemp makes 0600) and renamed over the target. Any OSError (a full disk, a read-only
    file system) is one SpecsimError naming ``source`` (default: the path); the temporary
    file is removed.
    """
    source = source or str(path)
    target = check_output_file(path, source)
    created = make_dirs(target.parent, source)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        data = text.encode("utf-8") if isinstance(text, str) else text
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise SpecsimError(f"cannot write: {os_reason(exc)}", source=source) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
            for d in reversed(created):
                try:
                    d.rmdir()
                except OSError:
                    break


#: Directories of kernel pseudo-files: they look like regular files (``/proc/self/mem``,
#: ``/sys/...``) or are devices (``/dev/zero``) and never hold an input specsim reads.
PSEUDO_ROOTS = ("/proc", "/sys", "/dev")


def _pseudo_file(path: Path) -> bool:
    try:
        resolved = str(path.resolve(strict=False))
    except (OSError, RuntimeError):
        return False  # a loop: reported when the file is opened
    return any(resolved == r or resolved.startswith(r + "/") for r in PSEUDO_ROOTS)


def _size_words(limit: int) -> str:
    if limit >= 1024 * 1024:
        return f"{limit / (1024 * 1024):g} MiB"
    if limit >= 1024:
        return f"{limit / 1024:g} KiB"
    return f"{limit} bytes"


def read_bounded_bytes(path: str | Path, *, limit: int = MAX_INPUT_BYTES) -> bytes:
    """A regular file's bytes, at most ``limit`` of them; one SpecsimError naming the file
    otherwise: missing, a directory, a FIFO, socket or device, a kernel pseudo-file under
    /proc, /sys or /dev, a symbolic link loop, unreadable, or larger than ``limit``.

    The file is opened non-blocking (a FIFO swapped in after the check would not hang the
    read) and checked again through the open descriptor.
    """
    source = str(path)
    p = Path(path)
    try:
        st = p.stat()  # before opening: opening a FIFO would block
        if stat.S_ISDIR(st.st_mode):
            raise SpecsimError("cannot read: is a directory", source=source)
        if not stat.S_ISREG(st.st_mode) or _pseudo_file(p):
            raise SpecsimError(
                "cannot read: not a regular file (a FIFO, socket, device or /proc, /sys "
                "entry is never read)",
                source=source,
            )
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise SpecsimError("cannot read: not a regular file", source=source)
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise SpecsimError("no such file", source=source) from None
    except IsADirectoryError:
        raise SpecsimError("cannot read: is a directory", source=source) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SpecsimError("cannot read: symbolic link loop", source=source) from None
        if exc.errno == errno.ENAMETOOLONG:
            raise SpecsimError("cannot read: file name too long", source=source) from None
        raise SpecsimError(f"cannot read: {os_reason(exc)}", source=source) from None
    if len(data) > limit:
        raise SpecsimError(
            f"file larger than {_size_words(limit)} (the input size limit)", source=source
        )
    return data


def read_bounded_text(
    path: str | Path, *, limit: int = MAX_INPUT_BYTES, errors: str = "strict"
) -> str:
    """A text file's contents (UTF-8, a leading byte-order mark dropped; ``errors="replace"``
    for logs) up to ``limit`` bytes; SpecsimError naming the file otherwise (see
    ``read_bounded_bytes``)."""
    source = str(path)
    data = read_bounded_bytes(path, limit=limit)
    try:
        return data.decode("utf-8-sig", errors=errors)
    except UnicodeDecodeError as exc:
        raise SpecsimError(
            f"not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r})",
            source=source,
        ) from None


def json_depth(text: str) -> int:
    """Deepest bracket nesting of a JSON text outside strings, in one pass: a document is
    refused by its depth before ``json.loads`` recurses into it."""
    depth = top = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            top = max(top, depth)
        elif ch in "]}":
            depth -= 1
    return top
