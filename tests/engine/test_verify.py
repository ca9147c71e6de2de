"""Provenance and exporter.verify: a wrong symbolic planted deep in a real ResNet is found, named and judged."""

from __future__ import annotations

import inspect
import io

import numpy as np
import pytest
import torch
import torchvision

import exporter
from exporter import verify
from exporter.errors import ExportArgumentError
from exporter.localization.repro import judge
from exporter.localization.verifier import Verifier
from exporter.registry import REGISTRY
from exporter.verify import Agreement
from tests.engine.backend_tests import run_backend_test

PLANTED_SCOPE = "layer3.1.conv2"
OPSET = 14


def _resnet18():
    torch.manual_seed(0)
    return torchvision.models.resnet18(weights=None).eval(), (torch.randn(1, 3, 64, 64),)


def _line_of(function, text: str) -> int:
    lines, first = inspect.getsourcelines(function)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.fixture
def planted_conv():
    """aten::_convolution exports one convolution (PLANTED_SCOPE's) with its result scaled by a wrong 1.01."""
    builtin = REGISTRY.lookup("aten::_convolution", OPSET)

    def wrong(g, *args):
        out = builtin(g, *args)
        if g.node.scopeName().endswith(PLANTED_SCOPE):
            out = g.op("Mul", out, g.const(torch.tensor(1.01)))
        return out

    exporter.register_custom_op_symbolic("aten::_convolution", wrong, OPSET)
    yield
    exporter.unregister_custom_op_symbolic("aten::_convolution", OPSET)


def test_verify_names_the_planted_wrong_convolution_its_scope_and_source_line(planted_conv, tmp_path):
    model, args = _resnet18()
    result = verify(model, args, opset_version=OPSET, repro_dir=str(tmp_path))
    assert not result.ok and not result.outputs.ok
    divergence = result.divergence
    assert divergence is not None
    assert divergence.origin.kind == "aten::_convolution"
    assert divergence.origin.scope == PLANTED_SCOPE
    line = _line_of(torchvision.models.resnet.BasicBlock.forward, "self.conv2(out)")
    assert divergence.origin.source == f"{inspect.getsourcefile(torchvision.models.resnet)}:{line}"
    assert [op for _, op, _ in divergence.nodes if op != "Constant"] == ["Conv", "Mul"]
    # Its inputs agree with PyTorch, its own result does not: the fault is here, not upstream.
    assert divergence.inputs and all(a.ok for a in divergence.inputs)
    assert not divergence.local.ok and divergence.local.max_abs > 0.005 * divergence.local.scale
    # Every earlier compared value agreed, so the first value out of tolerance is the planted one.
    assert result.first_out_of_tolerance.value == divergence.value
    # The error reaches the output along the path.
    assert divergence.growth[0].value == divergence.value
    assert divergence.growth[-1].value == result.export.output_names[0]
    assert all(not step.ok for step in divergence.growth)
    assert divergence.repro.culprit == "export"


def test_the_repro_is_an_onnx_backend_test_that_reproduces_the_divergence(planted_conv, tmp_path):
    model, args = _resnet18()
    result = verify(model, args, opset_version=OPSET, repro_dir=str(tmp_path))
    assert result.divergence.repro.directory == str(tmp_path)
    repro, computed, expected = run_backend_test(tmp_path)
    assert len(repro.graph.node) <= 3  # the diverging convolution alone (Conv, its wrong constant and the Mul)
    np.testing.assert_allclose(computed, expected * 1.01, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_a_correct_resnet_verifies_clean():
    model, args = _resnet18()
    result = verify(model, args, opset_version=OPSET)
    assert result.ok and result.outputs.ok
    assert result.divergence is None and result.first_out_of_tolerance is None
    assert result.compared >= 40  # every conv(+bn), relu, add, pool and the classifier
    assert "intermediate values compared" in result.summary()


def test_provenance_names_every_node_and_stays_out_of_the_model_unless_asked():
    model, args = _resnet18()
    result = exporter.export_program(model, args, io.BytesIO(), opset_version=OPSET, dynamo=False)
    assert all(node.name in result.provenance.nodes for node in result.model_proto.graph.node)
    assert not any(node.doc_string for node in result.model_proto.graph.node)
    first_conv = next(n for n in result.model_proto.graph.node if n.op_type == "Conv")
    assert result.provenance.node(first_conv.name).scope == "conv1"
    # Conv+BatchNormalization fusion: the Conv's output now holds the normalized values, and says so.
    assert result.provenance.value(first_conv.output[0]).kind == "aten::batch_norm"
    written = exporter.export_program(model, args, io.BytesIO(), opset_version=OPSET, provenance_in_model=True, dynamo=False)
    conv_doc = next(n for n in written.model_proto.graph.node if n.op_type == "Conv").doc_string
    assert conv_doc.startswith("aten::_convolution in conv1 at ") and "resnet.py:" in conv_doc


@pytest.mark.parametrize("ref_ok, both_ok, culprit", [
    (True, False, "onnxruntime"), (False, True, "export"), (False, False, "undecided"),
])
def test_whose_result_is_right(ref_ok, both_ok, culprit):
    def agreement(ok):
        return Agreement("v", None, ok, 1.0, 1.0, 1.0, 0.0, 0.0)

    assert judge(agreement(False), agreement(ref_ok), agreement(both_ok)).culprit == culprit


def test_verify_rejects_bad_options():
    model, args = _resnet18()
    with pytest.raises(ExportArgumentError, match="max_local_checks"):
        verify(model, args, max_local_checks=0)
    with pytest.raises(ExportArgumentError, match="memory"):
        verify(model, args, f="model.onnx")


class _SmallQuantized(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = torch.ao.quantization.QuantStub(), torch.ao.quantization.DeQuantStub()
        self.conv1, self.relu, self.conv2 = torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 3)

    def forward(self, x):
        return self.dequant(self.conv2(self.relu(self.conv1(self.quant(x)))))


def _small_quantized():
    torch.manual_seed(0)
    torch.backends.quantized.engine = "fbgemm"
    model = _SmallQuantized().eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig("fbgemm")
    model = torch.ao.quantization.fuse_modules(model, [["conv1", "relu"]])
    prepared = torch.ao.quantization.prepare(model)
    prepared(torch.rand(2, 3, 12, 12))
    return torch.ao.quantization.convert(prepared), (torch.rand(1, 3, 12, 12),)


@pytest.fixture
def planted_quantize():
    """aten::quantize_per_tensor quantizes 1.05 times its input (the scale it reports stays right)."""
    builtin = REGISTRY.lookup("aten::quantize_per_tensor", 13)

    def wrong(g, x, *args):
        return builtin(g, g.op("Mul", x, g.const(torch.tensor(1.05))), *args)

    exporter.register_custom_op_symbolic("aten::quantize_per_tensor", wrong, 13)
    yield
    exporter.unregister_custom_op_symbolic("aten::quantize_per_tensor", 13)


def test_quantized_values_are_compared_as_integers_one_step_apart_at_most():
    model, args = _small_quantized()
    result = verify(model, args, opset_version=13)
    # The quantized input, both quantized convolutions and the dequantized output are compared.
    assert result.compared >= 4
    assert result.divergence is None and result.localized


def test_a_wrong_quantize_is_localized_and_judged_by_the_reference_evaluator(planted_quantize):
    model, args = _small_quantized()
    result = verify(model, args, opset_version=13)
    divergence = result.divergence
    assert divergence is not None and divergence.origin.kind == "aten::quantize_per_tensor"
    assert divergence.local.max_abs > 1  # more than one integer step
    # onnx.reference runs QuantizeLinear from opset 19 only: the repro is re-declared there to be judged.
    assert divergence.repro.culprit == "export"


class _QuantizedChunk(_SmallQuantized):
    def forward(self, x):
        first, _ = self.relu(self.conv1(self.quant(x))).chunk(2, dim=1)
        return self.dequant(first)


def test_the_local_check_of_a_list_element_starts_from_the_op_that_made_the_list():
    # A quantized chunk is DequantizeLinear -> Split -> QuantizeLinear per element; each element is a ListUnpack
    # output in TorchScript. Its local check must run the Split on PyTorch's input, not start after it from
    # ONNX Runtime's own upstream values.
    torch.backends.quantized.engine = "fbgemm"
    model = _QuantizedChunk().eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig("fbgemm")
    prepared = torch.ao.quantization.prepare(torch.ao.quantization.fuse_modules(model, [["conv1", "relu"]]))
    prepared(torch.rand(2, 3, 12, 12))
    model, x = torch.ao.quantization.convert(prepared), torch.rand(1, 3, 12, 12)
    result = verify(model, (x,), opset_version=13)
    verifier = Verifier(result.export, [x] + [t for _, t in result.export.capture.params], None, None, 1)
    verifier.run(model(x))
    element = next(name for name, ts in verifier.pairs.items() if ts.node().kind() == "prim::ListUnpack")
    subgraph, _ = verifier._subgraph(element)
    assert "Split" in [node.op_type for node in subgraph]


# -- judging before the selection (detectors on near-ties) ------------------------------------------------------
SELECTION_OPSET = 11


def _tied_detector():
    from tests.conformance_models import TiedDetector, tied_detector_inputs

    torch.manual_seed(0)
    return TiedDetector().eval(), tied_detector_inputs(0, 0)


def test_a_detector_on_near_ties_is_judged_before_its_selection():
    """Every final score of the tied detector sits within 1e-3 of another, so the final detections prove nothing
    (the harness cannot compare any); the values entering the selection and each node after it can."""
    from conformance.compare import compare_detections

    model, args = _tied_detector()
    result = verify(model, args, opset_version=SELECTION_OPSET, judge_selection=True)
    with torch.no_grad():
        final = model(*args)[0]
    session_outputs = [result.export.model_proto.graph.output[k].name for k in range(3)]
    assert session_outputs == result.export.output_names
    expected = [final[k].numpy() for k in ("boxes", "scores", "labels")]
    actual = [np.asarray(v) for v in _ort(result.export.model_proto, args)]
    assert compare_detections(["boxes", "scores", "labels"], expected, actual, lambda s: (1e-3, 1e-5)).compared_nothing
    check = result.selection
    assert check.ok, check.summary()
    assert check.decisions == {"aten::gt": 1}  # scores > 0.05: the first decision; top-k and NMS come after it
    assert check.frontier >= 2 and check.frontier_max_abs < 1e-5  # the boxes and scores entering the selection
    assert check.post_selection >= 5 and check.failure is None
    assert "judged before the data-dependent selection" in check.summary()
    # PyTorch's and ONNX Runtime's top-k break the exact ties of the scores differently: an equally right answer,
    # accepted because the indices pick the same values, and no diverging node is reported for it.
    assert check.tie_broken == 1
    assert result.divergence is None


def test_a_wrong_nms_is_caught_after_the_selection():
    """A planted NMS threshold (0.3 instead of the model's 0.5) changes nothing before the selection: the check
    fails in the selection, at the NMS node, with the export to blame."""
    from exporter.symbolics import torchvision_ops

    def wrong_nms(g, boxes, scores, iou_threshold):
        return torchvision_ops.nms.__wrapped__(g, boxes, scores, 0.3)

    model, args = _tied_detector()
    exporter.register_custom_op_symbolic("torchvision::nms", wrong_nms, SELECTION_OPSET)
    try:
        result = verify(model, args, opset_version=SELECTION_OPSET, judge_selection=True)
    finally:
        exporter.unregister_custom_op_symbolic("torchvision::nms", SELECTION_OPSET)
    check = result.selection
    assert not check.ok and check.stage == "selection"
    assert check.failure.origin.kind == "torchvision::nms"
    assert check.divergence is not None and check.divergence.repro.culprit == "export"
    assert "FAILS at selection" in check.summary()


def _ort(model, args):
    from exporter.ort_session import make_session

    session = make_session(model.SerializeToString(), "cpu")
    return session.run(None, {session.get_inputs()[0].name: args[0][0].numpy()})


class _NormalizeAndResize(torch.nn.Module):
    """torchvision's detection transform in small: normalise an image, resize it bilinearly by 1.25."""

    def forward(self, image):
        return torch.nn.functional.interpolate((image - 0.45) / 0.225, size=(320, 400), mode="bilinear",
                                               align_corners=False)


def test_a_local_disagreement_that_is_pytorchs_own_rounding_is_arbitrated_by_float64():
    """At 256x320 -> 320x400, PyTorch's float32 bilinear kernel rounds its sampling coordinates (up to 400, ulp
    3e-5) and lands 8e-5 from its own float64 result; ONNX Runtime's Resize lands 5e-5 from it, on the other side:
    they differ by 1.3e-4, outside the per-operator tolerance, and neither is wrong. The local check re-judges
    the node against PyTorch's float64 result of the same node on the same inputs, as the harness does for a
    model's outputs, so verify reports no diverging node (before: a divergence blamed on ONNX Runtime)."""
    image = torch.rand(1, 3, 256, 320, generator=torch.Generator().manual_seed(0))
    result = verify(_NormalizeAndResize(), (image,), opset_version=11)
    assert result.first_out_of_tolerance is not None  # the two float32 results disagree beyond tolerance ...
    assert result.divergence is None and result.local_checks == 1  # ... and float64 says neither diverges
    assert result.float64_arbitrated == [result.first_out_of_tolerance.value]
    assert "float64 arbitration" in result.summary()


# -- the harness's node-by-node verdict on a float mismatch (conformance.worker) -------------------------------------
def _strict_mismatch(opset):
    """ResNet-18 from the zoo, exported, run in ONNX Runtime and compared with PyTorch at zero tolerance: a float
    mismatch of the kind float64 arbitration may leave (EfficientNet-B7's, at its scale), with a real model."""
    from conformance.prepared import WorkerState, flat_outputs
    from exporter.numerics import compare_arrays
    from exporter.ort_session import make_session

    state = WorkerState("/tmp")
    prepared = state.prepare("resnet18")
    expected = flat_outputs(state.reference(prepared, "cpu", "input 0"))
    buffer = io.BytesIO()
    exporter.export(prepared.model, prepared.export_args, buffer, opset_version=opset, dynamo=False)
    session = make_session(buffer.getvalue(), "cpu")
    actual = session.run(None, {session.get_inputs()[0].name: prepared.checks["input 0"][0].numpy()})
    verdict = compare_arrays(expected, actual, lambda scale: (0.0, 0.0))
    assert not verdict.ok and "max abs error" in verdict.message
    row = {"status": "mismatch", "error": f"input 0: {verdict.message}", "comparison": verdict.comparison}
    return prepared, row, [("input 0", verdict, expected)]


def test_a_float_mismatch_with_no_node_diverging_passes_as_rounding_growth():
    from conformance.localization import judge_rounding_growth, rounding_only

    prepared, row, failing = _strict_mismatch(OPSET)
    assert rounding_only(prepared.entry, failing)  # the error is far below 1e-3 of the logits' scale
    judge_rounding_growth(prepared, row, OPSET, None, failing, None)
    assert row["status"] == "pass" and row["error"] == ""
    assert "rounding grown along the graph" in row["reason"]
    assert "re-judged node by node: input 0:" in row["comparison"] and "intermediate values compared" in row["comparison"]


def test_a_float_mismatch_with_a_diverging_node_stays_a_mismatch(planted_conv):
    from conformance.localization import judge_rounding_growth

    prepared, row, failing = _strict_mismatch(OPSET)
    judge_rounding_growth(prepared, row, OPSET, None, failing, None)
    assert row["status"] == "mismatch" and "re-judged" not in row["comparison"]


def test_a_mismatch_beyond_what_rounding_can_explain_is_not_re_judged():
    from conformance.localization import rounding_only
    from exporter.numerics import Verdict

    prepared, _, failing = _strict_mismatch(OPSET)
    (label, verdict, expected), = failing
    scale = float(np.abs(expected[0]).max())
    far = Verdict(False, "output 0: max abs error ...", max_abs=2e-3 * scale)
    assert not rounding_only(prepared.entry, [(label, far, expected)])
    assert not rounding_only(prepared.entry, [(label, Verdict(False, "output 0: shape (2,) != torch (1,)"), expected)])
