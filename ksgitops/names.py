"""Validation of names that become paths or labels (DNS-1123), so no path ever escapes the repo."""
from __future__ import annotations

import re

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def dns1123_label_error(name: str) -> str | None:
    """None when `name` is a DNS-1123 label (<= 63 chars, [a-z0-9-], alphanumeric ends)."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > 63:
        return f"{name!r} is longer than 63 characters"
    if not _LABEL.match(name):
        return f"{name!r} is not a DNS-1123 label (lowercase letters, digits and '-', alphanumeric at both ends)"
    return None


def dns1123_subdomain_error(name: str) -> str | None:
    """None when `name` is a DNS-1123 subdomain (<= 253 chars, labels joined by '.')."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > 253:
        return f"{name!r} is longer than 253 characters"
    if not _SUBDOMAIN.match(name):
        return f"{name!r} is not a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')"
    return None
