"""Cases for the recurrent layers (nn.LSTM / nn.GRU / nn.RNN as traced) and the cell functions.

Size variant 1 changes the sequence length and the batch, so the dynamic export proves that nothing about
either is baked in.
"""

import torch

from opcases import OPSETS, OpCase


class _WithState(torch.nn.Module):
    """Calls a recurrent layer with an explicit initial state (h0, or (h0, c0) for an LSTM)."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x, h0, c0=None):
        return self.layer(x, h0 if c0 is None else (h0, c0))


def _sequence(features=3, batch_first=False):
    def make(k):
        seq, batch = 5 + 2 * k, 2 + k
        return (torch.randn(batch, seq, features) if batch_first else torch.randn(seq, batch, features),)
    return make


def _sequence_and_state(layers, directions, hidden, features=3, lstm=False):
    def make(k):
        seq, batch = 5 + 2 * k, 2 + k
        state = [torch.randn(layers * directions, batch, hidden) for _ in range(2 if lstm else 1)]
        return (torch.randn(seq, batch, features), *state)
    return make


def _layer(cls, **kwargs):
    return lambda: cls(**kwargs)


def _stateful(cls, **kwargs):
    return lambda: _WithState(cls(**kwargs))


CASES = [
    OpCase("lstm", _sequence(), module=_layer(torch.nn.LSTM, input_size=3, hidden_size=4)),
    OpCase("lstm", _sequence(), sample="bias_false", module=_layer(torch.nn.LSTM, input_size=3, hidden_size=4,
                                                                   bias=False)),
    OpCase("lstm", _sequence(batch_first=True), sample="batch_first",
           module=_layer(torch.nn.LSTM, input_size=3, hidden_size=4, batch_first=True)),
    OpCase("lstm", _sequence(), sample="two_layers_bidirectional",
           module=_layer(torch.nn.LSTM, input_size=3, hidden_size=4, num_layers=2, bidirectional=True)),
    OpCase("lstm", _sequence_and_state(2, 2, 4, lstm=True), sample="two_layers_bidirectional_h0_c0",
           module=_stateful(torch.nn.LSTM, input_size=3, hidden_size=4, num_layers=2, bidirectional=True)),
    # The documentation's example: a 4-layer bidirectional LSTM with (h0, c0), dynamic along the sequence.
    OpCase("lstm", _sequence_and_state(4, 2, 6, features=5, lstm=True), sample="docs_four_layers_bidirectional",
           module=_stateful(torch.nn.LSTM, input_size=5, hidden_size=6, num_layers=4, bidirectional=True,
                            dropout=0.3)),
    OpCase("lstm", _sequence(), sample="projection",
           known_failures={opset: "ONNX LSTM has no output projection (proj_size); the export raises "
                                  "UnsupportedOperatorError" for opset in OPSETS},
           module=_layer(torch.nn.LSTM, input_size=3, hidden_size=4, proj_size=2)),
    OpCase("gru", _sequence(), module=_layer(torch.nn.GRU, input_size=3, hidden_size=4)),
    OpCase("gru", _sequence(), sample="bias_false", module=_layer(torch.nn.GRU, input_size=3, hidden_size=4,
                                                                  bias=False)),
    OpCase("gru", _sequence(batch_first=True), sample="batch_first_bidirectional",
           module=_layer(torch.nn.GRU, input_size=3, hidden_size=4, batch_first=True, bidirectional=True)),
    OpCase("gru", _sequence_and_state(3, 2, 4), sample="three_layers_bidirectional_h0",
           module=_stateful(torch.nn.GRU, input_size=3, hidden_size=4, num_layers=3, bidirectional=True)),
    OpCase("rnn_tanh", _sequence(), module=_layer(torch.nn.RNN, input_size=3, hidden_size=4)),
    OpCase("rnn_tanh", _sequence_and_state(2, 2, 4), sample="two_layers_bidirectional_h0",
           module=_stateful(torch.nn.RNN, input_size=3, hidden_size=4, num_layers=2, bidirectional=True)),
    OpCase("rnn_relu", _sequence(batch_first=True), sample="batch_first_bias_false",
           module=_layer(torch.nn.RNN, input_size=3, hidden_size=4, nonlinearity="relu", batch_first=True,
                         bias=False)),
    OpCase("rnn_relu", _sequence_and_state(2, 1, 4), sample="two_layers_h0",
           module=_stateful(torch.nn.RNN, input_size=3, hidden_size=4, num_layers=2, nonlinearity="relu")),
]


class _Cell(torch.nn.Module):
    """Holds the parameters of an nn.*Cell; subclasses call the matching torch.*_cell function.

    Tracing decomposes torch.*_cell into matmuls and activations, so these modules are scripted: that is
    the form in which aten::*_cell nodes reach the exporter.
    """

    def __init__(self, bias: bool = True, gates: int = 1):
        super().__init__()
        self.weight_ih = torch.nn.Parameter(torch.randn(gates * 4, 3) * 0.5)
        self.weight_hh = torch.nn.Parameter(torch.randn(gates * 4, 4) * 0.5)
        self.bias_ih = torch.nn.Parameter(torch.randn(gates * 4) * 0.5) if bias else None
        self.bias_hh = torch.nn.Parameter(torch.randn(gates * 4) * 0.5) if bias else None


class _LSTMCellFunction(_Cell):
    def __init__(self):
        super().__init__(gates=4)

    def forward(self, x, h, c):
        return torch.lstm_cell(x, (h, c), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class _GRUCellFunction(_Cell):
    def __init__(self, bias: bool = True):
        super().__init__(bias=bias, gates=3)

    def forward(self, x, h):
        return torch.gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class _RNNTanhCellFunction(_Cell):
    def forward(self, x, h):
        return torch.rnn_tanh_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class _RNNReluCellFunction(_Cell):
    def forward(self, x, h):
        return torch.rnn_relu_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


def _scripted(cls, **kwargs):
    return lambda: torch.jit.script(cls(**kwargs))


def _cell_inputs(lstm=False):
    def make(k):
        batch = 2 + k
        return (torch.randn(batch, 3), *[torch.randn(batch, 4) for _ in range(2 if lstm else 1)])
    return make


CASES += [
    OpCase("lstm_cell", _cell_inputs(lstm=True), module=_scripted(_LSTMCellFunction)),
    OpCase("gru_cell", _cell_inputs(), module=_scripted(_GRUCellFunction)),
    OpCase("gru_cell", _cell_inputs(), sample="bias_false", module=_scripted(_GRUCellFunction, bias=False)),
    OpCase("rnn_tanh_cell", _cell_inputs(), module=_scripted(_RNNTanhCellFunction)),
    OpCase("rnn_relu_cell", _cell_inputs(), module=_scripted(_RNNReluCellFunction)),
]


class _Packed(torch.nn.Module):
    """pack_padded_sequence -> recurrent layer -> pad_packed_sequence, returning the padded output, the lengths
    and the final states (which PyTorch takes at each sequence's last step)."""

    def __init__(self, layer, batch_first=False, enforce_sorted=True, padding_value=0.0):
        super().__init__()
        self.layer, self.batch_first = layer, batch_first
        self.enforce_sorted, self.padding_value = enforce_sorted, padding_value

    def forward(self, x, lengths, *state):
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, self.batch_first, self.enforce_sorted)
        if state:
            output, finals = self.layer(packed, state[0] if len(state) == 1 else state)
        else:
            output, finals = self.layer(packed)
        padded, lengths = torch.nn.utils.rnn.pad_packed_sequence(output, self.batch_first, self.padding_value)
        return (padded, lengths, *(finals if isinstance(finals, tuple) else (finals,)))


def _ragged(batch_first=False, state_layers=0, lstm=False, descending=True):
    """A ragged batch: lengths from 1 to the padded length (the longest sequence fills it)."""
    def make(k):
        seq, batch = 5 + 2 * k, 3 + k
        lengths = torch.tensor([seq] + [max(seq - 2 * i - 1, 1) for i in range(1, batch)])
        lengths = lengths if descending else lengths.flip(0)
        x = torch.randn(batch, seq, 3) if batch_first else torch.randn(seq, batch, 3)
        state = [torch.randn(state_layers, batch, 4) for _ in range(2 if lstm else 1)] if state_layers else []
        return (x, lengths, *state)
    return make


def _packed(cls, batch_first=False, enforce_sorted=True, padding_value=0.0, **kwargs):
    return lambda: _Packed(cls(input_size=3, hidden_size=4, batch_first=batch_first, **kwargs), batch_first,
                           enforce_sorted, padding_value)


# Packed sequences export as ONNX's sequence_lens, which needs Where/NonZero for the lengths and masks (opset 9).
CASES += [
    OpCase("pack_padded_sequence", _ragged(), sample="lstm", min_opset=9, module=_packed(torch.nn.LSTM)),
    OpCase("pack_padded_sequence", _ragged(batch_first=True, state_layers=4, lstm=True),
           sample="lstm_two_layers_bidirectional_batch_first_h0_c0", min_opset=9,
           module=_packed(torch.nn.LSTM, batch_first=True, num_layers=2, bidirectional=True)),
    OpCase("pack_padded_sequence", _ragged(state_layers=2), sample="gru_bidirectional_h0_padding_value",
           min_opset=9, module=_packed(torch.nn.GRU, bidirectional=True, padding_value=-1.0)),
    # enforce_sorted=False sorts the lengths (int64 TopK, opset 11) and restores the batch order afterwards.
    OpCase("pack_padded_sequence", _ragged(batch_first=True, descending=False), sample="rnn_relu_unsorted",
           min_opset=11, module=_packed(torch.nn.RNN, batch_first=True, enforce_sorted=False, num_layers=2,
                                        nonlinearity="relu")),
]
