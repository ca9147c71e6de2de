"""The README's examples of the two contracts run as written (in a folder of their own), and do what the README
says of them."""

from __future__ import annotations

import pathlib
import re
import warnings

import onnx

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def _section_blocks(heading: str) -> list[str]:
    text = README.read_text()
    start = text.index(f"\n{heading}\n")
    ends = [at for at in (text.find("\n## ", start + 1), text.find("\n### ", start + 1)) if at != -1]
    end = min(ends, default=len(text))
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)


def test_the_two_contracts_examples_run_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    today, legacy = _section_blocks("### The two contracts")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # today's contract warns of nothing
        exec(compile(today, "README: today's contract", "exec"), {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp.onnx", "mlp.onnx.data", "mlp_inline.onnx"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(legacy, "README: the TorchScript-era contract", "exec"), {})
    assert [w.category for w in caught if w.category is DeprecationWarning] == [DeprecationWarning]
    dims = onnx.load(str(tmp_path / "mlp_traced.onnx")).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["batch", 8]
