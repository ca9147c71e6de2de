"""What the harness compares beyond the library's comparison (``exporter.numerics``): whether a reference output
can say anything at all, and a detector's detections matched one to one."""

from __future__ import annotations

import numpy as np

from exporter.numerics import Tolerance, Verdict, describe_scaling, finite_errors, nonfinite_disagreement, scale_of

# Below this magnitude a float output is treated as numerically zero (random-weight models can collapse).
NEAR_ZERO = 1e-10
# A perturbed input must move some output by more than this (relative to the output's scale).
MOVES = 1e-6


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
    if len(reference) != len(perturbed):
        return ""  # as many outputs as the input asks for: they depend on it
    for r, p in zip(reference, perturbed, strict=True):
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
    e = dict(zip(names, expected, strict=True))
    a = dict(zip(names, (np.asarray(x) for x in actual), strict=True))
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
                          f"allclose(rtol={rtol:g}, atol={atol:.3g}{describe_scaling(tolerance)})")
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
