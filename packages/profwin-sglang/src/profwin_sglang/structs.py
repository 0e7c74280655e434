"""SGLang's ``ProfileReq`` in both of its shapes, built from one mapping of fields.

SGLang 0.5.16 moved its request structs to msgspec (PR #28688): ``ProfileReq`` became a
``kw_only`` ``msgspec.Struct`` whose kind is ``req_type``; before, it was a dataclass whose first
(positional) field was ``type`` (0.5.12). Fields also came and went (``profile_stages``,
``detailed_annotations``, ...). Every piece of profwin that builds or reads SGLang's struct goes
through here, so a struct is built with exactly the fields the running SGLang has: a field it
lacks is never sent (its constructor would refuse it; a server would ignore it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from profwin.plugin import checked

__all__ = ["build_profile_req", "request_fields"]


def request_fields(struct: type) -> tuple[str, ...]:
    """The field names of SGLang's ``ProfileReq`` class (msgspec struct or dataclass)."""
    names = getattr(struct, "__struct_fields__", None)
    if names is not None:
        return tuple(names)
    if dataclasses.is_dataclass(struct):
        return tuple(f.name for f in dataclasses.fields(struct))
    raise TypeError(f"{struct!r} is neither a msgspec struct nor a dataclass")


@checked
def build_profile_req(struct: type, kinds: Any, fields: Mapping[str, Any], *, start: bool = True) -> Any:
    """A ``ProfileReq`` (``struct``) of either shape: ``kinds`` is SGLang's ``ProfileReqType``;
    ``fields`` the request's fields by name, of which those the struct lacks are left out."""
    names = request_fields(struct)
    kind_field = "req_type" if "req_type" in names else "type"
    kind = kinds.START_PROFILE if start else kinds.STOP_PROFILE
    kept = {name: value for name, value in fields.items() if name in names and name != kind_field}
    return struct(**{kind_field: kind}, **kept)
