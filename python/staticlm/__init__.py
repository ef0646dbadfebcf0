"""staticlm: Python bindings over staticlm's C API (libstaticlm.so.1, via ctypes).

    import staticlm
    m = staticlm.Model("gemma-3-270m-q4_k_m.gguf")
    print(m.generate("The ocean is", n_predict=16, temperature=0))
    for piece in m.stream("Once upon a time", n_predict=64):
        print(piece, end="", flush=True)

Model (immutable, shareable between threads), Session (a KV cache: prefill /
append / decode / rewind with logits as NumPy arrays), generate / stream /
chat, Sampler and Detokenizer for custom loops, and exceptions carrying the
library's error message and status name. python/README.md has the details.
"""

from __future__ import annotations

from ._errors import (AbortedError, BusyError, CapacityError, ConfigError, FormatError, InputError, InternalError,
                      IoError, ModelError, StaticlmError, Status, UnsupportedError)
from ._constrain import Constraint
from ._lib import library_path, lib as _clib
from ._model import Detokenizer, Model, Sampler, weights_names
from ._session import Chat, Session, TextStream
from ._types import Generation, Message, StopReason

__version__: str = _clib.slm_version().decode()
API_VERSION: int = int(_clib.slm_api_version())


def max_threads() -> int:
    """The largest thread count accepted: 4 x the CPUs this process may run on."""
    return int(_clib.slm_max_threads())


# Public names read as staticlm.X in reprs and tracebacks.
for _cls in (AbortedError, BusyError, CapacityError, ConfigError, FormatError, InputError, InternalError, IoError,
             ModelError, StaticlmError, Status, UnsupportedError, Constraint, Detokenizer, Model, Sampler, Chat,
             Session, TextStream, Generation, StopReason):
    _cls.__module__ = __name__
del _cls

__all__ = [
    "AbortedError", "BusyError", "CapacityError", "Chat", "ConfigError", "Constraint", "Detokenizer", "FormatError", "Generation",
    "InputError", "InternalError", "IoError", "Message", "Model", "ModelError", "Sampler", "Session",
    "StaticlmError", "Status", "StopReason", "TextStream", "UnsupportedError", "API_VERSION", "library_path",
    "max_threads", "weights_names", "__version__",
]
