"""The results file: JSONL appended one row at a time by one writer, read back by one reader, merged across shards.

Every command that reads results (``run`` resuming, ``summary``, ``report``, ``gate``, ``merge``, ``flaky``, the
OpInfo runner) reads them through ``read_rows``, so a file means the same to all of them: a killed run's torn last
line is dropped with a warning (its case counts as not run), and any other line that is no row is an error naming
the file and the line.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from importlib import metadata

from conformance.schema import default_capture

# What makes a line a row: the case it is about and its status (conformance.schema); every other field may be null.
REQUIRED_FIELDS = ("case_id", "status")


class ResultsFileError(Exception):
    """A results file that cannot be used as asked: a line that is no row, or another run writing it. The message
    is one line naming the file (and the line), for the command to print before exiting with status 2."""


def read_rows(path: str) -> list[dict]:
    """Every row of ``path``, in order (a missing file: none; blank lines are skipped).

    The last line, unterminated and not JSON, is a run killed while writing it: it is dropped with a warning on
    stderr, so its case counts as not run (a resumed run runs it again). Any other line that is not JSON, not an
    object, or lacks a REQUIRED_FIELDS value raises ResultsFileError: a report or a gate built on a file with
    unreadable lines in it would count only what it could read, and say nothing. A row without a ``capture`` (written
    before rows recorded it) reads with the TorchScript capture that made it (``conformance.schema.default_capture``).
    """
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            if _is_torn(line):
                print(f"warning: {path}, line {number}: a torn last line (a run killed while writing it) is ignored; "
                      "its case counts as not run", file=sys.stderr)
                continue
            rows.append(_row(line, f"{path}, line {number}"))
    return rows


def read_files(paths: Iterable[str]) -> list[dict]:
    """Every row of the given results files in order (a folder stands for its ``*.jsonl``), read by read_rows."""
    return [row for path in expand_paths(paths) for row in read_rows(path)]


def expand_paths(paths: Iterable[str]) -> list[str]:
    """Files as given; a directory stands for the ``*.jsonl`` files directly inside it."""
    files: list[str] = []
    for path in map(str, paths):
        if os.path.isdir(path):
            files.extend(sorted(glob.glob(os.path.join(path, "*.jsonl"))))
        elif os.path.exists(path):
            files.append(path)
        else:
            raise FileNotFoundError(f"results file not found: {path}")
    return files


def _is_torn(line: str) -> bool:
    """Whether ``line`` is a killed run's torn write: the file's last line (only it can lack the newline), not JSON.
    A complete row missing only its newline is kept."""
    if line.endswith("\n"):
        return False
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return True
    return False


def _row(line: str, where: str) -> dict:
    """The row ``line`` holds; ResultsFileError saying what is wrong (``where``: the file and line) otherwise."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise ResultsFileError(f"{where}: not JSON ({error.msg}, column {error.colno})") from None
    if not isinstance(row, dict):
        raise ResultsFileError(f"{where}: a JSON {type(row).__name__}, not a row (an object)")
    missing = [name for name in REQUIRED_FIELDS if not row.get(name) or not isinstance(row[name], str)]
    if missing:
        raise ResultsFileError(f"{where}: the row has no {' and no '.join(missing)}")
    if not row.get("capture"):  # a row (or baseline) written before rows said how the model was captured
        row["capture"] = default_capture(row)
    return row


def latest_by_case(rows: Iterable[dict]) -> dict[str, dict]:
    """The last row of each case (a re-run appends a newer row; later lines win)."""
    latest: dict[str, dict] = {}
    for row in rows:
        latest.pop(row["case_id"], None)
        latest[row["case_id"]] = row
    return latest


def engine_cases(rows: Iterable[dict]) -> dict[str, dict]:
    """The latest row of each case this exporter ran: torch.onnx's peer rows (``--exporter peer``) validate the
    model zoo and say nothing about this exporter. (The transformers route's rows, ``--exporter transformers``, are
    this exporter's, judged against their own baseline; their ids are those of the engine's torch.export cases, so
    their results file is never merged with a ``--capture export`` one.)"""
    return latest_by_case(row for row in rows if row.get("exporter", "engine") != "peer")


@contextlib.contextmanager
def sole_writer(path: str) -> Iterator[None]:
    """Hold ``<path>.lock`` while writing ``path``: a second run on the same results file raises ResultsFileError at
    once, instead of running every case again beside the first and appending its rows to the same file.

    An OS advisory lock (flock): the kernel drops it when the holding process ends, however it ends, so a killed run
    never leaves it stuck. The lock file stays behind: removing it would let a third run lock a new file while the
    second still holds the old one.
    """
    lock_path = path + ".lock"
    os.makedirs(os.path.dirname(lock_path) or ".", exist_ok=True)
    with open(lock_path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            raise ResultsFileError(f"{path} is being written by another run (process {holder} holds {lock_path}); "
                                   "wait for it to end, or pass another --out") from None
        handle.truncate(0)
        handle.write(f"{os.getpid()}\n")  # names the holder in the refusal above
        handle.flush()
        yield


def refuse_if_held(path: str) -> None:
    """ResultsFileError at once when another run holds ``path``'s lock, writing nothing: a run checks this before
    the seconds its case selection takes, then takes the lock itself (:func:`sole_writer`)."""
    lock_path = path + ".lock"
    if not os.path.exists(lock_path):
        return
    with open(lock_path, encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = handle.read().strip() or "?"
            raise ResultsFileError(f"{path} is being written by another run (process {holder} holds {lock_path}); "
                                   "wait for it to end, or pass another --out") from None
        fcntl.flock(handle, fcntl.LOCK_UN)


class ResultsWriter:
    """Appends rows to a JSONL file, each written out as soon as its case ends."""

    def __init__(self, path: str):
        self.path = path
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        self._drop_torn_line()

    def _drop_torn_line(self) -> None:
        """Cut a killed run's torn last line (read_rows ignored it, so its case runs again), so that the rows
        appended next do not leave it as an unreadable line inside the file; a complete last row only lacking its
        newline gets one."""
        if not os.path.exists(self.path):
            return
        with open(self.path, "rb+") as handle:
            start = _unterminated_tail(handle)
            if start is None:
                return
            handle.seek(start)
            if _is_torn(handle.read().decode("utf-8", errors="replace")):
                handle.truncate(start)
            else:
                handle.write(b"\n")

    def append(self, row: dict) -> None:
        # Flushed to the kernel at once, so a killed run keeps every finished case; no fsync: it costs ~5 ms a row
        # in the runner's single loop (30 s over the quick tier's 6,000 rows) and guards only against a machine
        # crash, after which the run resumes from the rows that reached the disk (a torn last line is dropped).
        line = json.dumps(row, default=str) + "\n"
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line)


def _unterminated_tail(handle) -> int | None:
    """The offset where the file's last line starts when that line has no newline; None when the file is empty or
    ends with one. Reads backwards in blocks: results files reach tens of megabytes."""
    end = handle.seek(0, os.SEEK_END)
    if end == 0:
        return None
    handle.seek(end - 1)
    if handle.read(1) == b"\n":
        return None
    position = end
    while position > 0:
        block = min(1 << 16, position)
        position -= block
        handle.seek(position)
        newline = handle.read(block).rfind(b"\n")
        if newline >= 0:
            return position + newline + 1
    return 0


def merge(paths: list[str], out: str) -> int:
    """Join JSONL files into ``out`` (one row per case, the latest); returns the number of rows written."""
    rows = read_files(paths)
    latest = latest_by_case(sorted(rows, key=lambda r: r.get("started_at") or ""))
    tmp = out + ".tmp"
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(tmp, "w", encoding="utf-8") as handle:
        for row in latest.values():
            handle.write(json.dumps(row, default=str) + "\n")
    os.replace(tmp, out)
    return len(latest)


def versions() -> dict[str, str | None]:
    def version(dist: str, *alternatives: str) -> str | None:
        for name in (dist, *alternatives):
            try:
                return metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
        return None

    return {
        "torch": version("torch"),
        "torchvision": version("torchvision"),
        "onnx": version("onnx"),
        "onnxruntime": version("onnxruntime-gpu", "onnxruntime"),
        "python": sys.version.split()[0],
    }


def git_revision() -> str | None:
    """The engine's revision: HEAD's short hash of the repository holding the ``exporter`` package (wherever the run
    is started from), with '+dirty' when its tracked files have local changes; None when that is no git checkout (an
    installed copy)."""
    import exporter  # where the engine is, not where the command runs: another repository's hash would be a lie

    where = os.path.dirname(os.path.dirname(os.path.abspath(exporter.__file__)))
    git = ["git", "-C", where]
    try:
        top = subprocess.run([*git, "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=10,
                             check=True).stdout.strip()
        if os.path.realpath(top) != os.path.realpath(where):  # an installed copy inside some other repository
            return None
        rev = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                             check=True).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return rev + ("+dirty" if dirty else "")
