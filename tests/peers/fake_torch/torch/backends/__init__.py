from . import cudnn  # noqa: F401
