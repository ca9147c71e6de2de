"""Recurrent layers: aten::lstm / gru / rnn_tanh / rnn_relu (as traced from nn.LSTM/GRU/RNN), their cells, and
packed sequences (pack_padded_sequence / pad_packed_sequence around them, exported with ONNX's sequence_lens).

Each layer becomes one ONNX LSTM/GRU/RNN node (both directions in one node when bidirectional); a stack of
layers chains them, the next layer reading the previous layer's output with its directions concatenated.
PyTorch and ONNX stack the gates of the weight matrices in different orders:
  LSTM  PyTorch i, f, g, o   ->  ONNX i, o, f, c
  GRU   PyTorch r, z, n      ->  ONNX z, r, h   (and PyTorch applies the reset gate after the hidden
                                                 matmul: linear_before_reset = 1)
so W, R and B are rebuilt from the parameter inputs with Slice/Concat (constant folding turns them into
initializers when the parameters are constants). A missing initial state is left out (ONNX defaults to
zeros), which also keeps opset 7 free of ConstantFill.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from exporter.dtypes import INT32, INT64
from exporter.lowering.core import (
    cast,
    constant_value,
    dim_size,
    is_constant,
    is_value,
    reduce_op,
    require_opset,
    require_rank,
    reshape,
    slice_op,
    squeeze,
    to_int64_list_value,
    unsqueeze,
)
from exporter.lowering.factories import filled
from exporter.lowering.recurrent import first_steps
from exporter.lowering.shape import INT64_MAX, arange_indices
from exporter.registry import parse_args, symbolic, unsupported


@dataclass(frozen=True)
class _Kind:
    onnx_op: str
    gates: int
    onnx_gate_order: tuple[int, ...]  # PyTorch gate index for each ONNX gate position
    activation: str | None = None  # for the plain RNN
    extra: tuple = ()


_LSTM = _Kind("LSTM", 4, (0, 3, 1, 2))
_GRU = _Kind("GRU", 3, (1, 0, 2), extra=(("linear_before_reset_i", 1),))
_RNN_TANH = _Kind("RNN", 1, (0,), activation="Tanh")
_RNN_RELU = _Kind("RNN", 1, (0,), activation="Relu")


def _static_shape(g, value) -> list[int]:
    if is_value(value) and value.const is not None:
        return list(value.const.shape)
    dims = g.static_dims(value)
    if dims is None:
        raise unsupported(g.op_kind, g.opset, "recurrent weights need a known shape")
    return dims


def _reorder_gates(g, weight, kind: _Kind, hidden: int):
    """Rows of a PyTorch gate-stacked weight or bias, restacked in ONNX's gate order."""
    if kind.gates == 1 or list(kind.onnx_gate_order) == list(range(kind.gates)):
        return weight
    blocks = [slice_op(g, weight, [0], [gate * hidden], [(gate + 1) * hidden]) for gate in kind.onnx_gate_order]
    return g.op("Concat", *blocks, axis_i=0)


def _stack_directions(g, per_direction: list):
    stacked = [unsqueeze(g, item, [0]) for item in per_direction]
    return stacked[0] if len(stacked) == 1 else g.op("Concat", *stacked, axis_i=0)


def _layer_weights(g, kind: _Kind, params: list, has_biases: bool, hidden: int):
    """(W, R, B) of one layer from its per-direction [w_ih, w_hh, (b_ih, b_hh)] parameter groups."""
    if g.session.fold_params and all(p.const is not None for group in params for p in group):
        return _folded_layer_weights(g, kind, params, has_biases, hidden)
    ws, rs, bs = [], [], []
    for group in params:
        ws.append(_reorder_gates(g, group[0], kind, hidden))
        rs.append(_reorder_gates(g, group[1], kind, hidden))
        if has_biases:
            biases = [_reorder_gates(g, b, kind, hidden) for b in group[2:4]]
            bs.append(g.op("Concat", *biases, axis_i=0))
    bias = _stack_directions(g, bs) if has_biases else None
    return _stack_directions(g, ws), _stack_directions(g, rs), bias


def _folded_layer_weights(g, kind: _Kind, params: list, has_biases: bool, hidden: int):
    """(W, R, B) as constants, restacked here: the Slice/Concat nodes that constant folding would evaluate, computed
    once in numpy (an LSTM of 4 bidirectional layers would need 200 of them)."""
    def restacked(array: np.ndarray) -> np.ndarray:
        return np.concatenate([array[gate * hidden:(gate + 1) * hidden] for gate in kind.onnx_gate_order])

    w = np.stack([restacked(group[0].const) for group in params])
    r = np.stack([restacked(group[1].const) for group in params])
    if not has_biases:
        return g.const(w), g.const(r), None
    b = np.stack([np.concatenate([restacked(group[2].const), restacked(group[3].const)]) for group in params])
    return g.const(w), g.const(r), g.const(b)


def _state_slice(g, state, layer: int, directions: int):
    if state is None:
        return None
    return slice_op(g, state, [0], [layer * directions], [(layer + 1) * directions])


def _is_zero_constant(state) -> bool:
    payload = getattr(state, "const", None)
    if payload is None and hasattr(state, "numpy"):
        payload = state.detach().cpu().numpy()
    return payload is not None and not getattr(state, "is_param", False) and not payload.any()


def _recurrent(g, kind: _Kind, input, states: list, params: list, has_biases: bool, num_layers: int,
               train: bool, dropout: float, bidirectional: bool, batch_first: bool, sequence_lens=None):
    """The shared body of every recurrent symbolic: returns (output, [final state per state input]).
    ``sequence_lens`` (int32, one length per batch entry) makes every layer stop each sequence at its length."""
    directions = 2 if bidirectional else 1
    per_direction = 2 + (2 if has_biases else 0)
    if len(params) != num_layers * directions * per_direction:
        raise unsupported(g.op_kind, g.opset, "LSTM projections (proj_size) have no ONNX equivalent")
    if train and dropout > 0 and num_layers > 1:
        raise unsupported(g.op_kind, g.opset, "dropout between recurrent layers in training mode has no ONNX "
                                                   "equivalent")
    params = [g.value(p) for p in params]
    hidden = _static_shape(g, params[1])[1]
    states = [None if s is None or _is_zero_constant(s) else g.value(s) for s in states]
    sequence = g.op("Transpose", input, perm_i=[1, 0, 2]) if batch_first else input
    attributes: dict[str, Any] = dict(hidden_size_i=hidden, direction_s="bidirectional" if bidirectional else "forward")
    attributes.update(dict(kind.extra))
    if kind.activation:
        attributes["activations_ss"] = [kind.activation] * directions
    finals: list[list] = [[] for _ in states]
    for layer in range(num_layers):
        start = layer * directions * per_direction
        groups = [params[start + d * per_direction: start + (d + 1) * per_direction] for d in range(directions)]
        w, r, b = _layer_weights(g, kind, groups, has_biases, hidden)
        initial = [_state_slice(g, s, layer, directions) for s in states]
        inputs = [sequence, w, r, b, sequence_lens, *initial]
        while inputs[-1] is None:  # optional inputs left out at the end are simply not listed
            inputs.pop()
        outputs = g.op(kind.onnx_op, *inputs, outputs=1 + len(states), **attributes)
        for value in outputs:  # multi-output nodes get no inferred type; every output has the input's
            value.dtype = g.dtype(input)
        y = outputs[0]
        for index, final in enumerate(outputs[1:]):
            finals[index].append(final)
        # Y is [seq, directions, batch, hidden]; the next layer and PyTorch want [seq, batch, directions*hidden].
        sequence = reshape(g, g.op("Transpose", y, perm_i=[0, 2, 1, 3]), [0, 0, -1])
    output = g.op("Transpose", sequence, perm_i=[1, 0, 2]) if batch_first else sequence
    joined = [f[0] if len(f) == 1 else g.op("Concat", *f, axis_i=0) for f in finals]
    return output, joined


@symbolic("aten::lstm")
def lstm(g, input, *args):
    """nn.LSTM: ``(input, [h0, c0], params, has_biases, num_layers, dropout, train, bidirectional, batch_first)``,
    or on a PackedSequence ``(data, batch_sizes, [h0, c0], params, has_biases, ..., bidirectional)``."""
    sequence_lens, (hx, params, *flags) = _packed_or_padded(g, args)
    has_biases, num_layers, dropout, train, bidirectional, batch_first = _flags(*flags)
    states = list(hx) if isinstance(hx, (list, tuple)) else [hx, None]
    output, finals = _recurrent(g, _LSTM, input, states, list(params), has_biases, num_layers, train, dropout,
                                            bidirectional, batch_first, sequence_lens)
    return output, finals[0], finals[1]


@symbolic("aten::gru")
def gru(g, input, *args):
    """nn.GRU: ``(input, h0, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)``, or on
    a PackedSequence ``(data, batch_sizes, h0, params, ...)``."""
    return _single_state(g, _GRU, input, args)


@symbolic("aten::rnn_tanh")
def rnn_tanh(g, input, *args):
    """nn.RNN(nonlinearity='tanh')."""
    return _single_state(g, _RNN_TANH, input, args)


@symbolic("aten::rnn_relu")
def rnn_relu(g, input, *args):
    """nn.RNN(nonlinearity='relu')."""
    return _single_state(g, _RNN_RELU, input, args)


def _single_state(g, kind: _Kind, input, args):
    sequence_lens, (hx, params, *flags) = _packed_or_padded(g, args)
    has_biases, num_layers, dropout, train, bidirectional, batch_first = _flags(*flags)
    output, finals = _recurrent(g, kind, input, [hx], list(params), has_biases, num_layers, train, dropout,
                                            bidirectional, batch_first, sequence_lens)
    return output, finals[0]


@parse_args("b", "i", "f", "b", "b", "b")
def _flag_values(g, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    return has_biases, num_layers, dropout, train, bidirectional, batch_first


def _flags(*flags):
    return _flag_values(None, *flags)


# -- cells: one time step of a single-layer, single-direction recurrence ------------------------------------
def _cell(g, kind: _Kind, input, states: list, w_ih, w_hh, b_ih, b_hh):
    params = [w_ih, w_hh] + ([b_ih, b_hh] if b_ih is not None else [])
    has_biases = b_ih is not None
    if has_biases and b_hh is None:
        raise unsupported(g.op_kind, g.opset, "a cell with only one of its two biases")
    batched = g.rank(input) != 1
    step = unsqueeze(g, input, [0] if batched else [0, 1])
    states = [None if s is None else unsqueeze(g, s, [0] if batched else [0, 1]) for s in states]
    _, finals = _recurrent(g, kind, step, states, params, has_biases, 1, False, 0.0, False, False)
    return [squeeze(g, f, [0] if batched else [0, 1]) for f in finals]


@symbolic("aten::lstm_cell")
def lstm_cell(g, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.lstm_cell: ``(input, [hx, cx], w_ih, w_hh, b_ih, b_hh) -> (hy, cy)``."""
    hy, cy = _cell(g, _LSTM, input, list(hx), w_ih, w_hh, b_ih, b_hh)
    return hy, cy


@symbolic("aten::gru_cell")
def gru_cell(g, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.gru_cell: ``(input, hx, w_ih, w_hh, b_ih, b_hh) -> hy``."""
    return _cell(g, _GRU, input, [hx], w_ih, w_hh, b_ih, b_hh)[0]


@symbolic("aten::rnn_tanh_cell")
def rnn_tanh_cell(g, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_tanh_cell."""
    return _cell(g, _RNN_TANH, input, [hx], w_ih, w_hh, b_ih, b_hh)[0]


@symbolic("aten::rnn_relu_cell")
def rnn_relu_cell(g, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_relu_cell."""
    return _cell(g, _RNN_RELU, input, [hx], w_ih, w_hh, b_ih, b_hh)[0]


# -- packed sequences ---------------------------------------------------------------------------------------
# A PackedSequence stores a ragged batch's steps back to back ([sum(lengths), features]) with ``batch_sizes``, the
# number of sequences still running at each step. ONNX's LSTM/GRU/RNN instead take the padded, time-major batch
# and one length per sequence (``sequence_lens``), and stop each sequence at its length: the final states are
# then the states at each sequence's last step, as PyTorch's. So the exported graph keeps a packed sequence's
# data in padded form [time, batch, features]. That is only right where the data is read by what understands
# the padded form, so pack_padded_sequence, a recurrent layer on packed data and pad_packed_sequence each check
# (on the TorchScript graph) who reads the packed data they produce, and refuse data they did not produce.
# ``batch_sizes`` itself is computed for real (anything may read it: nn.LSTM takes the batch size from it), and
# remembers the lengths it was computed from.
_SEQUENCE_LENGTHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # batch_sizes value -> int64 lengths
_RECURRENT_OPS = ("aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu")


def _is_packed_op(kind: str, overload: str) -> bool:
    """True for the PackedSequence overloads of the recurrent ops (``aten::lstm.data`` ...)."""
    return kind in _RECURRENT_OPS and overload == "data"


def _packed_or_padded(g, args):
    """Split a recurrent op's arguments after its input: (sequence_lens or None, the padded overload's arguments).
    The packed overload has ``batch_sizes`` second and no ``batch_first`` (packed data is time-major)."""
    if not _is_packed_op(g.op_kind, g.overload):
        return None, args
    require_opset(g, 9, "packed sequences need Where/NonZero")
    _require_padded_form(g)
    _require_padded_form_readers(g)
    lengths = _sequence_lengths(g, args[0])
    return cast(g, lengths, INT32), (*args[1:], False)


def _require_padded_form_readers(g):
    """Refuse a packed sequence whose data is read by anything that expects PyTorch's packed layout."""
    for kind, overload, position in g.output_readers(0):
        if position != 0 or not (_is_packed_op(kind, overload) or kind == "aten::_pad_packed_sequence"):
            raise unsupported(g.op_kind, g.opset,
                              f"the data of the packed sequence is read by {kind}; the export keeps packed "
                              "data padded, which only recurrent layers and pad_packed_sequence can read")


def _require_padded_form(g):
    """Refuse packed data that pack_padded_sequence or a recurrent layer did not produce in padded form."""
    kind, overload = g.input_producer(0)
    if kind != "aten::_pack_padded_sequence" and not _is_packed_op(kind, overload):
        raise unsupported(g.op_kind, g.opset,
                          f"packed data made by {kind}, not by pack_padded_sequence or a recurrent layer")


def _sequence_lengths(g, batch_sizes):
    lengths = _SEQUENCE_LENGTHS.get(batch_sizes) if is_value(batch_sizes) else None
    if lengths is None:
        raise unsupported(g.op_kind, g.opset, "a PackedSequence whose batch sizes do not come from "
                                                  "pack_padded_sequence in the same graph")
    return lengths


def _steps_below_lengths(g, steps, lengths):
    """[time, batch] mask: step t of sequence b is within its length."""
    return g.op("Less", unsqueeze(g, steps, [1]), unsqueeze(g, lengths, [0]))


@symbolic("aten::_pack_padded_sequence", since=9)
@parse_args("v", "v", "b")
def _pack_padded_sequence(g, input, lengths, batch_first):
    """pack_padded_sequence's core: (data, batch_sizes), here (time-major padded input, real batch sizes)."""
    _require_padded_form_readers(g)
    rank = require_rank(g, input)
    data = g.op("Transpose", input, perm_i=[1, 0, *range(2, rank)]) if batch_first else input
    lengths = cast(g, lengths, INT64)
    # batch_sizes[t] = how many sequences are longer than t, for t below the longest length.
    longest = g.op("ReduceMax", lengths, keepdims_i=0)
    longest.shape = ()
    running = cast(g, _steps_below_lengths(g, arange_indices(g, longest), lengths), INT64)
    batch_sizes = reduce_op(g, "ReduceSum", running, [1], keepdims=False)
    batch_sizes.shape = (None,)
    _SEQUENCE_LENGTHS[batch_sizes] = lengths
    return data, batch_sizes


@symbolic("aten::_pad_packed_sequence", since=9)
@parse_args("v", "v", "b", "f", "v")
def _pad_packed_sequence(g, data, batch_sizes, batch_first, padding_value, total_length):
    """pad_packed_sequence's core: (padded [total_length, batch, *] or batch-first, lengths). ONNX leaves the
    outputs past a sequence's length unspecified, so they are set to ``padding_value`` here."""
    _require_padded_form(g)
    lengths = _sequence_lengths(g, batch_sizes)
    padded = _with_steps(g, data, total_length, padding_value)
    rank = require_rank(g, data)
    valid = _steps_below_lengths(g, arange_indices(g, dim_size(g, padded, 0)), lengths)
    padding = g.const(np.array(padding_value), g.dtype(data))
    padded = g.op("Where", unsqueeze(g, valid, list(range(2, rank))), padded, padding)
    if batch_first:
        padded = g.op("Transpose", padded, perm_i=[1, 0, *range(2, rank)])
    return padded, lengths


def _with_steps(g, data, total_length, padding_value: float):
    """``data`` cut or padded to ``total_length`` steps. The trace passes ``batch_sizes.size(0)`` (the longest
    length, never above the padded input's steps) unless the caller gave a longer total_length."""
    if g.input_is_size_of(4, 1, 0):  # total_length is batch_sizes.size(0)
        return first_steps(g, data, total_length)
    steps = g.static_dims(data)
    if is_constant(total_length) and steps is not None and constant_value(total_length) <= steps[0]:
        return first_steps(g, data, total_length)
    rest = slice_op(g, g.op("Shape", data), [0], [1], [INT64_MAX])
    extra_shape = g.op("Concat", to_int64_list_value(g, [total_length]), rest, axis_i=0)
    extra = filled(g, extra_shape, padding_value, g.dtype(data))
    return first_steps(g, g.op("Concat", data, extra, axis_i=0), total_length)
