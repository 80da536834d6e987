"""API errors and the Status documents they answer with."""
from __future__ import annotations

from typing import Any

from .resources import ResourceType


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> dict:
        doc = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            doc["details"] = self.details
        return doc


def name_of(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def details(rt: ResourceType, name: str, **extra: Any) -> dict:
    return {"name": name, "group": rt.group, "kind": rt.plural, **extra}


def not_found(rt: ResourceType, name: str) -> ApiError:
    resource = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
    return ApiError(404, "NotFound", f'{resource} "{name}" not found', details(rt, name))


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)

