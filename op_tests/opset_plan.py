"""Which opsets each op case runs at in the default test run (CI): its lowest, every opset where its exported form
changes, and the newest, so that opsets added to the range cost CI only where they change what is exported.

    python -m op_tests.opset_plan [--processes 2]       # writes op_tests/opset_plan.json (20 min on 2 busy cores)
    python -m op_tests.opset_plan --only 'group_norm*'   # refreshes the cases a change of form touches

The plan records, for every case and mode (static, dynamic), the opsets 7-26 at which the TorchScript export's graph
(or its refusal) differs from the one at the opset below: the form fingerprints of ``op_tests.fingerprints``, which
leave out the opset stamp. The test run adds what the case itself declares: the opset below its lowest (where the
refusal is checked), its lowest static and dynamic opsets, every opset where its known failures begin or end, and
the newest opset. A case the plan does not hold (a new one) runs at every opset until the plan is written again.

``OP_TESTS_OPSETS=all`` runs every case at every opset (``nox -s op_matrix``): the whole matrix, which also checks
every ONNX op version a form meets (ONNX Runtime's kernels are registered per op version, so an unchanged graph can
meet another kernel at a new opset).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import multiprocessing
import os
import sys
import warnings

import torch

from opcases import OPSETS, OpCase, export_modes

PLAN_PATH = os.path.join(os.path.dirname(__file__), "opset_plan.json")
_CASES: list[OpCase] = []


def _load_cases() -> None:
    from opcases import all_cases

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    _CASES[:] = all_cases()


def _changes(index: int) -> tuple[str, dict[str, list[int]]]:
    """The opsets at which each mode's form fingerprint differs from the opset below's (the lowest always)."""
    from op_tests.fingerprints import export_fingerprint

    case = _CASES[index]
    found: dict[str, list[int]] = {}
    for mode in ("static", "dynamic"):
        opsets = [opset for opset in OPSETS if mode in export_modes(case, opset)]
        prints = [export_fingerprint(case, opset, mode == "dynamic", form=True) for opset in opsets]
        found[mode] = [opset for i, opset in enumerate(opsets) if i == 0 or prints[i] != prints[i - 1]]
    return case.name, found


def write_plan(processes: int, path: str = PLAN_PATH, only: str = "") -> dict:
    """The plan of every case (or, with ``only``, of the cases whose names match that pattern, the others' entries
    kept as ``path`` holds them), written to ``path``."""
    _load_cases()
    indices = [i for i, case in enumerate(_CASES) if not only or fnmatch.fnmatch(case.name, only)]
    plan: dict[str, dict[str, list[int]]] = load_plan(path) if only else {}
    with multiprocessing.get_context("spawn").Pool(processes, initializer=_load_cases) as pool:
        for done, (name, found) in enumerate(pool.imap_unordered(_changes, indices, chunksize=4), 1):
            plan[name] = found
            if done % 100 == 0:
                print(f"{done}/{len(_CASES)} cases", file=sys.stderr, flush=True)
    with open(path, "w") as out:
        json.dump({"opsets": [OPSETS[0], OPSETS[-1]], "cases": dict(sorted(plan.items()))}, out, indent=0)
    return plan


def load_plan(path: str = PLAN_PATH) -> dict[str, dict[str, list[int]]]:
    """The plan's cases, or none (every case at every opset) where it was written for another opset range."""
    if not os.path.exists(path):
        return {}
    with open(path) as file:
        plan = json.load(file)
    return plan["cases"] if tuple(plan.get("opsets", ())) == (OPSETS[0], OPSETS[-1]) else {}


def planned_opsets(case: OpCase, mode: str, plan: dict) -> tuple[int, ...]:
    """The opsets ``case`` runs at in ``mode`` by default: the plan's form changes plus what the case declares."""
    changes = plan.get(case.name, {}).get(mode)
    if changes is None:
        return OPSETS
    lowest = case.min_opset_for(mode == "dynamic")
    known = {**case.known_failures, **(case.dynamic_known_failures if mode == "dynamic" else {})}
    boundaries = {opset for opset in OPSETS if opset - 1 in OPSETS and (opset in known) != (opset - 1 in known)}
    chosen = set(changes) | {lowest - 1, lowest, OPSETS[-1]} | boundaries
    return tuple(opset for opset in OPSETS if opset in chosen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m op_tests.opset_plan", description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--out", default=PLAN_PATH)
    parser.add_argument("--only", default="", help="refresh the cases whose names match this pattern ('group_norm*')")
    arguments = parser.parse_args(argv)
    plan = write_plan(arguments.processes, arguments.out, arguments.only)
    runs = sum(len(set(opsets)) for modes in plan.values() for opsets in modes.values())
    print(f"{len(plan)} cases, {runs} form changes written to {arguments.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
