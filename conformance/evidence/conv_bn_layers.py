"""EfficientNet-B7 (the zoo's calibrated model, input 0): every depthwise Conv2d (every Conv2d with --all) followed by a BatchNorm2d, on the conv's real
input. Against float64 conv->bn: PyTorch float32 conv->bn, ONNX Runtime Conv->BatchNormalization (unfused, ORT graph
optimizations off), ONNX Runtime Conv with the BatchNorm folded into its weights as the export's fuse_conv_batchnorm
folds it. Errors relative to each layer's output scale; medians and maxima over the layers."""
import sys
import warnings
from itertools import pairwise

import numpy as np
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

from conformance.prepared import WorkerState
from conformance.worker import configure_process

warnings.filterwarnings("ignore")
configure_process()
state = WorkerState('/tmp')
p = state.prepare(sys.argv[1])
model = p.model
pairs = []
mods = list(model.named_modules())
for (n1, m1), (_, m2) in pairwise(mods):
    if isinstance(m1, torch.nn.Conv2d) and isinstance(m2, torch.nn.BatchNorm2d) and (m1.groups > 1 or "--all" in sys.argv):
        pairs.append((n1, m1, m2))
inputs = {}
hooks = [conv.register_forward_pre_hook(lambda mod, a, name=name: inputs.__setitem__(name, a[0].detach().clone())) for name, conv, _ in pairs]
with torch.no_grad():
    model(*p.checks["input 0"])
for h in hooks:
    h.remove()
opts = ort.SessionOptions()
opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
opts.intra_op_num_threads = 1
def conv_node(conv, w, b, out):
    return helper.make_node("Conv", ["x", "w"] + (["b"] if b is not None else []), [out], group=conv.groups,
                            strides=list(conv.stride), pads=list(conv.padding) * 2, dilations=list(conv.dilation),
                            kernel_shape=list(conv.kernel_size))
def run(nodes, inits, x):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], ir_version=7)
    return ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
res = {"torch conv->bn": [], "ORT Conv->BatchNormalization": [], "ORT fused Conv": [], "fused weights, float64 conv": [], "ORT fused Conv, no bias, Add": []}
mean_res = {k: [] for k in res}
for name, conv, bn in pairs:
    x = inputs[name]
    with torch.no_grad():
        exact = torch.nn.functional.batch_norm(torch.nn.functional.conv2d(x.double(), conv.weight.double(), None, conv.stride, conv.padding, conv.dilation, conv.groups),
                                               bn.running_mean.double(), bn.running_var.double(), bn.weight.double(), bn.bias.double(), False, 0.0, bn.eps).numpy()
        t32 = bn(conv(x)).numpy()
    scale = np.abs(exact).max()
    w = conv.weight.detach().numpy()
    bnp = [t.detach().numpy() for t in (bn.weight, bn.bias, bn.running_mean, bn.running_var)]
    unf = run([conv_node(conv, w, None, "c"), helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["y"], epsilon=bn.eps)],
              [numpy_helper.from_array(w, "w")] + [numpy_helper.from_array(a, k) for a, k in zip(bnp, ("s", "bb", "m", "v"), strict=True)], x.numpy())
    factor = bnp[0].astype(np.float64) / np.sqrt(bnp[3].astype(np.float64) + bn.eps)
    fw = (w * factor.reshape(-1, 1, 1, 1)).astype(np.float32)
    fb = ((0 - bnp[2].astype(np.float64)) * factor + bnp[1]).astype(np.float32)
    fused = run([conv_node(conv, fw, fb, "y")], [numpy_helper.from_array(fw, "w"), numpy_helper.from_array(fb, "b")], x.numpy())
    f64 = (torch.nn.functional.conv2d(x.double(), torch.from_numpy(fw).double(), torch.from_numpy(fb).double(), conv.stride, conv.padding, conv.dilation, conv.groups)).numpy()
    nobias = run([conv_node(conv, fw, None, "c"), helper.make_node("Add", ["c", "b"], ["y"])],
                 [numpy_helper.from_array(fw, "w"), numpy_helper.from_array(fb.reshape(1, -1, 1, 1), "b")], x.numpy())
    for key, val in zip(res, (t32, unf, fused, f64, nobias), strict=True):
        res[key].append(np.abs(val.astype(np.float64) - exact).max() / scale)
        mean_res[key].append(np.abs(val.astype(np.float64) - exact).mean() / scale)
print(f"{len(pairs)} Conv2d+BatchNorm2d layers; max |result - float64| / layer scale:")
for key, v in res.items():
    print(f"  {key:32s} median {np.median(v):.3g}  mean {np.mean(v):.3g}  max {np.max(v):.3g}  mean-abs-error/scale averaged {np.mean(mean_res[key]):.3g}")
