"""Configurations: every key of ``foxhunt train`` (its --help, its INI files, the
``config`` of a checkpoint), set by name with the CLI's own checks (ranges, choices)."""

from __future__ import annotations

import ctypes
import json
import math
import os
from typing import Any, Iterator, Optional

from . import _lib
from ._lib import Handle, check, encode, err_buffer, lib, made, text


def _as_text(value: Any) -> str:
    """A Python value as the text a flag would carry."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return repr(value)  # the shortest text that reads back to the same double
    if isinstance(value, (bytes, os.PathLike)):
        return os.fsdecode(value)  # str(b"x") would be "b'x'"
    return str(value)


class Config(Handle):
    """A resolved foxhunt configuration.

    ``Config(horizon=128, synthetic_bars=5000)`` starts from ``foxhunt train``'s
    defaults; keys are the INI/JSON keys (``foxhunt train --help`` without the dashes,
    ``_`` for ``-``), optionally with their section (``"env.horizon"``). A bad key or
    value raises :class:`foxhunt.InputError` with the CLI's message.
    """

    _free = "fh_api_config_free"

    def __init__(self, _handle: Optional[int] = None, **values: Any) -> None:
        if _handle is None:
            err = err_buffer()
            _handle = made(lib().fh_api_config_new(err, _lib.ERR_CAP), err, "config")
        super().__init__(_handle)
        self.update(values)

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike[str]) -> "Config":
        """The configuration a checkpoint was trained with (its ``config`` metadata)."""
        err = err_buffer()
        h = lib().fh_api_config_from_checkpoint(encode(path, "path"), err, _lib.ERR_CAP)
        return cls(_handle=made(h, err, "config"))

    @classmethod
    def from_json(cls, text_: str) -> "Config":
        """A configuration from ``config.json`` text; absent keys keep their defaults."""
        err = err_buffer()
        h = lib().fh_api_config_from_json(encode(text_, "config JSON"), err, _lib.ERR_CAP)
        return cls(_handle=made(h, err, "config"))

    def copy(self, **values: Any) -> "Config":
        """An independent copy, with values set on it."""
        c = Config.from_json(self.to_json())
        c.update(values)
        return c

    def set(self, key: str, value: Any) -> None:
        """Sets one key (checked as the CLI checks ``--key value``)."""
        check(lib().fh_api_config_set(self.handle, encode(key, "configuration key"),
                                      encode(_as_text(value), f"{key} =")), self.handle)

    def update(self, values: dict[str, Any]) -> None:
        for k, v in values.items():
            self.set(k, v)

    def get(self, key: str) -> str:
        """One key's value, as text."""
        buf = ctypes.create_string_buffer(4096)
        check(lib().fh_api_config_get(self.handle, encode(key, "configuration key"), buf,
                                      len(buf)), self.handle)
        return buf.value.decode("utf-8")

    __getitem__ = get

    def __setitem__(self, key: str, value: Any) -> None:
        self.set(key, value)

    def to_json(self) -> str:
        """The resolved configuration as ``foxhunt train`` writes it (config.json)."""
        n = ctypes.c_size_t(0)
        lib().fh_api_config_to_json(self.handle, None, 0, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value + 1)
        check(lib().fh_api_config_to_json(self.handle, buf, len(buf), ctypes.byref(n)),
              self.handle)
        return buf.value.decode("utf-8")

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """``{"run": {...}, "ppo": {...}, "q": {...}, "env": {...}}``."""
        return json.loads(self.to_json())

    def validate(self) -> None:
        """The CLI's cross-field checks."""
        check(lib().fh_api_config_validate(self.handle), self.handle)

    def __repr__(self) -> str:
        return f"foxhunt.Config({self.to_json()})" if self._h else "foxhunt.Config(closed)"


def config_keys() -> Iterator[tuple[str, str, str]]:
    """Every configuration key: (section, key, help)."""
    L = lib()
    for i in range(L.fh_api_config_key_count()):
        yield (text(L.fh_api_config_key_section(i)), text(L.fh_api_config_key_name(i)),
               text(L.fh_api_config_key_help(i)))
