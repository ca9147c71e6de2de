"""Sessions: tests, opinfo, conformance, report, bench, gate, lint. Every session installs from the lock with uv."""

from __future__ import annotations

import os

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["tests"]

LOCK = "requirements.lock"


def install(session: nox.Session) -> None:
    """The locked dependency set (torch 2.13.0 + torchvision 0.28.0, resolved by uv) plus this project."""
    session.install("-r", LOCK)
    session.install("--no-deps", "-e", ".")


def _workers() -> str:
    return os.environ.get("TEST_WORKERS", str(max(2, os.cpu_count() or 2)))


@nox.session
def tests(session: nox.Session) -> None:
    """Unit tests (tests/) and per-op tests (op_tests/), in parallel with xdist: each op case at the opsets
    ``op_tests/opset_plan.json`` chooses for it (its lowest, every opset where its form changes, the newest), through
    torch.export at 18 and 26, the OpInfo quick tier at 7-20, 23 and 26."""
    install(session)
    args = session.posargs or ["tests", "op_tests"]
    session.run("python", "-m", "pytest", "-n", _workers(), "-q", "--max-worker-restart=8", *args)


@nox.session
def op_matrix(session: nox.Session) -> None:
    """The whole op matrix: every op case and the OpInfo quick tier at every opset 7-26, static and dynamic, through
    TorchScript at each and torch.export at each (OP_TESTS_OPSETS=all, OP_TESTS_EXPORT_OPSETS=all). Arguments after
    ``--`` go to pytest (``-k "opset23"``). ``python -m op_tests.opset_plan`` writes the default run's choice again."""
    install(session)
    session.env.update(OP_TESTS_OPSETS="all", OP_TESTS_EXPORT_OPSETS="all")
    session.run("python", "-m", "pytest", "-n", _workers(), "-q", "--max-worker-restart=8",
                *(session.posargs or ["op_tests"]))


@nox.session
def generation(session: nox.Session) -> None:
    """Static-cache generation (opset 24, both captures) for every decoder-only architecture of the model zoo, 8
    greedy tokens through ONNX Runtime against generate (CI runs a representative few): tests/engine/test_generation.py."""
    install(session)
    session.env.update(GENERATION_ARCHITECTURES="all")
    session.run("python", "-m", "pytest", "-n", _workers(), "-q", *(session.posargs or ["tests/engine/test_generation.py"]))


@nox.session
def opinfo(session: nox.Session) -> None:
    """The full OpInfo matrix: every OpInfo of torch's op_db, every sample, opsets 7-26, static and dynamic, into
    ``results/opinfo.jsonl`` (resumable: cases already there are kept), its op x opset HTML report (with the
    hand-written cases when ``results/op_tests.jsonl`` exists) in ``results/reports/ops``, then the expectations
    check, which exits non-zero on a mismatch, an unexpected failure or an unexpected pass (the run only records,
    so that the report is written whatever the verdict). Arguments after ``--``
    go to ``python -m op_tests.opinfo run``: ``--dtypes float32,int64,bool,float16``, ``--ops 'gather,*pool*'``,
    ``--opsets 7-10``, ``--workers N``, ``--redo all``."""
    install(session)
    out = "results/opinfo.jsonl"
    session.run("python", "-m", "op_tests.opinfo", "run", "--out", out, "--record-only",
                *(session.posargs or ["--workers", _workers()]))
    sources = [out] + [path for path in ["results/op_tests.jsonl"] if os.path.exists(path)]
    session.run("python", "-m", "op_tests.opinfo", "report", *sources, "--out", os.path.join("results", "reports", "ops"))
    session.run("python", "-m", "op_tests.opinfo", "check", out)


@nox.session
def conformance(session: nox.Session) -> None:
    """The main job: a fresh conformance run (quick tier on CPU by default), its HTML report, then the release gate.

    Arguments after ``--`` go to ``python -m conformance run``: ``--tier full --ep cuda``, ``--shard 0/4``,
    ``--opsets 9,11``, ``--models 'resnet*'``, ``--out FILE``, ``--workers N``, ``--timeout S``, ``--ort-level all``
    (ONNX Runtime's own default optimization level instead of basic), ``--capture export`` (torch.export, gated
    against ``baselines/conformance_<tier>_export.jsonl``, or alone while there is none); ``--resume`` keeps
    the cases already in the results file instead of starting over. The session exits non-zero when the release
    gate fails: against the tier's baseline (``baselines/conformance_<tier>.jsonl``; a run of part of the tier is
    compared on the cases it ran) or, without one, when any case fails. The report's badge shows the same verdict.
    ``--update-baseline`` then writes the tier's baseline from this run's results: the only way a baseline changes.
    ``nox -s conformance -- merge a.jsonl b.jsonl --out all.jsonl`` (or summary, list, report, gate, flaky) runs
    that subcommand instead.
    """
    install(session)
    args = list(session.posargs)
    if args and args[0] in ("merge", "summary", "list", "report", "gate", "flaky"):
        session.run("python", "-m", "conformance", *args)
        return
    update_baseline, resume = "--update-baseline" in args, "--resume" in args
    args = [a for a in args if a not in ("--update-baseline", "--resume")]
    out = _option(args, "--out") or _default_results(args)
    if "--out" not in args:
        args += ["--out", out]
    # The gate below judges the run, after the report is built, so the run itself only records.
    session.run("python", "-m", "conformance", "run", *args, "--record-only", *([] if resume else ["--fresh"]))
    baseline = _baseline_of(args)
    if update_baseline:
        session.run("python", "-m", "conformance", "gate", out, "--baseline", baseline, "--update-baseline")
    report_dir = os.path.join("results", "reports", os.path.splitext(os.path.basename(out))[0])
    judged = _judged_against(args, baseline)
    session.run("python", "-m", "conformance", "report", out, "--out", report_dir, *judged)
    session.log(f"results: {out}")
    session.run("python", "-m", "conformance", "gate", out, *(judged or ["--no-baseline"]),
                "--json", os.path.join(report_dir, "gate.json"))


def _judged_against(args: list[str], baseline: str) -> list[str]:
    """Gate and report options: the tier's baseline when it exists (``--partial`` for a run of part of the tier)."""
    if not os.path.exists(baseline):
        return []
    scoped = any(_option(args, name) for name in _SCOPE_OPTIONS)
    return ["--baseline", baseline, *(["--partial"] if scoped else [])]


# Options that run part of a tier: such a run is compared with the baseline only on the cases it ran.
_SCOPE_OPTIONS = ("--shard", "--models", "--exclude", "--case", "--opsets", "--mode")


def _baseline_of(args: list[str]) -> str:
    """The committed baseline of the run's tier and capture: what the gate compares a run of that tier with
    (``baselines/conformance_<tier>.jsonl``; ``conformance_<tier>_export.jsonl`` for ``--capture export``)."""
    return os.path.join("baselines", f"conformance_{_option(args, '--tier') or 'quick'}{_capture_suffix(args)}.jsonl")


def _capture_suffix(args: list[str]) -> str:
    """'_export' for a torch.export run (``--capture export``): its cases are not the TorchScript baseline's;
    '_transformers' for the transformers route (``--exporter transformers``), whose files are transformers' exporter's."""
    if _option(args, "--exporter") == "transformers":
        return "_transformers"
    return "_export" if _option(args, "--capture") == "export" else ""


def _option(args: list[str], name: str) -> str | None:
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _default_results(args: list[str]) -> str:
    """results/conformance_<tier>[_export][_<ep>][.shard<i>of<n>].jsonl, so differently scoped runs never share a file."""
    tier = _option(args, "--tier") or "quick"
    ep = _option(args, "--ep")
    shard = _option(args, "--shard")
    name = f"conformance_{tier}{_capture_suffix(args)}" + (f"_{ep.replace(',', '-')}" if ep else "")
    name += f".shard{shard.replace('/', 'of')}" if shard else ""
    return os.path.join("results", name + ".jsonl")


@nox.session
def report(session: nox.Session) -> None:
    """Build the HTML coverage report from results JSONL files (default: every *.jsonl in results/).

    A snapshot of the exporter's registry goes in with the results, so "not registered" cells and ATen
    coverage are exact rather than inferred; the report stays a function of its input files.
    """
    install(session)
    registry = os.path.join("results", "registry.json")
    session.run("python", "-m", "reports", "registry", "--out", registry)
    args = list(session.posargs or ["results"])
    if "--registry" not in args:
        args += ["--registry", registry]
    session.run("python", "-m", "reports", "build", *args)


@nox.session
def gate(session: nox.Session) -> None:
    """Fail when conformance results regress against the committed baseline (baselines/).

    Default: the quick tier's results (``results/conformance_quick.jsonl``, from ``nox -s conformance``) against
    ``baselines/conformance_quick.jsonl``. Arguments after ``--`` go to ``python -m conformance gate``.
    """
    install(session)
    args = session.posargs or ["results/conformance_quick.jsonl"]
    session.run("python", "-m", "conformance", "gate", *args)


@nox.session
def bench(session: nox.Session) -> None:
    """Export-speed and graph-quality benchmarks against torch.onnx (dynamo=False) (arguments after ``--`` go to
    ``python -m benchmarks``), then the inference benchmark: ONNX Runtime latency of our files against both of
    torch.onnx's exporters' (``python -m benchmarks.inference``, opsets 20 and 23; results/bench/inference.md)."""
    install(session)
    session.run("python", "-m", "benchmarks", *session.posargs)
    session.run("python", "-m", "benchmarks.inference", "--opsets", "20", "23")


# What mypy resolves the engine's imports against (each ships its own types); the lock pins their versions.
_TYPED_IMPORTS = ("torch", "onnx", "numpy", "ml-dtypes", "onnx-ir")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the repository, then mypy over the engine (exporter/) against the locked torch, onnx and numpy.

    Only the pinned linters and the packages mypy follows are installed, at the lock's versions: not the whole
    locked environment. Configuration: ``[tool.ruff]`` and ``[tool.mypy]`` in pyproject.toml."""
    session.install("ruff==0.17.5", "mypy==2.4.1", "-c", LOCK, *_TYPED_IMPORTS)
    session.run("ruff", "check", ".")
    session.run("mypy", "exporter")
