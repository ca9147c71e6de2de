"""Forms that ONNX cannot express, or that the export's own representation cannot carry, raise instead of
exporting something approximate."""

import io

import pytest
import torch
from torch.nn.utils import rnn as rnn_utils

import exporter
from exporter.errors import UnsupportedOperatorError


def _export(fn, *args, opset=14):
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = torch.nn.GRU(3, 4)

        def forward(self, *inputs):
            return fn(self, *inputs)

    exporter.export(Model(), args, io.BytesIO(), opset_version=opset, dynamo=False)


_PADDED, _LENGTHS = torch.randn(5, 3, 3), torch.tensor([5, 3, 2])


def test_packed_data_read_by_another_op_raises():
    """The export keeps packed data padded: an elementwise op on PackedSequence.data would see the wrong layout."""
    def fn(model, x, lengths):
        packed = rnn_utils.pack_padded_sequence(x, lengths)
        return packed.data * 2, packed.batch_sizes

    with pytest.raises(UnsupportedOperatorError, match="read by aten::mul"):
        _export(fn, _PADDED, _LENGTHS)


def test_packed_sequence_built_from_other_data_raises():
    def fn(model, x, lengths):
        packed = rnn_utils.pack_padded_sequence(x, lengths)
        rebuilt = rnn_utils.PackedSequence(torch.relu(packed.data), packed.batch_sizes)
        return rnn_utils.pad_packed_sequence(model.gru(rebuilt)[0])[0]

    with pytest.raises(UnsupportedOperatorError, match="packed"):
        _export(fn, _PADDED, _LENGTHS)


def test_packed_sequences_below_opset_9_name_it():
    def fn(model, x, lengths):
        output, _ = model.gru(rnn_utils.pack_padded_sequence(x, lengths))
        return rnn_utils.pad_packed_sequence(output)[0]

    with pytest.raises(UnsupportedOperatorError, match="needs opset >= 9"):
        _export(fn, _PADDED, _LENGTHS, opset=8)


def test_matrix_norms_from_singular_values_raise():
    with pytest.raises(UnsupportedOperatorError, match="singular values"):
        _export(lambda model, x: torch.linalg.matrix_norm(x, "nuc"), torch.randn(3, 4))
    with pytest.raises(UnsupportedOperatorError, match="singular values"):
        _export(lambda model, x: torch.linalg.matrix_norm(x, 2), torch.randn(3, 4))


def test_fake_quantize_wider_than_8_bits_raises():
    with pytest.raises(UnsupportedOperatorError, match="does not fit 8 bits"):
        _export(lambda model, x: torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -1000, 1000), torch.randn(3, 4))


def test_as_strided_reading_storage_its_input_does_not_hold_raises():
    """The graph holds the view's elements, not its base's storage: a position outside them has no value there."""
    with pytest.raises(UnsupportedOperatorError, match="reading storage outside its input"):
        _export(lambda model, x: (x + 1)[:, :2].as_strided((2, 3), (6, 1)), torch.randn(4, 6))


def test_as_strided_with_a_storage_offset_of_a_view_raises():
    """An explicit offset counts from the start of the storage, where a view starts elsewhere: the export took it
    from the view's first element, a silently wrong model (the rows before it were never read)."""
    with pytest.raises(UnsupportedOperatorError, match="whose own offset in its storage is not known"):
        _export(lambda model, x: (x + 1)[1:].as_strided((2, 3), (1, 2), 0), torch.randn(4, 6))


def test_as_strided_of_a_non_contiguous_view_with_dynamic_axes_raises():
    """Its strides, and so which element each storage position is, change with the sizes."""
    class Model(torch.nn.Module):
        def forward(self, x):
            return x.t().as_strided((2, 2), (1, 2))

    with pytest.raises(UnsupportedOperatorError, match="dynamic axes"):
        exporter.export(Model(), (torch.randn(3, 4),), io.BytesIO(), input_names=["x"], dynamic_axes={"x": [0]}, dynamo=False)


def test_complex_casts_raise_instead_of_an_invalid_model():
    """Cast has no complex output type: the export names the op instead of writing a model the checker rejects."""
    with pytest.raises(UnsupportedOperatorError, match="complex"):
        _export(lambda model, x: x.cfloat().real, torch.randn(2, 3))


@pytest.mark.parametrize("script", [False, True], ids=["traced", "scripted"])
def test_a_complex_input_or_output_raises_instead_of_a_model_onnx_runtime_cannot_load(script):
    class FirstColumn(torch.nn.Module):
        def forward(self, x):
            return x[:, 0]

    model = torch.jit.script(FirstColumn()) if script else FirstColumn()
    with pytest.raises(exporter.errors.ExportArgumentError, match="input 'x' is a torch.complex64 tensor.*view_as_real"):
        exporter.export(model, (torch.randn(3, 2, dtype=torch.cfloat),), io.BytesIO(), dynamo=False)
    # a value ONNX cannot express, as PyTorch's exporter says of it (its own SymbolicValueError)
    with pytest.raises(exporter.errors.SymbolicValueError, match="output 'output' is a torch.complex64 tensor"):
        _export(lambda model, x: torch.view_as_complex(x), torch.randn(3, 2))


def test_index_reduce_mean_raises():
    """index_reduce 'mean' divides by counts that no ONNX scatter gives (and torch's integer mean rounds down)."""
    with pytest.raises(UnsupportedOperatorError, match="index_reduce 'mean' has no exact ONNX form"):
        _export(lambda model, x, i, s: x.index_reduce(0, i, s, "mean"), torch.randn(4, 2), torch.tensor([0, 0]),
                torch.randn(2, 2), opset=20)


def test_stft_read_other_than_through_view_as_real_raises():
    """ONNX has no complex numbers: stft's complex result exports only as view_as_real's real and imaginary parts."""
    with pytest.raises(UnsupportedOperatorError, match="exports only through torch.view_as_real"):
        _export(lambda model, x: torch.stft(x, 8, window=torch.hann_window(8), return_complex=True).abs(),
                torch.randn(2, 32), opset=17)


def test_stft_below_opset_17_names_it():
    with pytest.raises(UnsupportedOperatorError, match="needs opset >= 17"):
        _export(lambda model, x: torch.view_as_real(torch.stft(x, 8, window=torch.hann_window(8), return_complex=True)),
                torch.randn(2, 32), opset=16)
