"""Cases of ``exporter/symbolics/advanced_indexing.py``: ``x[indices]`` read and written with tensor indices and bool
masks (``aten::index``, ``aten::index_put``)."""

from __future__ import annotations

import torch

from opcases import OpCase, random_tensor
from opcases.indexing import _idx, _mask, _perm


def _masked_values(*shape):
    """(x, mask, one value per True entry of the mask), int64."""
    generator = torch.Generator().manual_seed(sum(shape))
    mask = torch.rand(*shape, generator=generator) > 0.5
    values = torch.randint(-5, 5, (int(mask.sum()),), generator=generator)
    return torch.randint(-5, 5, shape, generator=generator), mask, values


def _put_columns(x, i, v):
    """``x[:, i] = v`` out of place: index_put with a leading None index and a broadcast value."""
    return torch.ops.aten.index_put(x, [None, i], v)


CASES = [
    # aten::index
    OpCase("index", lambda k: (random_tensor(5, 3 + k), _idx(5, 4)), sample="tensor", fn=lambda x, i: x[i]),
    OpCase("index", lambda k: (random_tensor(2 + k, 5, 3), _idx(5, 2, 2)), sample="tensor_dim1", fn=lambda x, i: x[:, i]),
    OpCase("index", lambda k: (random_tensor(5, 2 + k), torch.tensor([-1, 0, -5, 2])), sample="negative_single",
           fn=lambda x, i: x[i]),
    OpCase("index", lambda k: (random_tensor(5, 2 + k, dtype=torch.bool), torch.tensor([[1, 2], [0, 0]], dtype=torch.int32)),
           sample="bool_data_int32_index", fn=lambda x, i: x[i]),
    OpCase("index", lambda k: (random_tensor(4, 5, 3 + k), _idx(4, 3), _idx(5, 3)), sample="two_tensors", fn=lambda x, i, j: x[i, j]),
    OpCase("index", lambda k: (random_tensor(4, 2 + k, 5), _idx(4, 3), _idx(5, 1)), sample="separated",
           fn=lambda x, i, j: x[i, :, j]),
    OpCase("index", lambda k: (random_tensor(4, 5), torch.tensor([-1, 0, -4])), sample="negative_indices",
           fn=lambda x, i: x[i, i + 1]),
    OpCase("index", lambda k: (random_tensor(3 + k, 4), _mask(3 + k, 4)), sample="mask", min_opset=9, fn=lambda x, m: x[m]),
    OpCase("index", lambda k: (random_tensor(2 + k, 5, dtype=torch.int64), _mask(5)), sample="mask_dim1", min_opset=9,
           fn=lambda x, m: x[:, m]),
    OpCase("index", lambda k: (random_tensor(3, 4, 2), _mask(3, 4), _idx(2, 1)), sample="mask_and_tensor", min_opset=9,
           fn=lambda x, m, i: x[m, i]),
    # index_put
    OpCase("index_put", lambda k: (random_tensor(3 + k, 4), _mask(3 + k, 4)), sample="mask_scalar", min_opset=9,
           fn=lambda x, m: x.index_put((m,), torch.tensor(2.5))),
    OpCase("index_put", lambda k: (random_tensor(3 + k, 4), _mask(3 + k)), sample="mask_rows_accumulate", min_opset=9,
           fn=lambda x, m: x.index_put((m,), torch.tensor(1.0), accumulate=True)),
    OpCase("index_put", lambda k: (random_tensor(5, 3 + k), _perm(5, 3), random_tensor(3, 3 + k)), sample="rows", min_opset=11,
           fn=lambda x, i, v: x.index_put((i,), v)),
    OpCase("index_put", lambda k: (random_tensor(2 + k, 5), _perm(5, 2), random_tensor(2)), sample="dim1_broadcast", min_opset=11,
           fn=lambda x, i, v: _put_columns(x, i, v)),
    OpCase("index_put", lambda k: (random_tensor(4, 5, 2 + k), _perm(4, 3), torch.tensor([0, 4, 1]), random_tensor(3, 2 + k)), sample="two_tensors",
           min_opset=11, fn=lambda x, i, j, v: x.index_put((i, j), v)),
    OpCase("index_put", lambda k: (random_tensor(5, 3 + k), _idx(5, 6), random_tensor(6, 3 + k)), sample="accumulate_duplicates", min_opset=11,
           fn=lambda x, i, v: x.index_put((i,), v, accumulate=True)),
    OpCase("index_put", lambda k: _masked_values(4 + k, 3), sample="mask_values", min_opset=11,
           fn=lambda x, m, v: x.index_put((m,), v)),
]
