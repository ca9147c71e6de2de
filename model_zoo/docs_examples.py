"""The examples of the torch.onnx documentation (1.0 to 1.13), and the PyTorch examples it points to.

Each is written from the documentation's description (our own code): AlexNet with the documented input and
output names, ResNet, the 4-layer bidirectional LSTM with ``(h0, c0)`` and a dynamic sequence axis, the traced
loop (unrolled by tracing), the scripted loop (an ONNX Loop, verified at another loop count than the one
exported), the list-and-loop model (ONNX sequences, opset 11), in-place indexed assignment (opset 11), the
ImplicitCastType script module, and from pytorch/examples the super-resolution network, DCGAN's generator
and the word language model in its RNN_TANH, RNN_RELU, LSTM and GRU variants.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
import torchvision
from torch import nn

from model_zoo.conditioning import generator
from model_zoo.entry import ZooEntry

ALEXNET_INPUT_NAMES = ["actual_input_1"] + [f"learned_{i}" for i in range(16)]
# The quick tier's opsets: the lowest, the first with sequences/Resize/ScatterND, the default, the highest.
QUICK_OPSETS = (7, 11, 14, 16, 18, 20)


# -- the FAQ and "tracing vs scripting" examples ---------------------------------------------------------------
class LoopModel(nn.Module):
    """Traced: the loop runs ``y`` times during tracing and is unrolled into that many Adds."""

    def forward(self, x, y):
        for i in range(y):
            x = x + i
        return x


@torch.jit.script
def scripted_loop(x, y):
    for i in range(int(y)):
        x = x + i
    return x


class LoopModel2(nn.Module):
    """Mixed: a traced module calling a scripted function, whose loop becomes an ONNX Loop."""

    def forward(self, x, y):
        return scripted_loop(x, y)


class ListLoopModel(nn.Module):
    """Lists of tensors built in a loop (ONNX sequences). The documentation writes ``res = res.append(...)``,
    which TorchScript rejects (append returns None); the list is appended to in place, as intended."""

    def forward(self, x):
        res = []
        res1 = []
        arr = x.split(2, 0)
        res2 = torch.zeros(3, 4, dtype=torch.long)
        for i in range(len(arr)):
            res.append(arr[i].sum(0, False))
            res1.append(arr[-1 - i].sum(0, False))
            res2 += 1
        return torch.stack(res), torch.stack(res1), res2


class InPlaceIndexedAssignment(nn.Module):
    def forward(self, data, new_data):
        data[1] = new_data
        return data


class ImplicitCastType(nn.Module):
    """Scripted: the exporter must give the scalars 2 and 3 the dtype of ``x`` (float), not int64."""

    def forward(self, x):
        y = x + 2
        return y + 3


# -- pytorch/examples ----------------------------------------------------------------------------------------
class SuperResolutionNet(nn.Module):
    """The super-resolution network of the ONNX export tutorial (sub-pixel convolution, upscale factor 3)."""

    def __init__(self, upscale_factor: int = 3):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(32, upscale_factor**2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))


class DCGANGenerator(nn.Module):
    """DCGAN's generator: a latent vector (nz x 1 x 1) up to a 64 x 64 image through transposed convolutions."""

    def __init__(self, nz: int = 100, ngf: int = 64, nc: int = 3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class RNNModel(nn.Module):
    """The word language model: embedding, a recurrent stack (RNN_TANH, RNN_RELU, LSTM or GRU), a decoder."""

    def __init__(self, rnn_type: str, ntoken: int, ninp: int, nhid: int, nlayers: int, dropout: float = 0.5):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ("LSTM", "GRU"):
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden


# -- entries -------------------------------------------------------------------------------------------------
def _randn(*shape):
    return lambda variant, seed: (torch.randn(*shape, generator=generator(seed)),)


def _lstm_inputs(variant: int, seed: int) -> tuple:
    g = generator(seed)
    sequence = (5, 7)[variant]
    return (torch.randn(sequence, 3, 10, generator=g),
            (torch.randn(8, 3, 20, generator=g), torch.randn(8, 3, 20, generator=g)))


def _loop_inputs(count: int):
    def make(variant: int, seed: int) -> tuple:
        return (torch.randint(-10, 10, (2, 3), generator=generator(seed)), torch.tensor(count, dtype=torch.long))

    return make


def _assignment_inputs(variant: int, seed: int) -> tuple:
    g = generator(seed)
    width = (4, 6)[variant]
    return torch.randn(3, width, generator=g), torch.randn(width, generator=g)


_WORD_LM = dict(ntoken=50, ninp=16, nhid=16, nlayers=2)


def _word_lm_inputs(rnn_type: str):
    def make(variant: int, seed: int) -> tuple:
        g = generator(seed)
        sequence, batch = (6, 9)[variant], 2
        tokens = torch.randint(0, _WORD_LM["ntoken"], (sequence, batch), generator=g)
        shape = (_WORD_LM["nlayers"], batch, _WORD_LM["nhid"])
        hidden = torch.randn(*shape, generator=g)
        if rnn_type == "LSTM":
            return tokens, (hidden, torch.randn(*shape, generator=g))
        return tokens, hidden

    return make


def _word_lm(rnn_type: str) -> ZooEntry:
    hidden_names = ["h0", "c0"] if rnn_type == "LSTM" else ["h0"]
    out_hidden = ["hn", "cn"] if rnn_type == "LSTM" else ["hn"]
    return ZooEntry(
        name=f"word_language_model_{rnn_type.lower()}", kind="example", family="docs",
        build=functools.partial(RNNModel, rnn_type, **_WORD_LM),
        inputs=_word_lm_inputs(rnn_type),
        input_names=["tokens", *hidden_names], output_names=["log_probs", *out_hidden],
        dynamic_axes={"tokens": {0: "sequence"}, "log_probs": {0: "sequence_x_batch"}},
        quick_opsets=QUICK_OPSETS,
    )


def _scripted(cls):
    return lambda: torch.jit.script(cls())


def docs_entries() -> list[ZooEntry]:
    """The documentation's examples, each an entry of family ``docs``."""
    return [
        ZooEntry(
            name="alexnet_docs", kind="example", family="docs",
            build=functools.partial(torchvision.models.alexnet, weights=None),
            inputs=lambda variant, seed: (torch.randn((10, 4)[variant], 3, 224, 224, generator=generator(seed)),),
            input_names=ALEXNET_INPUT_NAMES, output_names=["output1"],
            dynamic_axes={"actual_input_1": {0: "batch"}, "output1": {0: "batch"}},
            quick_opsets=(14,), notes="the documentation's AlexNet: batch 10, inputs actual_input_1 and learned_0..15",
        ),
        ZooEntry(
            name="resnet18_docs", kind="example", family="docs",
            build=functools.partial(torchvision.models.resnet18, weights=None),
            inputs=lambda variant, seed: (torch.randn((1, 4)[variant], 3, 224, 224, generator=generator(seed)),),
            calibration_inputs=lambda seed: (torch.randn(4, 3, 224, 224, generator=generator(seed)),),
            input_names=["input"], output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, quick_opsets=(9, 16, 18, 20),
        ),
        ZooEntry(
            name="lstm_bidirectional_4layer", kind="example", family="docs",
            build=lambda: nn.LSTM(10, 20, num_layers=4, bidirectional=True),
            inputs=_lstm_inputs,
            input_names=["input", "h0", "c0"], output_names=["output", "hn", "cn"],
            dynamic_axes={"input": {0: "sequence"}, "output": {0: "sequence"}}, quick_opsets=QUICK_OPSETS,
        ),
        ZooEntry(
            name="loop_traced", kind="example", family="docs", build=LoopModel, inputs=_loop_inputs(5),
            quick_opsets=QUICK_OPSETS, notes="tracing unrolls the loop: the model is only valid for the traced count (5)",
        ),
        ZooEntry(
            name="loop_scripted", kind="example", family="docs", build=LoopModel2, inputs=_loop_inputs(5),
            input_names=["input_data", "loop_range"], extra_checks=[lambda: _loop_inputs(9)(0, 7)],
            quick_opsets=QUICK_OPSETS, notes="exported with loop count 5, verified at 9 (an ONNX Loop, not unrolled)",
        ),
        ZooEntry(
            name="list_loop", kind="example", family="docs", build=_scripted(ListLoopModel),
            inputs=lambda variant, seed: (torch.randn(16, generator=generator(seed)),),
            min_opset=13, quick_opsets=QUICK_OPSETS,
            min_opset_reason="the list grows inside a loop: Loop carries sequences from opset 13 (Loop-11 carries "
                             "tensors only; the docs' opset 11 relies on ONNX Runtime accepting it, which it does not)",
        ),
        ZooEntry(
            name="inplace_indexed_assignment", kind="example", family="docs", build=InPlaceIndexedAssignment,
            inputs=_assignment_inputs, input_names=["data", "new_data"],
            dynamic_axes={"data": {1: "width"}, "new_data": {0: "width"}},
            min_opset=11, min_opset_reason="assigning to an indexed slice needs ScatterND (opset 11)", quick_opsets=QUICK_OPSETS,
        ),
        ZooEntry(
            name="implicit_cast_type", kind="example", family="docs", build=_scripted(ImplicitCastType),
            inputs=lambda variant, seed: (torch.randn((1, 3)[variant], generator=generator(seed)),),
            dynamic_axes={"x": {0: "n"}}, input_names=["x"], quick_opsets=QUICK_OPSETS,
        ),
        ZooEntry(
            name="super_resolution", kind="example", family="docs", build=SuperResolutionNet,
            inputs=lambda variant, seed: (torch.rand((1, 2)[variant], 1, 224, 224, generator=generator(seed)),),
            input_names=["input"], output_names=["output"],
            dynamic_axes={"input": {0: "batch_size"}, "output": {0: "batch_size"}}, quick_opsets=QUICK_OPSETS,
        ),
        ZooEntry(
            name="dcgan_generator", kind="example", family="docs", build=DCGANGenerator,
            inputs=_randn_batch(100), calibration_inputs=lambda seed: (torch.randn(8, 100, 1, 1, generator=generator(seed)),),
            input_names=["z"], output_names=["image"],
            dynamic_axes={"z": {0: "batch"}, "image": {0: "batch"}}, quick_opsets=QUICK_OPSETS,
        ),
        *[_word_lm(kind) for kind in ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")],
    ]


def _randn_batch(nz: int):
    return lambda variant, seed: (torch.randn((2, 3)[variant], nz, 1, 1, generator=generator(seed)),)
