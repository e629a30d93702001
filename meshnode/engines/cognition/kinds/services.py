"""The types of the commands over stored scripts and the outside services and accounts the agent knows."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import LIMIT, LONG, TAGS, kind, named
from meshnode.base.container.schema import integer, one_of, text

_ID = {"id": (integer(0), True)}

TYPES = (
    kind("script_list", "stored scripts (script_read shows the code)", LIMIT, mutating=False, closed=True),
    kind("script_add", "store a script (only stored; running one goes through the action gate)",
         {"name": (named(128), True), "version": (named(32), True), "code": (text(LONG), True),
          "language": (one_of("python", "shell", "text"), True), "description": (text(4096), False),
          "tags": (TAGS, False)}, closed=True),
    kind("script_read", "a stored script with its code", _ID, mutating=False, closed=True),
    kind("script_delete", "delete a stored script", _ID, closed=True),
    kind("service_list", "external services the agent knows", LIMIT, mutating=False, closed=True),
    kind("service_add", "record an external service (http or https)",
         {"name": (named(128), True), "type": (named(64), True), "base_url": (text(2048), True),
          "description": (text(4096), False)}, closed=True),
    kind("service_delete", "delete an external service and its accounts", _ID, closed=True),
    kind("account_list", "accounts at external services (passwords are never shown)",
         {"service_id": (integer(0), False), **LIMIT}, mutating=False, closed=True),
    kind("account_add", "record an account at an external service",
         {"service_id": (integer(0), True), "login": (named(256), True), "password": (named(1024), True),
          "purpose": (text(1024), False)}, closed=True),
    kind("account_delete", "delete an account record", _ID, closed=True),
)
