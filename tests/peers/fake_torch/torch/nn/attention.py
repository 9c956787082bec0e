import contextlib
import enum


class SDPBackend(enum.IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3


_FORCED = [None]


@contextlib.contextmanager
def sdpa_kernel(backends):
    old = _FORCED[0]
    _FORCED[0] = backends
    try:
        yield
    finally:
        _FORCED[0] = old
