"""The op library: importing this package registers every built-in symbolic, one module per op family."""

from exporter.symbolics import (  # noqa: F401
    elementwise,
    nn,
    pooling,
    prim,
    shape,
)
from exporter.symbolics import resize  # noqa: F401,E402
from exporter.symbolics import reductions  # noqa: F401,E402
from exporter.symbolics import indexing  # noqa: F401,E402
from exporter.symbolics import tensor_factories  # noqa: F401,E402
from exporter.symbolics import control_flow  # noqa: F401,E402
from exporter.symbolics import sequence  # noqa: F401,E402
from exporter.symbolics import linalg  # noqa: F401,E402
from exporter.symbolics import inplace  # noqa: F401,E402
from exporter.symbolics import normalization  # noqa: F401,E402
from exporter.symbolics import rnn  # noqa: F401,E402
from exporter.symbolics import sorting  # noqa: F401,E402
from exporter.symbolics import comparison  # noqa: F401,E402
from exporter.symbolics import activations  # noqa: F401,E402
from exporter.symbolics import casting  # noqa: F401,E402
from exporter.symbolics import torchvision_ops  # noqa: F401,E402
from exporter.symbolics import attention  # noqa: F401,E402
from exporter.symbolics import losses  # noqa: F401,E402
from exporter.symbolics import distance  # noqa: F401,E402
from exporter.symbolics import random  # noqa: F401,E402
from exporter.symbolics import quantized  # noqa: F401,E402
from exporter.symbolics import quantized_ops  # noqa: F401,E402
