"""The fake SDPA: its time on the virtual GPU, the host's cost of a direct call, and the
first calls' host time (cuDNN's plan build per shape, FlashAttention's module loading)."""
from .. import Tensor, cuda
from .attention import SDPBackend, _FORCED

RATE = {SDPBackend.CUDNN_ATTENTION: 600e12, SDPBackend.FLASH_ATTENTION: 350e12}
_SEEN = set()


def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None):
    backend = _FORCED[0] if _FORCED[0] is not None else SDPBackend.CUDNN_ATTENTION
    b, h, s, d = q.shape
    flops = 4.0 * b * h * s * s * d / (2 if is_causal else 1)
    gpu_us = max(flops / RATE.get(backend, 300e12) * 1e6, 5.0)
    first = (backend, q.shape, q.dtype.name) if backend == SDPBackend.CUDNN_ATTENTION else backend
    if cuda._CAPTURE:
        cuda._CAPTURE[-1]._nodes.append(gpu_us)
    else:
        host_us = 40.0
        if first not in _SEEN:
            host_us += 30_000.0
        cuda._T[0] += max(gpu_us, host_us)
    _SEEN.add(first)
    return Tensor(q.shape, q.dtype)
