"""How CEL values become CombinedStatus values: KubeStellar's typed columns (Null, Bool, Number,
String, Array, Object), numbers as StatusCollectors aggregate them (ints exact, doubles summed
with fsum, decimal strings read as numbers), and the order rows sort in. Pure."""
from __future__ import annotations

import base64
import datetime as _dt
import json
import math
import re
from decimal import Decimal
from typing import Any, Iterable

_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT_TEXT = re.compile(r"[+-]?[0-9]+")


def cel_type(value: Any) -> str:
    if value is None:
        return "null"
    for kind, name in ((bool, "bool"), (int, "int"), (float, "double"), (str, "string"),
                       (bytes, "bytes"), (list, "list"), (dict, "map"),
                       (_dt.datetime, "timestamp"), (_dt.timedelta, "duration")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


MAX_NUMBER_TEXT = 400  # a number's text, beyond any double's (and within what int() reads)


def as_number(value: Any) -> tuple[int | float | None, str]:
    """A subject as a number, or (None, why not); null is skipped without a reason."""
    if value is None:
        return None, ""
    if isinstance(value, bool):
        return None, "is a bool, not a number"
    if isinstance(value, (int, float)):
        return value, ""
    if isinstance(value, str):
        text = value.strip()
        if len(text) > MAX_NUMBER_TEXT:
            return None, f"is a string of more than {MAX_NUMBER_TEXT} characters, not a number"
        if _INT_TEXT.fullmatch(text):
            return int(text), ""
        if _FLOAT_TEXT.fullmatch(text):
            return float(text), ""
        return None, "is a string that is not a number"
    return None, f"is a {cel_type(value)}, not a number"


# --- aggregates -----------------------------------------------------------------------------------

def aggregate(kind: str, count: int, numbers: list[int | float]) -> dict[str, Any]:
    if kind == "COUNT":
        return _number_value(count)
    if kind == "SUM":
        return _number_value(_sum(numbers))
    if kind == "AVG":
        return _number_value(_average(numbers) if numbers else math.nan)
    candidates = [n for n in numbers if not (isinstance(n, float) and math.isnan(n))]
    # ties (3 and 3.0, 0.0 and -0.0) are broken by the text, so that row order cannot matter
    if kind == "MIN":
        return _number_value(min(candidates, key=_tie_key) if candidates else math.inf)
    return _number_value(max(candidates, key=_tie_key) if candidates else -math.inf)


def _average(numbers: list[int | float]) -> int | float:
    total = _sum(numbers)
    try:
        return total / len(numbers)
    except OverflowError:  # an exact sum of integers whose mean no double holds: its sign
        return math.inf if total > 0 else -math.inf


def _tie_key(n: int | float) -> tuple[int | float, str]:
    return n, format_number(n)


def _sum(numbers: Iterable[int | float]) -> int | float:
    """Exact for ints; for doubles correctly rounded (math.fsum), so independent of order."""
    ints = 0
    floats: list[float] = []
    for n in numbers:
        if isinstance(n, float):
            floats.append(n)
        else:
            ints += n
    if not floats:
        return ints
    if any(math.isnan(f) for f in floats) or (math.inf in floats and -math.inf in floats):
        return math.nan
    if math.inf in floats or -math.inf in floats:
        return math.inf if math.inf in floats else -math.inf
    try:
        return math.fsum([*floats, float(ints)])
    except OverflowError:  # an intermediate or final overflow: the sign of the exact sum
        exact = sum((Decimal(f) for f in floats), Decimal(ints))
        return math.inf if exact > 0 else -math.inf


# --- output values -----------------------------------------------------------------------------------

def format_number(n: int | float) -> str:
    """A Number's text: ints exactly, doubles as Go's strconv.FormatFloat(x, 'g', -1, 64)."""
    if isinstance(n, bool):
        raise TypeError("a bool is not a number")
    if isinstance(n, int):
        return str(n)
    if math.isnan(n):
        return "NaN"
    if math.isinf(n):
        return "+Inf" if n > 0 else "-Inf"
    if n == 0:
        return "-0" if math.copysign(1.0, n) < 0 else "0"
    sign = "-" if n < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(n))).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # the decimal point sits after this many digits
    exp = point - 1
    if exp < -4 or exp >= 6:  # Go: %e when the exponent is < -4 or >= 6 (shortest precision)
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _number_value(n: int | float) -> dict[str, Any]:
    return {"type": "Number", "float": format_number(n)}


def to_value(value: Any) -> dict[str, Any]:
    """A CEL result as a KubeStellar `Value` (module docstring)."""
    if value is None:
        return {"type": "Null"}
    if isinstance(value, bool):
        return {"type": "Bool", "bool": value}
    if isinstance(value, (int, float)):
        return _number_value(value)
    if isinstance(value, (str, bytes, _dt.datetime, _dt.timedelta)):
        return {"type": "String", "string": _jsonable(value)}
    if isinstance(value, (list, tuple)):
        return {"type": "Array", "array": _jsonable(value)}
    if isinstance(value, dict):
        return {"type": "Object", "object": _jsonable(value)}
    return {"type": "String", "string": str(value)}


def _jsonable(value: Any) -> Any:
    """A CEL result as plain JSON: non-finite doubles as "NaN"/"+Inf"/"-Inf", sorted string keys."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else format_number(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return value.isoformat() + "Z"
    if isinstance(value, _dt.timedelta):
        micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
        seconds, fraction = divmod(abs(micros), 1_000_000)
        text = f"{seconds}.{fraction:06d}".rstrip("0") if fraction else str(seconds)
        return f"{'-' if micros < 0 else ''}{text}s"
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        items = sorted(((_key_text(k), cel_type(k), v) for k, v in value.items()), key=lambda t: t[:2])
        return {k: _jsonable(v) for k, _, v in items}
    return str(value)


def _key_text(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return key if isinstance(key, str) else str(_jsonable(key))


def canonical_text(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_TYPE_ORDER = {"Null": 0, "Bool": 1, "Number": 2, "String": 3, "Array": 4, "Object": 5}


def sort_key(value: dict[str, Any]) -> tuple[Any, ...]:
    """Total order on Values: by type, then numbers by value (NaN last), strings by code point."""
    kind = value["type"]
    rank = _TYPE_ORDER.get(kind, 6)
    if kind == "Bool":
        return (rank, value["bool"], "")
    if kind == "Number":
        text = value["float"]
        number: int | float = int(text) if _INT_TEXT.fullmatch(text) else float(text)
        if isinstance(number, float) and math.isnan(number):
            return (rank, (1, 0), text)
        return (rank, (0, number), text)
    if kind == "String":
        return (rank, value["string"], "")
    return (rank, "", canonical_text(value))
