"""Constraint: a JSON Schema or a GBNF grammar compiled once for a model's
vocabulary (C API 3: slm_constraint_json_schema / slm_constraint_grammar), for
generate(json_schema=...) / generate(grammar=...) and batch() requests. The
schema subset and the output form (compact JSON, members in the schema's
order) are docs/BATCH.md's."""

from __future__ import annotations

import json
from ctypes import byref, c_void_p
from typing import TYPE_CHECKING, Any, Mapping

from . import _lib
from ._handle import CHandle
from ._errors import check

if TYPE_CHECKING:
    from ._model import Model


def schema_text(schema: object) -> str:
    """A schema as the library takes it: a dict (or other JSON value) is dumped as
    compact JSON in its own key order (properties keep their order); a str is
    used as it is."""
    if isinstance(schema, str):
        return schema
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class Constraint(CHandle):
    """A compiled constraint. Give exactly one of json_schema (a dict or its JSON
    text) and grammar (GBNF text, root rule "root"). A schema or grammar the
    library cannot compile raises the StaticlmError subclass of its status
    (UnsupportedError naming the keyword and its path, FormatError for text
    that is not JSON, ...). Immutable and usable from several threads; close()
    frees it (requests that use it keep it alive)."""

    _what = "constraint"
    _free = "slm_constraint_free"

    def __init__(self, model: Model, *, json_schema: object = None, grammar: str | None = None) -> None:
        _lib.require(3, "constrained output (json_schema / grammar)")
        self._handle: int | None = None
        self._model = model  # the library refuses it on another model's sessions
        if (json_schema is None) == (grammar is None):
            raise TypeError("give json_schema or grammar (exactly one)")
        if grammar is not None and not isinstance(grammar, str):
            raise TypeError(f"grammar must be str, got {type(grammar).__name__}")
        self.kind = "json_schema" if json_schema is not None else "grammar"
        self.text = schema_text(json_schema) if json_schema is not None else str(grammar)
        data = self.text.encode("utf-8", "surrogatepass")
        handle = c_void_p()
        fn = _lib.lib.slm_constraint_json_schema if json_schema is not None else _lib.lib.slm_constraint_grammar
        check(fn(model.handle, data, len(data), byref(handle)))
        self._handle = handle.value

    def __repr__(self) -> str:
        shown = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        return f"Constraint({self.kind}={shown!r})"


def pop_constraint(model: Model, options: dict[str, Any]) -> Constraint | None:
    """Takes json_schema= / grammar= / constraint= out of generate()'s options:
    the Constraint to use (compiled here for a schema or grammar), or None."""
    given = {k: options.pop(k) for k in ("json_schema", "grammar", "constraint") if options.get(k) is not None}
    for k in ("json_schema", "grammar", "constraint"):
        options.pop(k, None)
    if not given:
        return None
    if len(given) > 1:
        raise TypeError(f"give one of json_schema, grammar and constraint, not {' and '.join(sorted(given))}")
    if "constraint" in given:
        c = given["constraint"]
        if not isinstance(c, Constraint):
            raise TypeError(f"constraint must be a staticlm.Constraint, got {type(c).__name__}")
        return c
    if "json_schema" in given:
        if not isinstance(given["json_schema"], (Mapping, str)):
            raise TypeError(f"json_schema must be a dict or its JSON text, got {type(given['json_schema']).__name__}")
        return Constraint(model, json_schema=given["json_schema"])
    return Constraint(model, grammar=given["grammar"])
