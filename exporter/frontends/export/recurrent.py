"""Recurrent layers kept whole under torch.export, their sequence and batch axes free to stay dynamic.

torch.export computes each op's output shapes by running its PyTorch decomposition on symbolic sizes. The
decompositions of ``aten.lstm``, ``aten.gru``, ``aten.rnn_tanh`` and ``aten.rnn_relu`` loop over the sequence in
Python, which fixes its length (and, through the stacked steps, the batch): a dynamic sequence axis is refused. While
a capture runs, each is given a form whose steps are a ``while_loop`` instead, which traces with symbolic sizes. The
program still holds the layer as one op (its symbolic converts it whole to an ONNX LSTM, GRU or RNN node); the loop
only supplies the shapes. LSTM and GRU take PyTorch's own while_loop forms (``torch.export._patches``, which its
exporter registers for the CompositeImplicitAutograd kernel alone); the Elman layers, for which PyTorch has none, take
the ones below.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator

import torch


@contextlib.contextmanager
def recurrent_layers_whole() -> Iterator[None]:
    """Within the block, torch.export traces LSTM, GRU and Elman RNN layers through while_loop forms (see the module
    docstring), and a program's decompositions keep them. Where this torch lacks ``while_loop`` or PyTorch's forms,
    the layers trace as before."""
    try:
        from torch._higher_order_ops.while_loop import while_loop  # noqa: F401  (the Elman forms need it)
        from torch.export._patches import lstm_while_loop_impl
    except ImportError:
        yield
        return
    with (_loops_forgotten(),
          _traced_as(torch.ops.aten.lstm.input, lstm_while_loop_impl),
          _traced_as(torch.ops.aten.gru.input, functools.partial(_layers, _gru_step)),
          _traced_as(torch.ops.aten.rnn_tanh.input, functools.partial(_layers, _elman_cell(torch.tanh))),
          _traced_as(torch.ops.aten.rnn_relu.input, functools.partial(_layers, _elman_cell(torch.relu)))):
        yield


@contextlib.contextmanager
def _loops_forgotten() -> Iterator[None]:
    """torch.compile's memory of the while_loops traced in the block forgotten after it (and before). ``while_loop``
    compiles one wrapper function for every loop, and the compiled entry and the sizes it saw (the automatic-dynamic
    profile) stay with that function's code: the next export's loop then reuses them, and a capture whose sequence is
    dynamic after one whose batch was came out refused as specialized."""
    _forget_while_loop_wrapper()
    try:
        yield
    finally:
        _forget_while_loop_wrapper()


def _forget_while_loop_wrapper() -> None:
    from torch._dynamo import convert_frame, pgo, reset_code

    for seen in convert_frame.input_codes.seen + convert_frame.output_codes.seen:
        code = seen()
        if code is not None and code.co_name == _WHILE_LOOP_WRAPPER:
            reset_code(code)
    state = pgo._CODE_STATE
    if state is not None:
        for key in [key for key in state if key.name == _WHILE_LOOP_WRAPPER]:
            del state[key]


_WHILE_LOOP_WRAPPER = "_while_loop_op_wrapper"  # torch._higher_order_ops.while_loop's function torch.compile compiles


@contextlib.contextmanager
def _traced_as(op, implementation: Callable) -> Iterator[None]:
    """``op`` computed by ``implementation`` while the block runs: the kernels torch.export's tracing dispatches to
    for a composite op (its CompositeImplicitAutograd and Autograd Python kernels: parameters that require grad go
    through the latter), with the op's dispatch cache cleared so no kernel chosen earlier is reused. The previous
    kernels return after."""
    from torch._decomp import global_decomposition_table

    keys = (torch._C.DispatchKey.CompositeImplicitAutograd, torch._C.DispatchKey.Autograd)
    saved = {key: op.py_kernels.get(key) for key in keys}
    # A program's decomposition (``run_decompositions``) computes a kept op's shapes through this table, not the
    # kernels: without the form there, it traces the Python loop again and fixes the dynamic sequence it was captured with.
    table = global_decomposition_table["post_autograd"]
    saved_decomposition = table.get(op)
    try:
        for key in keys:
            op.py_kernels[key] = implementation
        table[op] = implementation
        op._dispatch_cache.clear()
        yield
    finally:
        if saved_decomposition is None:
            table.pop(op, None)
        else:
            table[op] = saved_decomposition
        for key, kernel in saved.items():
            if kernel is None:
                op.py_kernels.pop(key, None)
            else:
                op.py_kernels[key] = kernel
        op._dispatch_cache.clear()


def _elman_cell(nonlinearity: Callable) -> Callable:
    """The Elman step: ``h_t = nonlinearity(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (``projected`` holds the
    input's part, ``recurrent`` the state's linear map)."""
    def step(projected, state, recurrent):
        (inputs,), (hidden,) = projected, recurrent
        return nonlinearity(inputs + hidden(state))
    return step


def _gru_step(projected, state, recurrent):
    """The GRU step in PyTorch's gate order (reset, update, new): ``n = tanh(x W_in^T + b_in + r * (h W_hn^T +
    b_hn))``, ``h_t = (1 - z) * n + z * h_{t-1}``."""
    (input_reset, input_update, input_new), (hidden_reset, hidden_update, hidden_new) = projected, recurrent
    reset = torch.sigmoid(input_reset + hidden_reset(state))
    update = torch.sigmoid(input_update + hidden_update(state))
    new = torch.tanh(input_new + reset * hidden_new(state))
    return new + update * (state - new)


_GATES = {_gru_step: 3}


def _layers(step: Callable, input, hx, params, has_biases: bool, num_layers: int, dropout: float, train: bool,
            bidirectional: bool, batch_first: bool):
    """``aten.rnn_tanh.input`` / ``aten.rnn_relu.input`` / ``aten.gru.input``: (output, h_n), each layer and
    direction a while_loop of ``step`` over the sequence."""
    per_layer = 4 if has_biases else 2
    directions = 2 if bidirectional else 1
    layer_input = input.transpose(0, 1) if batch_first else input
    finals = []
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            weights = params[index * per_layer:(index + 1) * per_layer]
            output, final = _one_direction(step, layer_input, hx[index], weights, reverse=direction == 1)
            outputs.append(output)
            finals.append(final)
        layer_input = torch.cat(outputs, dim=-1) if bidirectional else outputs[0]
        if train and dropout and layer < num_layers - 1:
            layer_input = torch.dropout(layer_input, dropout, train=True)
    output = layer_input.transpose(0, 1) if batch_first else layer_input
    return output, torch.stack(finals, 0)


def _one_direction(step: Callable, sequence, hidden, weights, reverse: bool):
    """One layer in one direction over ``sequence`` (steps, batch, features): (every step's hidden state, the last).

    The weights are split per gate before the loop: a split inside it would be traced on the loop's own symbolic
    sizes, where torch.export guards on them and fixes the batch."""
    from torch._higher_order_ops.while_loop import while_loop

    gates = _GATES.get(step, 1)
    ih_weight, hh_weight = weights[0], weights[1]
    ih_bias, hh_bias = (weights[2], weights[3]) if len(weights) == 4 else (None, None)
    inputs = torch.nn.functional.linear(sequence, ih_weight, ih_bias)
    # Copied apart: while_loop refuses loop-invariant inputs that share storage, as the gates' views of one tensor
    # (and of a flattened weight buffer) do.
    projected = [part.contiguous() for part in (inputs.flip(0) if reverse else inputs).chunk(gates, -1)]
    hh_weights = [w.clone() for w in hh_weight.chunk(gates, 0)]
    hh_biases = [b.clone() for b in hh_bias.chunk(gates, 0)] if hh_bias is not None else [None] * gates
    recurrent = [functools.partial(_linear, weight=w, bias=b) for w, b in zip(hh_weights, hh_biases, strict=True)]
    steps = sequence.size(0)

    def more(at, states, state):
        return at < steps

    def advance(at, states, state):
        index = at.item()
        torch._check(index >= 0)
        torch._check(index < steps)
        state = step([part[index] for part in projected], state, recurrent)
        states = states.clone()
        states[index] = state
        return at + 1, states, state

    start = torch.tensor(0, dtype=torch.int64)
    states = torch.empty(steps, *hidden.shape, dtype=hidden.dtype, device=hidden.device)
    _, states, final = while_loop(more, advance, [start, states, hidden])
    return (states.flip(0) if reverse else states), final


def _linear(state, weight, bias):
    return torch.nn.functional.linear(state, weight, bias)
