"""Comparing ONNX Runtime's outputs with PyTorch's, and deciding whether a comparison can say anything at all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from exporter.numerics import finite_errors, nonfinite_disagreement

# Below this magnitude a float output is treated as numerically zero (random-weight models can collapse).
NEAR_ZERO = 1e-10
# A perturbed input must move some output by more than this (relative to the output's scale).
MOVES = 1e-6


@dataclass
class Verdict:
    ok: bool
    message: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0
    rtol: float = 0.0
    atol: float = 0.0
    comparison: str = ""
    compared_nothing: bool = False  # nothing was left to compare (say, every detection on a near-tie)

    def merge(self, other: "Verdict") -> "Verdict":
        """Worst of both: the first failure's message, the largest errors and tolerances."""
        return Verdict(
            ok=self.ok and other.ok,
            message=self.message if not self.ok else other.message,
            max_abs=max(self.max_abs, other.max_abs),
            max_rel=max(self.max_rel, other.max_rel),
            rtol=max(self.rtol, other.rtol),
            atol=max(self.atol, other.atol),
            comparison=self.comparison or other.comparison,
            compared_nothing=self.compared_nothing or other.compared_nothing,
        )


def scale_of(arrays: list[np.ndarray]) -> float:
    """Largest finite magnitude over the float arrays (the output's scale)."""
    values = [np.abs(a[np.isfinite(a)]).max() for a in arrays if a.dtype.kind == "f" and np.isfinite(a).any()]
    return float(max(values)) if values else 0.0


Tolerance = Callable[[float], "tuple[float, float]"]  # an output's scale (max |x|) -> (rtol, atol)


def compare_arrays(expected: list[np.ndarray], actual: list[np.ndarray], tolerance: Tolerance) -> Verdict:
    """Every output: same count, shape and dtype; integers and bools equal; floats agree in their NaN and infinities
    (``exporter.numerics``: never within tolerance) and are allclose(rtol, atol) elsewhere, with the tolerance of
    each output computed from that output's own scale."""
    rtol, atol = tolerance(0.0)
    verdict = Verdict(ok=True, rtol=rtol, atol=atol)
    verdict.comparison = f"allclose(rtol={rtol:g}, atol={atol:.3g}{_scaled(tolerance)}) on {len(expected)} output(s)"
    if len(expected) != len(actual):
        verdict.ok, verdict.message = False, f"output count differs: torch {len(expected)}, onnx {len(actual)}"
        return verdict
    for index, (e, a) in enumerate(zip(expected, actual)):
        a = np.asarray(a)
        if e.shape != a.shape:
            verdict.ok, verdict.message = False, f"output {index}: shape {a.shape} != torch {e.shape}"
            return verdict
        if e.dtype != a.dtype:
            verdict.ok, verdict.message = False, f"output {index}: dtype {a.dtype} != torch {e.dtype}"
            return verdict
        if e.size == 0:
            continue
        max_abs, max_rel = finite_errors(e, a)
        verdict.max_abs, verdict.max_rel = max(verdict.max_abs, max_abs), max(verdict.max_rel, max_rel)
        if e.dtype.kind != "f":
            if not np.array_equal(e, a):
                verdict.ok, verdict.message = False, f"output {index}: {e.dtype} values differ (max abs {max_abs:g})"
                return verdict
            continue
        rtol, atol = tolerance(scale_of([e]))
        verdict.atol = max(verdict.atol, atol)
        nonfinite = nonfinite_disagreement(e, a)
        if nonfinite:
            verdict.ok, verdict.message = False, f"output {index}: {nonfinite}"
            return verdict
        if not np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True):
            verdict.ok = False
            verdict.message = (f"output {index}: max abs error {max_abs:.3g}, max rel error {max_rel:.3g} "
                               f"(rtol {rtol:g}, atol {atol:.3g})")
            return verdict
    return verdict


# A float32 mismatch is arbitrated by a float64 run of the same model: the export passes when its deviation from
# float64 is at most this many times PyTorch's own float32 deviation (plus atol).
ARBITRATION_FACTOR = 2.0
# The float64 run arbitrates only if PyTorch's float32 run stays within this fraction of the output's scale of it:
# float32 rounding does not move an output further, so a larger gap means the float64 run computes something else
# (a random draw, a precision-dependent branch) and proves nothing.
ARBITER_AGREEMENT = 1e-3


def arbitrate(expected: list[np.ndarray], actual: list[np.ndarray], exact: list[np.ndarray], atol: float) -> Verdict:
    """Decide a float32 disagreement between ONNX Runtime and PyTorch with a float64 PyTorch run.

    Deep networks amplify float32 rounding: after 100+ layers two correct float32 implementations (PyTorch's and
    ONNX Runtime's kernels, which sum in different orders) can differ by more than any fixed tolerance, while
    both stay equally close to the float64 result. The export passes when every float output's largest deviation
    from float64 is at most ``ARBITRATION_FACTOR`` times PyTorch's own (plus ``atol``); non-float outputs must
    be equal. A wrong export lands far from float64 and fails. Arbitration settles rounding, never a NaN or an
    infinity: outputs that differ from PyTorch's in their non-finite values fail whatever float64 says.
    """
    torch_off = onnx_off = scale = 0.0
    for e, a, x in zip(expected, actual, exact):
        a = np.asarray(a)
        if e.shape != a.shape or e.shape != x.shape:
            return Verdict(False, "float64 arbitration: shapes differ")
        if e.dtype.kind != "f":
            if not np.array_equal(e, a):
                return Verdict(False, f"float64 arbitration: {e.dtype} outputs differ")
            continue
        nonfinite = nonfinite_disagreement(e, a)
        if nonfinite:
            text = f"no float64 arbitration: {nonfinite}"
            return Verdict(False, text, comparison=text)
        x = x.astype(np.float64)
        torch_off = max(torch_off, finite_errors(x, e)[0])
        onnx_off = max(onnx_off, finite_errors(x, a)[0])
        scale = max(scale, scale_of([x]))
    if torch_off > ARBITER_AGREEMENT * scale:
        text = (f"no float64 arbitration: PyTorch's float32 and float64 runs differ by {torch_off:.3g}, more than "
                f"{ARBITER_AGREEMENT:g} of the output's scale {scale:.3g}, so the float64 run computes something else")
        return Verdict(False, text, comparison=text)
    limit = ARBITRATION_FACTOR * torch_off + atol
    ok = onnx_off <= limit
    text = (f"float64 arbitration: onnx deviates {onnx_off:.3g} from float64, torch float32 {torch_off:.3g} "
            f"(limit {ARBITRATION_FACTOR:g} x torch + atol = {limit:.3g})")
    return Verdict(ok, "" if ok else text, comparison=text)


def reference_problem(reference: list[np.ndarray], perturbed: list[np.ndarray]) -> str:
    """Why comparing against ``reference`` would prove nothing, or "" when it is a meaningful reference.

    ``perturbed`` is the reference output for another input of the same shape: if nothing moves, the output
    does not depend on the input and any exporter bug upstream of the constant would go unnoticed. NaN and
    infinities in a reference are compared like any value (``exporter.numerics``); only a reference with no finite
    value at all says nothing.
    """
    if not reference or all(r.size == 0 for r in reference):
        return "the reference output is empty"
    floats = [r for r in reference if r.dtype.kind == "f" and r.size]
    only_floats = bool(floats) and all(r.dtype.kind == "f" for r in reference)
    if only_floats and not any(np.isfinite(r).any() for r in floats):
        return "the reference output has no finite value (every value is NaN or infinite)"
    if only_floats and scale_of(floats) < NEAR_ZERO:
        return f"the reference output is numerically zero (max |x| = {scale_of(floats):.3g})"
    for r, p in zip(reference, perturbed):
        if r.shape != p.shape:
            return ""
        if r.size and r.dtype.kind == "f":
            if nonfinite_disagreement(r, p) or finite_errors(r, p)[0] > MOVES * max(scale_of([r]), NEAR_ZERO):
                return ""
        elif r.size and not np.array_equal(r, p):
            return ""
    return "the reference output does not depend on the input (perturbing the input moved no output)"


# -- detection -----------------------------------------------------------------------------------------------
IOU_MATCH = 0.9
# Detections whose score is within this of the score cut-off, or of a competing box, sit on a near-tie: a
# difference in the last bit may legitimately keep another box instead, so they are not required to match.
TIE_MARGIN = 1e-3


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    area_a = (a[:, 2] - a[:, 0]).clip(0) * (a[:, 3] - a[:, 1]).clip(0)
    area_b = (b[:, 2] - b[:, 0]).clip(0) * (b[:, 3] - b[:, 1]).clip(0)
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clip(0).prod(axis=2)
    return inter / np.maximum(area_a[:, None] + area_b[None, :] - inter, 1e-12)


def _scaled(tolerance: Tolerance) -> str:
    base = tolerance(0.0)[1]
    grows = tolerance(1.0)[1] - base
    return f" + {grows:g} x the output's max |x|" if grows > 0 else ""


def compare_detections(names: list[str], expected: list[np.ndarray], actual: list[np.ndarray],
                       tolerance: Tolerance) -> Verdict:
    """Detections matched one to one by label and IoU >= 0.9 (zero-area boxes: by coordinates), then compared
    within tolerance.

    The final detections of a random-weight detector sit on near-ties (scores within a hair of the cut-off or of
    a box NMS suppresses), so the verdict rests on the detections clear of ties: each must have a match whose
    box and score (and mask/keypoints) agree within rtol/atol. The counts and the achieved errors are recorded.
    Keypoints are decoded on a heatmap grid of the box's size rounded up: where a hair's difference in a box moves
    that size across an integer, the two sides decode on different grids and their keypoints are not compared.
    """
    rtol, atol = tolerance(0.0)
    if len(expected) != len(actual):
        return Verdict(False, f"output count differs: torch {len(expected)}, onnx {len(actual)}", rtol=rtol, atol=atol)
    e = dict(zip(names, expected))
    a = dict(zip(names, (np.asarray(x) for x in actual)))
    boxes_e, boxes_a = e["boxes"].reshape(-1, 4), a["boxes"].reshape(-1, 4)
    scores_e, scores_a = e["scores"].reshape(-1), a["scores"].reshape(-1)
    labels_e, labels_a = e["labels"].reshape(-1), a["labels"].reshape(-1)
    cutoff = scores_e.min() if scores_e.size else 0.0
    stable = [i for i in range(len(scores_e)) if not _near_tie(i, scores_e, boxes_e, labels_e, cutoff)]
    iou = _match_overlap(boxes_e, boxes_a, *tolerance(scale_of([boxes_e])))
    verdict = Verdict(True, rtol=rtol, atol=atol)
    taken: set[int] = set()
    unmatched = []
    keypoint_ties = 0
    for i in stable:
        candidates = [j for j in np.argsort(-iou[i]) if j not in taken and labels_a[j] == labels_e[i] and iou[i, j] >= IOU_MATCH] if iou.shape[1] else []
        if not candidates:
            unmatched.append(i)
            continue
        j = int(candidates[0])
        taken.add(j)
        regridded = "keypoints" in names and _keypoint_grid_differs(boxes_e[i], boxes_a[j])
        keypoint_ties += regridded
        for key in names:
            if key == "labels" or (regridded and key.startswith("keypoints")):
                continue
            ref, got = e[key][i : i + 1], a[key][j : j + 1]
            if ref.shape != got.shape:
                verdict.ok, verdict.message = False, f"{key}: per-detection shape {got.shape[1:]} != torch {ref.shape[1:]}"
                continue
            max_abs, max_rel = finite_errors(ref, got)
            verdict.max_abs, verdict.max_rel = max(verdict.max_abs, max_abs), max(verdict.max_rel, max_rel)
            key_rtol, key_atol = tolerance(scale_of([e[key]]))
            verdict.atol = max(verdict.atol, key_atol)
            nonfinite = nonfinite_disagreement(ref, got)
            if (nonfinite or not np.allclose(got, ref, rtol=key_rtol, atol=key_atol, equal_nan=True)) and verdict.ok:
                verdict.ok = False
                verdict.message = (f"detection {i} ({key}): "
                                   + (nonfinite or f"max abs error {max_abs:.3g}, max rel error {max_rel:.3g}"))
    if unmatched and verdict.ok:
        verdict.ok = False
        verdict.message = (f"{len(unmatched)} of {len(stable)} tie-free torch detections have no ONNX match "
                           f"(same label, IoU >= {IOU_MATCH}); e.g. detection {unmatched[0]} score {scores_e[unmatched[0]]:.4g}")
    verdict.comparison = (f"detections matched by label and IoU >= {IOU_MATCH}: {len(stable) - len(unmatched)} of "
                          f"{len(stable)} tie-free torch detections matched (torch {len(scores_e)}, onnx "
                          f"{len(scores_a)} in all; {len(scores_e) - len(stable)} on near-ties not required); "
                          f"boxes/scores{'/' + '/'.join(n for n in names[3:]) if len(names) > 3 else ''} "
                          f"allclose(rtol={rtol:g}, atol={atol:.3g}{_scaled(tolerance)})")
    if keypoint_ties:
        verdict.comparison += (f"; keypoints of {keypoint_ties} detection(s) not compared: torch's and ONNX's boxes "
                               "round up to different heatmap sizes")
    if not stable:
        verdict.message = verdict.message or "no tie-free detection to compare"
        verdict.compared_nothing = True
    return verdict


def _keypoint_grid_differs(box_e: np.ndarray, box_a: np.ndarray) -> bool:
    """Whether the two boxes' widths or heights round up (as torchvision's keypoint decoding does, in float32) to
    different integers: the heatmaps are then resized to different grids and the keypoints legitimately move."""
    def grid(box: np.ndarray) -> np.ndarray:
        return np.ceil(np.maximum(box[2:].astype(np.float32) - box[:2].astype(np.float32), 1))

    return bool(np.any(grid(box_e) != grid(box_a)))


def _match_overlap(boxes_e: np.ndarray, boxes_a: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """IoU of every torch box with every ONNX box; a zero-area box (clipped to an image edge) has no IoU with
    anything, so it counts as overlapping fully where its coordinates agree within tolerance."""
    if not (len(boxes_e) and len(boxes_a)):
        return np.zeros((len(boxes_e), len(boxes_a)))
    iou = box_iou(boxes_e, boxes_a)
    degenerate = (boxes_e[:, 2] <= boxes_e[:, 0]) | (boxes_e[:, 3] <= boxes_e[:, 1])
    for i in np.flatnonzero(degenerate):
        close = np.all(np.abs(boxes_a - boxes_e[i]) <= atol + rtol * np.abs(boxes_e[i]), axis=1)
        iou[i, close] = 1.0
    return iou


def _near_tie(i: int, scores: np.ndarray, boxes: np.ndarray, labels: np.ndarray, cutoff: float) -> bool:
    if scores[i] - cutoff <= TIE_MARGIN and len(scores) > 1:
        return True
    same = (labels == labels[i]) & (np.abs(scores - scores[i]) <= TIE_MARGIN)
    same[i] = False
    if not same.any():
        return False
    overlap = box_iou(boxes[i : i + 1], boxes[same])[0]
    return bool((overlap > 0.3).any())
