"""A fake torch for ci-gate's tests: shapes, dtypes and a virtual GPU clock, no values."""
import contextlib as _contextlib

__version__ = "0.0+fake"


class _Version:
    cuda = "13.0"


version = _Version()


class dtype:
    def __init__(self, name, size):
        self.name, self.itemsize = name, size

    def __repr__(self):
        return f"torch.{self.name}"


float16 = dtype("float16", 2)
bfloat16 = dtype("bfloat16", 2)
float32 = dtype("float32", 4)
uint8 = dtype("uint8", 1)


class device:
    def __init__(self, name):
        self.type = str(name)


class Generator:
    def __init__(self, device=None):
        self.seed = 0

    def manual_seed(self, s):
        self.seed = int(s)
        return self


def manual_seed(s):
    return Generator().manual_seed(s)


def _dims(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(int(x) for x in args[0])
    return tuple(int(x) for x in args)


class Tensor:
    def __init__(self, shape, dtype=float32, value=0):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.value = value

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def element_size(self):
        return self.dtype.itemsize

    def to(self, dtype):
        return Tensor(self.shape, dtype)

    def normal_(self, mean=0.0, std=1.0, generator=None):
        from . import cuda
        cuda._gpu_work(self.numel() * self.element_size() / 3e6)  # ~3 TB/s
        return self

    def fill_(self, v):
        return self

    def __getitem__(self, i):
        if not isinstance(i, int) or not 0 <= i < self.shape[0]:
            raise IndexError(i)
        return Tensor(self.shape[1:], self.dtype)

    def __int__(self):
        return int(self.value)


def randn(*args, generator=None, device=None, dtype=float32):
    return Tensor(_dims(args), dtype)


def empty(*args, dtype=float32, device=None):
    return Tensor(_dims(args), dtype)


def zeros(*args, dtype=float32, device=None):
    return Tensor(_dims(args), dtype)


def randint(low, high, size, generator=None, device=None):
    return Tensor(tuple(size), uint8, value=(low + high) // 2)


def _foreach_zero_(tensors):
    from . import cuda
    cuda._gpu_work(sum(t.numel() * t.element_size() for t in tensors) / 3e6)


def _fused_sdp_choice(q, k, v, is_causal=False):
    return 3  # CUDNN_ATTENTION


from . import cuda  # noqa: E402
from . import nn  # noqa: E402
from . import backends  # noqa: E402
