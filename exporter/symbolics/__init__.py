"""The op library: importing this package registers every built-in symbolic, one module per op family."""

from exporter.symbolics import (  # noqa: F401
    activations,  # noqa: F401,E402
    attention,  # noqa: F401,E402
    casting,  # noqa: F401,E402
    comparison,  # noqa: F401,E402
    control_flow,  # noqa: F401,E402
    distance,  # noqa: F401,E402
    elementwise,
    indexing,  # noqa: F401,E402
    inplace,  # noqa: F401,E402
    linalg,  # noqa: F401,E402
    losses,  # noqa: F401,E402
    nn,
    normalization,  # noqa: F401,E402
    pooling,
    prim,
    quantized,  # noqa: F401,E402
    quantized_ops,  # noqa: F401,E402
    random,  # noqa: F401,E402
    reductions,  # noqa: F401,E402
    resize,  # noqa: F401,E402
    rnn,  # noqa: F401,E402
    sequence,  # noqa: F401,E402
    shape,
    sorting,  # noqa: F401,E402
    tensor_factories,  # noqa: F401,E402
    torchvision_ops,  # noqa: F401,E402
)
