"""Strict command-line parsing shared by ``python -m conformance`` (and its ``gate``), ``python -m benchmarks`` and
``python -m op_tests.opinfo``.

Every value is checked by argparse before any work starts: a bad one ends the command with a one-line error and
exit status 2, having written nothing.
"""

from __future__ import annotations

import argparse
import os

# exporter.registry's MIN_OPSET to MAX_OPSET, written out so that command lines parse without importing the exporter
# (and torch: 6 s); tests/architecture/test_opset_range.py holds the two equal.
ALL_OPSETS = tuple(range(7, 27))
KINDS = ("model", "example", "op")  # what a conformance case runs: a zoo model, a docs example, an op case (opcases)


class StrictParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (``prog: error: message (see --help)``), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def opsets(text: str) -> tuple[int, ...]:
    """'7-20', '9,11,14' or '11' -> sorted opsets, each within ALL_OPSETS."""
    spans = _spans(text, f"opsets like 11, 9,11,14 or {ALL_OPSETS[0]}-{ALL_OPSETS[-1]}")
    if any(span.start not in ALL_OPSETS or span[-1] not in ALL_OPSETS for span in spans):
        raise argparse.ArgumentTypeError(f"{text!r}: opsets must lie within {ALL_OPSETS[0]}-{ALL_OPSETS[-1]}")
    return tuple(sorted({opset for span in spans for opset in span}))


def indices(text: str) -> tuple[int, ...]:
    """'0-3,7' or '4' -> sorted indices (whole numbers from 0: a minus sign cannot parse)."""
    return tuple(sorted({index for span in _spans(text, "indices like 4, 0,2 or 0-3,7") for index in span}))


def _spans(text: str, expected: str) -> list[range]:
    """The inclusive ranges of a comma-separated list of 'a' and 'a-b' items; ``expected`` says what a bad one
    should have looked like."""
    spans = []
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            span = range(int(low), int(high if dash else low) + 1)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {expected}") from None
        if not span:
            raise argparse.ArgumentTypeError(f"{text!r}: the range {part} is empty")
        spans.append(span)
    return spans


def shard(text: str) -> tuple[int, int]:
    """'i/n' with 0 <= i < n (0-based) -> (i, n)."""
    index, slash, count = text.partition("/")
    try:
        parsed = int(index), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected i/n, e.g. 0/4 (0-based)") from None
    if not slash or not 0 <= parsed[0] < parsed[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: expected i/n with 0 <= i < n, e.g. 0/4")
    return parsed


def _number(text: str, convert, what: str):
    try:
        return convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def positive_int(text: str) -> int:
    value = _number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float, "a number")
    if not value > 0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
    return value


def existing_path(text: str) -> str:
    """A file or folder that exists (results to read)."""
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text}: no such file or folder")
    return text


def choice_list(choices: tuple[str, ...]):
    """A comma-separated list whose items all come from ``choices``."""
    def parse(text: str) -> tuple[str, ...]:
        items = tuple(item.strip() for item in text.split(",") if item.strip())
        unknown = [item for item in items if item not in choices]
        if unknown or not items:
            raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(choices)}")
        return items

    return parse
