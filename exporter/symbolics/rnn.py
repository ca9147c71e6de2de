"""Recurrent layers: aten::lstm / gru / rnn_tanh / rnn_relu (as traced from nn.LSTM/GRU/RNN) and their cells.

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

from dataclasses import dataclass

from exporter.registry import parse_args, symbolic, unsupported
from exporter.symbolics._helpers import reshape, slice_op, squeeze, unsqueeze


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
    if value.const is not None:
        return list(value.const.shape)
    dims = g.static_dims(value)
    if dims is None:
        raise unsupported(g.node.kind(), g.opset, "recurrent weights need a known shape")
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
    ws, rs, bs = [], [], []
    for group in params:
        ws.append(_reorder_gates(g, group[0], kind, hidden))
        rs.append(_reorder_gates(g, group[1], kind, hidden))
        if has_biases:
            biases = [_reorder_gates(g, b, kind, hidden) for b in group[2:4]]
            bs.append(g.op("Concat", *biases, axis_i=0))
    bias = _stack_directions(g, bs) if has_biases else None
    return _stack_directions(g, ws), _stack_directions(g, rs), bias


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
               train: bool, dropout: float, bidirectional: bool, batch_first: bool):
    """The shared body of every recurrent symbolic: returns (output, [final state per state input])."""
    directions = 2 if bidirectional else 1
    per_direction = 2 + (2 if has_biases else 0)
    if len(params) != num_layers * directions * per_direction:
        raise unsupported(g.node.kind(), g.opset, "LSTM projections (proj_size) have no ONNX equivalent")
    if train and dropout > 0 and num_layers > 1:
        raise unsupported(g.node.kind(), g.opset, "dropout between recurrent layers in training mode has no ONNX "
                                                   "equivalent")
    params = [g.value(p) for p in params]
    hidden = _static_shape(g, params[1])[1]
    states = [None if s is None or _is_zero_constant(s) else g.value(s) for s in states]
    sequence = g.op("Transpose", input, perm_i=[1, 0, 2]) if batch_first else input
    attributes = dict(hidden_size_i=hidden, direction_s="bidirectional" if bidirectional else "forward")
    attributes.update(dict(kind.extra))
    if kind.activation:
        attributes["activations_ss"] = [kind.activation] * directions
    finals: list[list] = [[] for _ in states]
    for layer in range(num_layers):
        start = layer * directions * per_direction
        groups = [params[start + d * per_direction: start + (d + 1) * per_direction] for d in range(directions)]
        w, r, b = _layer_weights(g, kind, groups, has_biases, hidden)
        initial = [_state_slice(g, s, layer, directions) for s in states]
        inputs = [sequence, w, r, b, None, *initial]
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


def _reject_packed(g):
    if "batch_sizes" in str(g.node.schema()):
        raise unsupported(g.node.kind(), g.opset, "packed sequences (PackedSequence) are not supported; pass a padded "
                                                   "tensor instead")


@symbolic("aten::lstm")
def lstm(g, input, hx, params, *flags):
    """nn.LSTM: ``(input, [h0, c0], params, has_biases, num_layers, dropout, train, bidirectional, batch_first)``."""
    _reject_packed(g)
    has_biases, num_layers, dropout, train, bidirectional, batch_first = _flags(*flags)
    states = list(hx) if isinstance(hx, (list, tuple)) else [hx, None]
    output, finals = _recurrent(g, _LSTM, input, states, list(params), has_biases, num_layers, train, dropout,
                                            bidirectional, batch_first)
    return output, finals[0], finals[1]


@symbolic("aten::gru")
def gru(g, input, hx, params, *flags):
    """nn.GRU: ``(input, h0, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)``."""
    return _single_state(g, _GRU, input, hx, params, flags)


@symbolic("aten::rnn_tanh")
def rnn_tanh(g, input, hx, params, *flags):
    """nn.RNN(nonlinearity='tanh')."""
    return _single_state(g, _RNN_TANH, input, hx, params, flags)


@symbolic("aten::rnn_relu")
def rnn_relu(g, input, hx, params, *flags):
    """nn.RNN(nonlinearity='relu')."""
    return _single_state(g, _RNN_RELU, input, hx, params, flags)


def _single_state(g, kind: _Kind, input, hx, params, flags):
    _reject_packed(g)
    has_biases, num_layers, dropout, train, bidirectional, batch_first = _flags(*flags)
    output, finals = _recurrent(g, kind, input, [hx], list(params), has_biases, num_layers, train, dropout,
                                            bidirectional, batch_first)
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
        raise unsupported(g.node.kind(), g.opset, "a cell with only one of its two biases")
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
