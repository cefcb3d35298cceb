"""A stand-in for `torch`, which TorchServe's Python worker imports (to pickle tensors a
handler might return). The test handler returns bytes and lists only, so this is all it needs;
installing real torch would cost minutes and gigabytes for nothing the tests use."""


class Tensor:  # noqa: D101 - never instantiated; only isinstance() checks reach it
    pass


def save(obj, f):  # noqa: D103
    raise TypeError("the torch stand-in cannot save tensors")
