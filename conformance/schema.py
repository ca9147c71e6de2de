"""The results schema: one JSON object per case, one per line, appended as each case ends.

This is the contract with ``reports/`` (which reads nothing else). Fields may be null when a stage was never
reached. Adding a field is compatible; renaming or changing the meaning of one is not.
"""

from __future__ import annotations

STATUSES = (
    "pass",           # exported, loaded, ran, and matched PyTorch within tolerance (all checked inputs)
    "mismatch",       # ran, but the outputs differ from PyTorch beyond tolerance (or in shape/dtype/count)
    "unsupported",    # the exporter says the model cannot be expressed at this opset (UnsupportedOperatorError)
    "export_error",   # capture or conversion failed with any other error
    "checker_error",  # the exported model fails onnx.checker (full check)
    "ort_error",      # ONNX Runtime could not load (stage ort_load) or run (stage ort_run) the model
    "timeout",        # the case ran past its time limit; its worker was killed
    "crash",          # the worker process died (native crash, out of memory) while running the case
    "env_error",      # the environment cannot run the case as asked (CUDA requested, a GPU present, ORT cannot use it)
    "skipped",        # not run, with a reason (e.g. no CUDA device)
    "inconclusive",   # export and run succeeded, but the reference output cannot discriminate (see reason)
    # op tests (OpInfo samples and hand-written cases):
    "no_symbolic",         # an op in the captured graph has no symbolic at any opset
    "not_capturable",      # the sample cannot become an ONNX model at all (complex/sparse tensors, non-tensor output)
    "runtime_divergence",  # ORT disagrees with PyTorch, and onnx.reference agrees with PyTorch: ORT is wrong
)

STAGES = ("setup", "capture", "convert", "checker", "ort_load", "ort_run", "accuracy")

FIELDS = {
    "case_id": "unique id: '{kind}/{name}/opset{opset}/{mode}/{provider}', with '/export' appended for the torch.export "
               "capture (``run --capture export``), so the two captures' rows of one case can share a results file",
    "kind": "'model' (torchvision, transformers), 'example' (the documentation's examples) or 'op' (an op case of opcases/)",
    "dtypes": "op rows: the dtypes of the example inputs",
    "name": "model zoo entry name (torchvision model name, hf_<architecture> for transformers, or the example's name)",
    "family": "classification | segmentation | detection | video | optical_flow | quantized_classification | "
              "transformers | docs",
    "opset": "target ONNX opset (int)",
    "provider": "'cpu' or 'cuda' (ONNX Runtime execution provider; PyTorch's reference runs on the same device for "
                "model cases whose entry allows it (cuda_reference), on the CPU for the others and for op cases)",
    "mode": "'static' (no dynamic axes) or 'dynamic' (the entry's dynamic_axes; checked on a second input size)",
    "exporter": "'engine' (this project's exporter) or 'peer' (torch.onnx, dynamo=False, run only to validate the zoo)",
    "capture": "how the model was captured: 'trace' (torch.jit.trace; scripted functions called inside included) or "
               "'script' (a ScriptModule or scripted function's own graph), the TorchScript captures of a plain run, "
               "or 'export' (torch.export, dynamo=True: ``run --capture export``); rows written before the field "
               "existed read as their TorchScript capture (conformance.schema.default_capture)",
    "status": "one of STATUSES",
    "stage": "the stage that failed (one of STAGES); the last stage reached on pass/inconclusive",
    "error": "error text of the failure (empty on pass)",
    "reason": "why a case is skipped, unsupported or inconclusive, or whether a failure was expected",
    "expected_min_opset": "the lowest opset the zoo claims the model exports at",
    "max_abs_error": "largest |onnx - torch| over every compared element and input (recorded on passes too)",
    "max_rel_error": "largest |onnx - torch| / max(|torch|, 1e-12) over the same elements",
    "rtol": "relative tolerance used",
    "atol": "absolute tolerance used (may include a magnitude-scaled part; see comparison)",
    "comparison": "what the verdict rests on, e.g. 'allclose on 3 outputs x 2 inputs' or the detection matching",
    "export_seconds": "wall time of exporter.export (capture reused across opsets excluded after the first)",
    "ort_ms": "ONNX Runtime run time of the exported input (ms)",
    "torch_ms": "PyTorch run time of the same input (ms)",
    "node_count": "number of nodes in the exported main graph",
    "op_types": "sorted ONNX op types used (main graph and subgraphs)",
    "aten_ops": "sorted TorchScript node kinds in the captured graph (blocks included)",
    "file_size": "bytes of the exported model (external data included)",
    "rerun": "one-line shell command re-running just this case",
    "repro": "path of the repro bundle (model.onnx, test_data_set_N/input_k.pb, output_k.pb, case.json) or null",
    "versions": "{torch, torchvision, onnx, onnxruntime, python}",
    "git_rev": "git revision of the working tree ('+dirty' when it has local changes)",
    "started_at": "ISO-8601 UTC time the case started",
    "duration_s": "wall time of the whole case, export and checks included",
    # op rows
    "source": "op rows: 'cases' (hand-written, opcases/) or 'opinfo' (PyTorch's OpInfo samples)",
    "op": "op rows: the op name (ATen op of a case, OpInfo name of a sample)",
    "variant": "OpInfo rows: the OpInfo's variant_test_name ('' for the default)",
    "sample": "OpInfo rows: index of the sample input (stable: samples are generated under a fixed seed)",
    "dtype": "OpInfo rows: the sample's dtype",
    "description": "OpInfo rows: the sample's tensor shapes and constant arguments",
    "lowest_opset": "unsupported rows: the lowest opset the exporter says would work (null when unknown)",
    "arbiter": "mismatch / runtime_divergence rows: what onnx.reference.ReferenceEvaluator said",
    "tolerance_reason": "why the tolerance used is what it is (exporter/tolerances.py)",
    "localization": "mismatch / inconclusive model rows: exporter.verify's finding on the failing check: check, "
                    "compared, local_checks, localized, finding, summary and, when a node diverges, node, value, "
                    "op_types, kind, scope, source, inputs_agree, local_max_abs, culprit ('export' | 'onnxruntime' | "
                    "'undecided'), explanation, growth ([value, error / scale] to an output), repro (folder); "
                    "{error, check} when localizing failed",
    "selection": "detection rows whose final detections all sit on near-ties: per such check, exporter.verify's "
                 "judgment before the data-dependent selection (check, ok, stage, summary, decisions, pre_selection, "
                 "frontier, frontier_max_abs, post_selection, local_checks, tie_broken); see "
                 "exporter.verify.SelectionCheck",
    "expectation": "the reason of the expectations.toml entry the row matches (null when none)",
    "workarounds": "names of the runtime workarounds (exporter/lowering/runtime.py) the exported model depends on",
    "session_providers": "the ONNX Runtime session's execution providers in priority order (get_providers()); a "
                         "CUDA row whose session does not list CUDAExecutionProvider first is an env_error",
    "gpu": "CUDA rows: the GPU's name (torch.cuda.get_device_name)",
    "ort_level": "the ONNX Runtime graph optimization level the case's session ran at: 'basic' (the default), "
                 "'extended' or 'all' (ONNX Runtime's own default); see exporter.ort_session.ort_level",
}

# Failure statuses: of the exporter, or (env_error) of the machine the run was asked to use. conformance.verdict
# decides whether a row fails a run (an unsupported case at an opset it claims does too).
FAILURES = ("mismatch", "export_error", "checker_error", "ort_error", "timeout", "crash", "env_error")


# The captures a row records (the values of exporter.Capture, written out so that reading results needs no
# torch), and the choice ``run --capture`` offers: TorchScript (each model traced or scripted, as it is written) or
# torch.export (``exporter.export(..., dynamo=True)``).
TRACE, SCRIPT, EXPORT = "trace", "script", "export"
CAPTURES = (TRACE, SCRIPT, EXPORT)
TORCHSCRIPT = "torchscript"
CAPTURE_CHOICES = (TORCHSCRIPT, EXPORT)
EXPORT_SUFFIX = "/" + EXPORT

# The cases whose TorchScript capture is a script (a ScriptModule or scripted function), as they stood when rows began
# to record their capture: rows written before then carry no ``capture`` and are read as these say (every other one
# was traced). Frozen on purpose: every row written since says its capture itself, so this never needs to grow.
SCRIPTED_BEFORE_CAPTURE_FIELD = frozenset({
    "example/list_loop", "example/implicit_cast_type",
    *(f"op/{name}" for name in (
        "glu_scripted", "to_scripted", "loop_scripted_for", "loop_while", "loop_nested_if", "if_data_dependent",
        "floordiv_numbers", "select_scatter_loop_index", "loop_python_numbers_only", "mul__after_add_in_loop",
        "tensor_loop_built_list", "stack_loop_carried_list", "upsample_bilinear2d_scripted_scale_factor",
        "slice_scripted_list", "slice_scripted_sizes_list", "__getitem___scripted_sizes_list",
        "scatter_reduce_extremes_of_empty", "tensordot_scripted_int_dims", "kl_div_scripted_mean_warns",
        "norm_scripted_fro", "norm_scripted_l1_keepdim", "lstm_cell", "gru_cell", "gru_cell_bias_false",
        "rnn_tanh_cell", "rnn_relu_cell", "append_bools_in_nested_loops", "pop_known_list", "pop_run_time_position",
        "pop_grown_list", "Delete_in_loops", "append_twice_per_iteration", "append_list_in_loop",
        "append_len_of_growing_list", "__getitem___run_time_index", "unbind_scripted_run_time_count",
        "split_scripted_run_time_count", "squeeze_run_time_dim", "squeeze_run_time_dim_not_one",
        "unsqueeze_run_time_dim", "unsqueeze_run_time_dim_ends", "tril_run_time_diagonal", "triu_run_time_diagonal",
        "unique_scripted_counts", "range", "tensor", "_dim_arange", "range_float_bounds_int64")),
})


def case_id(kind: str, name: str, opset: int, mode: str, provider: str, capture: str = TORCHSCRIPT) -> str:
    """The case's id; ``capture`` is the run's choice (``TORCHSCRIPT``, or ``EXPORT``, whose ids end in '/export')."""
    if capture not in CAPTURE_CHOICES:
        raise ValueError(f"unknown capture {capture!r}; choose from {CAPTURE_CHOICES}")
    return f"{kind}/{name}/opset{opset}/{mode}/{provider}" + (EXPORT_SUFFIX if capture == EXPORT else "")


def capture_choice(capture: str | None) -> str:
    """The run choice a row's capture belongs to: ``EXPORT`` for 'export', ``TORCHSCRIPT`` for 'trace' and 'script'."""
    return EXPORT if capture == EXPORT else TORCHSCRIPT


def default_capture(row: dict) -> str:
    """The capture of a row that records none (written before the field existed, or a runner's timeout/crash row of
    a TorchScript case): 'export' for an export case id, 'script' for the cases scripted then, else 'trace'."""
    ident = str(row.get("case_id") or "")
    if ident.endswith(EXPORT_SUFFIX):
        return EXPORT
    subject = "/".join(ident.split("/")[:-3])  # '{kind}/{name}' (a name may hold '/': op/opinfo/...)
    return SCRIPT if subject in SCRIPTED_BEFORE_CAPTURE_FIELD else TRACE


def empty_row() -> dict:
    """A row with every field present (null where unknown), so every line has the same keys."""
    row = {key: None for key in FIELDS}
    row.update(error="", reason="", op_types=[], aten_ops=[], workarounds=[], session_providers=[])
    return row


ERROR_LIMIT = 4000  # characters of a row's error text


def truncated(text: str) -> str:
    """An error text as a row holds it: at most ``ERROR_LIMIT`` characters, its head and its tail."""
    return text if len(text) <= ERROR_LIMIT else text[: ERROR_LIMIT // 2] + "\n...\n" + text[-ERROR_LIMIT // 2 :]
