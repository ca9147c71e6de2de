"""Fingerprints of what the exporter writes for every hand-written op case: proof that a refactoring changed no byte.

    python -m op_tests.fingerprints --out FILE [--opsets 7-20] [--processes 2]
    python -m op_tests.fingerprints compare A B

The first form exports every case of ``opcases`` the way the op tests do (``conformance.op_runner.run_case``: seeded, the
same inputs, names and dynamic axes), in every mode the op tests export it at each opset (``opcases.export_modes``):
through TorchScript at every opset asked for, static and dynamic; through torch.export (``dynamo=True``) at the op
tests' ``EXPORT_OPSETS`` and ``EXPORT_MODES`` among them. It records one line per export: the sha256 of the ONNX
bytes written, or, where the export raises, the error's type and message. It runs no ONNX Runtime. The second form
prints every key whose fingerprint differs between two such files (or that only one holds) and exits 1 if any does.

Keys read ``<case name>/opset<N>/<static|dynamic>``, with ``/export`` appended for the torch.export capture.

Nothing is normalized: with the op tests' options the written model holds no provenance (node doc strings naming
source lines are written only with ``provenance_in_model=True`` or ``verbose=True``), so moving code between modules
must leave every byte as it was.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import multiprocessing
import sys
import warnings

import torch

from conformance.op_runner import export_arguments
from exporter import Capture
from op_tests.torch_export_limits import EXPORT_MODES, EXPORT_OPSETS
from opcases import OPSETS, OpCase, export_modes

_CASES: list[OpCase] = []  # each worker process's own copy of the cases (their inputs are lambdas: not picklable)


def export_fingerprint(case: OpCase, opset: int, dynamic: bool, capture: Capture = Capture.TRACE,
                       form: bool = False) -> str:
    """``sha256:<hex>`` of the ONNX bytes ``case`` exports to, or ``<ErrorType>: <message>`` where the export raises.
    With ``form``, of the graph alone and with the opset left out of the message: what stays equal from one opset to
    the next where the export's form does not change (``op_tests.opset_plan``)."""
    import exporter

    torch.manual_seed(0)
    model = case.build()
    example, names, axes = export_arguments(case, dynamic, capture)
    buffer = io.BytesIO()
    try:
        exporter.export(model, tuple(example), buffer, opset_version=opset, input_names=names, dynamic_axes=axes,
                        dynamo=capture == Capture.EXPORT, check_dynamic_axes=not case.frozen_by_trace)
    except Exception as error:  # a refusal is behaviour too: its type and message must not change either
        message = f"{type(error).__name__}: {error}"
        return message.replace(f"opset {opset}", "opset N") if form else message
    if form:
        import onnx

        return "sha256:" + hashlib.sha256(onnx.load_from_string(buffer.getvalue()).graph.SerializeToString()).hexdigest()
    return "sha256:" + hashlib.sha256(buffer.getvalue()).hexdigest()


def case_fingerprints(case: OpCase, opsets: tuple[int, ...]) -> dict[str, str]:
    """Every fingerprint of one case: TorchScript at each of ``opsets``, torch.export at the export opsets among
    them, each in the modes the op tests export it in."""
    exports = [(opset, mode, Capture.TRACE, "") for opset in opsets for mode in export_modes(case, opset)]
    exports += [(opset, mode, Capture.EXPORT, "/export") for opset in opsets if opset in EXPORT_OPSETS
                for mode in export_modes(case, opset, EXPORT_MODES)]
    return {f"{case.name}/opset{opset}/{mode}{suffix}": export_fingerprint(case, opset, mode == "dynamic", capture)
            for opset, mode, capture, suffix in exports}


def _load_cases() -> None:
    from opcases import all_cases

    warnings.simplefilter("ignore")  # the cases' deprecation warnings say nothing about the bytes
    torch.set_num_threads(1)  # one core per process
    _CASES[:] = all_cases()


def _fingerprint_case(task: tuple[int, tuple[int, ...]]) -> dict[str, str]:
    index, opsets = task
    return case_fingerprints(_CASES[index], opsets)


def fingerprint_all(opsets: tuple[int, ...], processes: int) -> dict[str, str]:
    """Every case's fingerprints, computed in ``processes`` worker processes."""
    _load_cases()
    tasks = [(index, opsets) for index in range(len(_CASES))]
    fingerprints: dict[str, str] = {}
    with multiprocessing.get_context("spawn").Pool(processes, initializer=_load_cases) as pool:
        for done, found in enumerate(pool.imap_unordered(_fingerprint_case, tasks, chunksize=4), 1):
            fingerprints.update(found)
            if done % 100 == 0:
                print(f"{done}/{len(tasks)} cases", file=sys.stderr, flush=True)
    return fingerprints


def differences(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """The keys whose fingerprints differ between ``a`` and ``b``, or that only one of them holds, sorted."""
    return sorted(key for key in a.keys() | b.keys() if a.get(key) != b.get(key))


def compare(path_a: str, path_b: str) -> int:
    """Print each differing key with both fingerprints; 1 if any differs, else 0."""
    with open(path_a) as file_a, open(path_b) as file_b:
        a, b = json.load(file_a), json.load(file_b)
    differing = differences(a, b)
    for key in differing:
        print(f"{key}\n  {path_a}: {a.get(key, '(missing)')}\n  {path_b}: {b.get(key, '(missing)')}")
    print(f"{len(differing)} of {len(a.keys() | b.keys())} fingerprints differ")
    return 1 if differing else 0


def opset_range(text: str) -> tuple[int, ...]:
    """``"7-20"`` -> (7, ..., 20); ``"13"`` -> (13,). Only opsets the exporter supports."""
    low, _, high = text.partition("-")
    opsets = tuple(range(int(low), int(high or low) + 1))
    unsupported = sorted(set(opsets) - set(OPSETS))
    if unsupported or not opsets:
        raise argparse.ArgumentTypeError(f"opsets {text!r}: the exporter supports {OPSETS[0]}-{OPSETS[-1]}")
    return opsets


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["compare"]:
        parser = argparse.ArgumentParser(prog="python -m op_tests.fingerprints compare")
        parser.add_argument("a")
        parser.add_argument("b")
        arguments = parser.parse_args(argv[1:])
        return compare(arguments.a, arguments.b)
    parser = argparse.ArgumentParser(prog="python -m op_tests.fingerprints", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="the JSON file to write: key -> fingerprint")
    parser.add_argument("--opsets", type=opset_range, default=OPSETS, help="e.g. 7-20 (the default) or 13")
    parser.add_argument("--processes", type=int, default=2)
    arguments = parser.parse_args(argv)
    fingerprints = fingerprint_all(arguments.opsets, arguments.processes)
    with open(arguments.out, "w") as out:
        json.dump(fingerprints, out, indent=0, sort_keys=True)
    print(f"{len(fingerprints)} fingerprints written to {arguments.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
