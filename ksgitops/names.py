"""Names as the Kubernetes API server checks them, and the file and folder names derived from them.

Rules (Kubernetes apimachinery `pkg/api/validation` and `pkg/api/validation/path`):
- DNS-1123 label (Namespace names, space folders): at most 63 of [a-z0-9-], alphanumeric ends;
- DNS-1035 label (Service names): the same, starting with a letter;
- DNS-1123 subdomain (most built-in kinds): labels joined by '.', at most 253 characters;
- path segment (RBAC kinds and every custom resource, KubeStellar's kinds included, as
  apiextensions-apiserver validates them): anything but '.', '..', '/' and '%'.

An object's name becomes a file name (`<name>.yaml` in mailboxes, status folders, SPS folders) by
`file_stem`: a name that was always accepted keeps its spelling; any other gets a readable,
portable spelling plus a digest of the exact name, so no name can ever make a path leave its
folder, collide with another name (on case-insensitive file systems too) or exceed a file
name's length limit.
"""
from __future__ import annotations

import functools
import hashlib
import re

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_NOT_PORTABLE = re.compile(r"[^a-z0-9.-]")

FILE_STEM_MAX = 200  # longer names are shortened: <name>.yaml stays far below 255 bytes
DIGEST_MARK = "~"  # never in a kept name (a DNS-1123 subdomain), so encoded and kept never collide


def dns1123_label_error(name: str) -> str | None:
    """None when `name` is a DNS-1123 label (<= 63 chars, [a-z0-9-], alphanumeric ends)."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > 63:
        return f"{name!r} is longer than 63 characters"
    if not _LABEL.match(name):
        return f"{name!r} is not a DNS-1123 label (lowercase letters, digits and '-', alphanumeric at both ends)"
    return None


def dns1035_label_error(name: str) -> str | None:
    """None when `name` is a DNS-1035 label: a DNS-1123 label that starts with a letter."""
    error = dns1123_label_error(name)
    if error:
        return error.replace("DNS-1123 label", "DNS-1035 label")
    if not _DNS1035.match(name):
        return f"{name!r} is not a DNS-1035 label (it must start with a lowercase letter)"
    return None


def is_dns1123_subdomain(text: str) -> bool:
    """Lowercase letters, digits and '-' in labels joined by '.' (no length rule)."""
    return _SUBDOMAIN.match(text) is not None


def dns1123_subdomain_error(name: str) -> str | None:
    """None when `name` is a DNS-1123 subdomain (<= 253 chars, labels joined by '.')."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > 253:
        return f"{name!r} is longer than 253 characters"
    if not is_dns1123_subdomain(name):
        return f"{name!r} is not a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')"
    return None


def path_segment_name_error(name: str) -> str | None:
    """None when `name` may be a path segment of an API URL (apimachinery path.IsValidPathSegmentName)."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if name in (".", ".."):
        return f"{name!r} may not be '.' or '..'"
    for forbidden in ("/", "%"):
        if forbidden in name:
            return f"{_short(name)} may not contain '{forbidden}'"
    return None


def _short(name: str) -> str:
    return repr(name) if len(name) <= 80 else repr(name[:80]) + "..."


def name_digest(name: str, size: int = 8) -> str:
    """A stable digest of a name (hex, `2 * size` characters)."""
    return hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=size).hexdigest()


def file_stem(name: str) -> str:
    """The file name (without extension) standing for an object name; see the module doc.

    Kept as it is: DNS-1123 subdomains of at most FILE_STEM_MAX characters. Any other name:
    lowercased, each character outside [a-z0-9.-] as '_', at most 100 characters, a leading '.'
    or '-' as '_', then '~' and 16 hex digits of the exact name's digest."""
    if len(name) <= FILE_STEM_MAX and _SUBDOMAIN.match(name):
        return name
    readable = _NOT_PORTABLE.sub("_", name.lower())[:100]
    if readable[:1] in (".", "-"):
        readable = "_" + readable[1:]
    return f"{readable}{DIGEST_MARK}{name_digest(name)}"


def printable(text: str) -> str:
    """`text` safe to show on one line of a terminal or a page: every character that is not
    printable (control characters such as ESC and newline, bidirectional overrides, other format
    and separator characters but the plain space) as its Python escape. Names of RBAC kinds and
    custom resources may hold any of them, and a terminal would obey an escape sequence."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def _escaped(c: str) -> str:
    """A character as its Python escape; a byte a file name held that is not UTF-8 (which `os`
    keeps as a lone surrogate) as `\\xNN`, the byte itself, as `not_utf8` shows it."""
    if "\udc80" <= c <= "\udcff":
        return f"\\x{ord(c) - 0xDC00:02x}"
    return c.encode("unicode_escape").decode("ascii")


def not_utf8(path: str) -> str | None:
    """The part of `path` up to its first name that is not UTF-8 (as the file system gave it,
    `os` keeps such bytes as lone surrogates), shown with those bytes as `\\xNN`; None for a
    path that is UTF-8 throughout."""
    try:
        path.encode()
        return None
    except UnicodeEncodeError:
        pass
    parts = path.split("/")
    for at, part in enumerate(parts):
        try:
            part.encode()
        except UnicodeEncodeError:
            return "/".join([*parts[:at], printable(part)])
    return printable(path)  # not reached: some name holds what does not encode


# what reconcile owns in a mailbox (the rest of the folder is kept as it is)
MAILBOX_PARTS = ("space.yaml", "kustomization.yaml", "syncerconfig.yaml", "objects", "patches")
MAILBOX_INFIX = "-mb-"
MAILBOX_MAX = 63
_MAILBOX_DIGEST = 10  # hex digits


@functools.lru_cache(maxsize=1 << 16)  # asked for per WEC and per destination, many times a run
def mailbox_name(inventory_space: str, sync_target: str) -> str:
    """The mailbox space of a SyncTarget: `<space>-mb-<name>` when that is a DNS-1123 label (so
    mailboxes that existed keep their name), else derived: the SyncTarget name lowercased with
    every character outside [a-z0-9-] as '-', the whole cut to 52 characters (no '-' at the
    end), then '-' and 10 hex digits of the digest of `<space>/<name>`. Stable, at most 63
    characters; validation reports the (unlikely) case of two SyncTargets sharing one."""
    plain = f"{inventory_space}{MAILBOX_INFIX}{sync_target}"
    if dns1123_label_error(plain) is None:
        return plain
    readable = re.sub(r"[^a-z0-9-]", "-", plain.lower())
    readable = readable[: MAILBOX_MAX - _MAILBOX_DIGEST - 1].rstrip("-")
    digest = name_digest(f"{inventory_space}/{sync_target}", 8)[:_MAILBOX_DIGEST]
    return f"{readable}-{digest}"


@functools.lru_cache(maxsize=1 << 17)  # called per object per WEC: the parts are few and repeat
def rel_path(group: str, resource: str, namespace: str, name: str) -> str:
    """`<group|core>/<resource>/<namespace|_cluster>/<name>`: the path of an object in a mailbox
    (objects/, patches/, reported/, upsynced/) and in a status folder. Each part is a file name
    by `file_stem` (unchanged for valid groups, resources, namespaces and ordinary names), so no
    name can make the path leave its folder or overflow a file name."""
    parts = (file_stem(group) if group else "core", file_stem(resource),
             file_stem(namespace) if namespace else "_cluster", file_stem(name))
    return "/".join(parts)
