"""A command's function named by module and name, imported when the command runs."""

from __future__ import annotations

import importlib
from typing import Any, Callable


class Command:
    """``meshnode.faces.cli.gate.cmd_drafts_list`` as a parser's ``func``: calling it imports the module."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def resolve(self) -> Callable[[Any], int | None]:
        return getattr(importlib.import_module(self.module), self.name)

    def __call__(self, args) -> int | None:
        return self.resolve()(args)

    def __repr__(self) -> str:
        return f"<command {self.module}.{self.name}>"


class Commands:
    """The commands of one module: ``Commands("meshnode.faces.cli.gate").cmd_drafts_list``."""

    def __init__(self, module: str):
        self._module = module

    def __getattr__(self, name: str) -> Command:
        if not name.startswith("cmd_"):
            raise AttributeError(name)
        return Command(self._module, name)
