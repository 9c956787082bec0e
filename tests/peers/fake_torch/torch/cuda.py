"""The fake torch.cuda: a virtual GPU clock (µs) that graphs, events and calls move."""
import contextlib

_T = [0.0]          # the GPU's clock, µs
_CAPTURE = []       # graphs being captured (the innermost last)
_LEAD = 0.5         # µs per thousand cycles of _sleep (2 GHz)


def _gpu_work(us):
    if _CAPTURE:
        _CAPTURE[-1]._nodes.append(us)
    else:
        _T[0] += us


def is_available():
    return True


def get_device_name(i=0):
    return "Fake GPU"


def synchronize():
    pass


def empty_cache():
    pass


def mem_get_info():
    return (64 << 30, 80 << 30)


def _sleep(cycles):
    _gpu_work(cycles / 2000.0)


class Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        if _CAPTURE:
            raise RuntimeError("an event recorded inside a capture")
        self.t = _T[0]

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        if self.t is None or end.t is None:
            raise RuntimeError("an event that was not recorded")
        return (end.t - self.t) / 1000.0


class Stream:
    def wait_stream(self, other):
        pass

    def synchronize(self):
        pass


_CURRENT = Stream()


def current_stream():
    return _CURRENT


@contextlib.contextmanager
def stream(s):
    yield


class CUDAGraph:
    def __init__(self):
        self._nodes = []
        self._ready = False

    def replay(self):
        if not self._ready:
            raise RuntimeError("replay of a graph that was not captured")
        _T[0] += sum(self._nodes) + 3.0


@contextlib.contextmanager
def graph(g, pool=None, stream=None):
    _CAPTURE.append(g)
    try:
        yield
    finally:
        _CAPTURE.pop()
    g._ready = True
