"""Compare the two CEL libraries on PyPI for StatusCollectors: correctness first, then speed.

    pip install cel-python common-expression-language
    python benchmarks/cel_compare.py [--bindings 1000] [--repeat 5] [--seed 42]

* ``cel-python`` (import ``celpy``): pure Python (lark parser), from Cloud Custodian.
* ``common-expression-language`` (import ``cel``): Python bindings (PyO3) to the Rust ``cel`` crate.

Three checks, printed as Markdown:

1. **Agreement**: a fixed set of expressions typical of StatusCollectors (field access, comparisons,
   ``startsWith``, ``has()``, arithmetic, string concatenation, map/list access, a missing field,
   ``exists`` over conditions, a ternary) is evaluated over ``--bindings`` deterministic bindings
   ``{inventory: {name}, obj, returned: {status}}`` by both libraries; the answers are compared as
   tagged values (``int`` 1, ``double`` 1.0 and ``bool`` true are different answers; any evaluation
   error is the answer ``error``).
2. **Conformance**: probes whose answer the CEL language definition fixes (and cel-go, which
   KubeStellar uses, gives): heterogeneous numeric equality, no implicit int/double arithmetic,
   IEEE division, ``has()`` on a missing intermediate field, ``size()`` of a string in code points...
3. **Speed**, compile once / evaluate many: compile every expression once, convert each binding once
   into the library's values (``celpy.json_to_cel`` / ``cel.Context``), evaluate every expression on
   every binding. Best of ``--repeat`` runs; microseconds per operation.

The choice for ``ksgitops.core.status.collectors`` (``common-expression-language``) and why is written in that
module's docstring; this script is how the figures were produced.
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import math
import platform
import random
import sys
import time
from typing import Any, Callable

# The expressions typical of StatusCollectors (filter / groupBy / select / subjects).
EXPRESSIONS: list[str] = [
    "obj.spec.replicas",
    "returned.status.availableReplicas >= 1",
    'inventory.name.startsWith("wec-")',
    "has(returned.status.conditions)",
    "obj.spec.replicas - returned.status.availableReplicas",
    "returned.status.availableReplicas * 100 / obj.spec.replicas",
    'inventory.name + "/" + obj.metadata.namespace + "/" + obj.metadata.name',
    'obj.metadata.labels["app.kubernetes.io/name"]',
    "obj.spec.template.spec.containers[0].image",
    "returned.status.observedGeneration",  # missing in some bindings: an error there
    'has(returned.status.conditions) && returned.status.conditions.exists(c, c.type == "Available" && c.status == "True")',
    'returned.status.availableReplicas == obj.spec.replicas ? "ready" : "not ready"',
]

ERROR = ("error",)

# (expression, answer fixed by the CEL language definition / cel-go, why)
PROBES: list[tuple[str, Any, str]] = [
    ("2 == 2.0", ("bool", True), "heterogeneous numeric equality"),
    ("3 > 2.5", ("bool", True), "cross-type numeric ordering"),
    ("[1] == [1.0]", ("bool", True), "equality inside lists"),
    ("1 == null", ("bool", False), "comparison with null is false, not an error"),
    ("1.5 * 2", ERROR, "no implicit int/double arithmetic"),
    ("'a' + 1", ERROR, "no implicit conversion to string"),
    ("-1.0 / 0.0", ("double", "-inf"), "IEEE 754 division"),
    ("0.0 / 0.0", ("double", "nan"), "IEEE 754 division"),
    ("1 / 0", ERROR, "integer division by zero"),
    ("9223372036854775807 + 1", ERROR, "int64 overflow is an error"),
    ("-7 / 2", ("int", -3), "integer division truncates"),
    ("-7 % 2", ("int", -1), "remainder has the dividend's sign"),
    ("int(-2.7)", ("int", -2), "int() truncates"),
    ("string(3.0)", ("string", "3"), "double to string as cel-go prints it"),
    ('size("héllo")', ("int", 5), "string size counts code points"),
    ("has(obj.missing.x)", ERROR, "has() selects the intermediate field normally"),
    ("has(obj.spec.replicas)", ("bool", True), "has() of a present field"),
    ("obj.missing", ERROR, "missing map key"),
    ("(1 / 0 > 0) || true", ("bool", True), "logical operators absorb errors"),
    ("[1, 2] + [3]", ("list", [("int", 1), ("int", 2), ("int", 3)]), "list concatenation"),
    ("'abc'.matches('^a')", ("bool", True), "RE2 matches"),
    ("timestamp('2020-01-01T00:00:00Z') < timestamp('2021-01-01T00:00:00Z')", ("bool", True),
     "timestamps"),
    ("duration('1h') > duration('59m')", ("bool", True), "durations"),
]


# --- deterministic bindings -----------------------------------------------------------------------

def make_bindings(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    bindings = []
    for i in range(n):
        replicas = rng.randint(1, 5)
        labels = {"app": f"app-{i % 7}", "team": rng.choice(["a", "b", "c"])}
        if rng.random() < 0.9:
            labels["app.kubernetes.io/name"] = f"web-{i % 3}"
        obj = {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": f"web-{i % 3}", "namespace": f"team-{i % 4}", "labels": labels,
                         "generation": 1 + i % 3},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": f"nginx:1.{25 + i % 3}",
                                                           "ports": [{"containerPort": 80}]}]}}},
        }
        available = rng.randint(0, replicas)
        status: dict[str, Any] = {"replicas": replicas, "availableReplicas": available,
                                  "readyReplicas": available, "updatedReplicas": replicas}
        if rng.random() < 0.8:
            status["observedGeneration"] = obj["metadata"]["generation"]
        if rng.random() < 0.85:
            status["conditions"] = [
                {"type": "Available", "status": "True" if available else "False",
                 "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
            ]
        prefix = "wec" if rng.random() < 0.75 else "edge"
        bindings.append({"inventory": {"name": f"{prefix}-{i:04d}"}, "obj": obj,
                         "returned": {"status": status}})
    return bindings


# --- the two libraries behind one interface ---------------------------------------------------------

class Lib:
    name: str
    module: str
    compile: Callable[[str], Any]
    convert: Callable[[dict[str, Any]], Any]
    run: Callable[[Any, Any], Any]
    tag: Callable[[Any], Any]


def rust_lib() -> Lib:
    import cel  # common-expression-language

    lib = Lib()
    lib.name, lib.module = "common-expression-language", "cel"
    lib.compile = cel.compile
    lib.convert = lambda binding: cel.Context(variables=binding)
    lib.run = lambda program, ctx: program.execute(ctx)
    lib.tag = tag_python
    return lib


def celpy_lib() -> Lib:
    import celpy  # cel-python

    env = celpy.Environment()
    lib = Lib()
    lib.name, lib.module = "cel-python", "celpy"
    lib.compile = lambda text: env.program(env.compile(text))
    lib.convert = lambda binding: {k: celpy.json_to_cel(v) for k, v in binding.items()}

    def run(program: Any, activation: Any) -> Any:
        result = program.evaluate(activation)
        if isinstance(result, celpy.CELEvalError):  # some paths return the error instead of raising
            raise result
        return result

    lib.run = run
    lib.tag = tag_celpy
    return lib


def tag_python(value: Any) -> Any:
    """A Python result of `cel` as a comparable tagged value."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("double", repr(value))
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, bytes):
        return ("bytes", value)
    if isinstance(value, (list, tuple)):
        return ("list", [tag_python(v) for v in value])
    if isinstance(value, dict):
        return ("map", sorted((repr(tag_python(k)), tag_python(v)) for k, v in value.items()))
    if isinstance(value, dt.datetime):
        return ("timestamp", value.isoformat())
    if isinstance(value, dt.timedelta):
        return ("duration", value.total_seconds())
    return ("other", repr(value))


def tag_celpy(value: Any) -> Any:
    """A `celpy.celtypes` result as the same tagged value (bool before int: BoolType is an int)."""
    from celpy import celtypes

    if value is None or isinstance(value, celtypes.NullType):
        return ("null",)
    if isinstance(value, celtypes.BoolType):
        return ("bool", bool(value))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", int(value))
    if isinstance(value, float):
        return ("double", repr(float(value)))
    if isinstance(value, str):
        return ("string", str(value))
    if isinstance(value, bytes):
        return ("bytes", bytes(value))
    if isinstance(value, (list, tuple)):
        return ("list", [tag_celpy(v) for v in value])
    if isinstance(value, dict):
        return ("map", sorted((repr(tag_celpy(k)), tag_celpy(v)) for k, v in value.items()))
    if isinstance(value, dt.datetime):
        return ("timestamp", value.isoformat())
    if isinstance(value, dt.timedelta):
        return ("duration", value.total_seconds())
    return ("other", repr(value))


def answer(lib: Lib, program: Any, converted: Any) -> Any:
    try:
        return lib.tag(lib.run(program, converted))
    except Exception:  # noqa: BLE001 - any evaluation failure is the answer "error"
        return ERROR


def expected_tag(expected: Any) -> Any:
    if expected[0] == "double":
        return ("double", repr(float(expected[1])))
    return expected


# --- the three checks --------------------------------------------------------------------------------

def agreement(libs: list[Lib], bindings: list[dict[str, Any]]) -> list[tuple[str, int, int, str]]:
    """Per expression: (expression, equal answers, errors in the first library, a sample difference)."""
    programs = [[lib.compile(e) for e in EXPRESSIONS] for lib in libs]
    converted = [[lib.convert(b) for b in bindings] for lib in libs]
    rows = []
    for k, expr in enumerate(EXPRESSIONS):
        same = errors = 0
        sample = ""
        for i in range(len(bindings)):
            answers = [answer(lib, programs[j][k], converted[j][i]) for j, lib in enumerate(libs)]
            if all(a == answers[0] for a in answers):
                same += 1
            elif not sample:
                sample = " vs ".join(_short(a) for a in answers)
            errors += answers[0] == ERROR
        rows.append((expr, same, errors, sample))
    return rows


def conformance(lib: Lib) -> list[bool]:
    binding = {"inventory": {"name": "wec-1"}, "obj": {"spec": {"replicas": 3}}, "returned": {"status": {}}}
    converted = lib.convert(binding)
    results = []
    for expr, expected, _why in PROBES:
        try:
            program = lib.compile(expr)
        except Exception:  # noqa: BLE001
            results.append(False)
            continue
        results.append(answer(lib, program, converted) == expected_tag(expected))
    return results


def timing(lib: Lib, bindings: list[dict[str, Any]], repeat: int) -> dict[str, float]:
    best = {"compile": math.inf, "convert": math.inf, "evaluate": math.inf}
    for _ in range(repeat):
        t0 = time.perf_counter()
        programs = [lib.compile(e) for e in EXPRESSIONS]
        t1 = time.perf_counter()
        converted = [lib.convert(b) for b in bindings]
        t2 = time.perf_counter()
        for c in converted:
            for p in programs:
                try:
                    lib.run(p, c)
                except Exception:  # noqa: BLE001 - the missing-field expression raises on purpose
                    pass
        t3 = time.perf_counter()
        best["compile"] = min(best["compile"], t1 - t0)
        best["convert"] = min(best["convert"], t2 - t1)
        best["evaluate"] = min(best["evaluate"], t3 - t2)
    return best


def import_seconds(module: str) -> float:
    import subprocess

    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def _short(value: Any, width: int = 28) -> str:
    text = "error" if value == ERROR else f"{value[0]} {value[1]!r}" if len(value) > 1 else value[0]
    return text if len(text) <= width else text[: width - 1] + "…"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bindings", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)

    libs = [rust_lib(), celpy_lib()]
    bindings = make_bindings(args.bindings, args.seed)
    n_eval = len(bindings) * len(EXPRESSIONS)

    print(f"# CEL libraries for StatusCollectors ({dt.date.today().isoformat()})\n")
    print(f"Python {platform.python_version()} on {platform.machine()} ({platform.system()}); "
          f"{len(bindings):,} bindings x {len(EXPRESSIONS)} expressions = {n_eval:,} evaluations; "
          f"best of {args.repeat}.\n")

    print("## 1. Agreement (same tagged answer from both libraries)\n")
    print("| expression | same answers | errors | first difference (cel vs celpy) |")
    print("|---|---:|---:|---|")
    rows = agreement(libs, bindings)
    for expr, same, errors, sample in rows:
        cell = expr.replace("|", "\\|")
        print(f"| `{cell}` | {same}/{len(bindings)} | {errors} | {sample or '-'} |")
    total_same = sum(r[1] for r in rows)
    print(f"\nAgreement: {total_same:,}/{n_eval:,}.\n")

    print("## 2. Conformance (answers fixed by the CEL language definition; cel-go agrees)\n")
    print("| probe | expected | " + " | ".join(lib.module for lib in libs) + " | why |")
    print("|---|---|" + "---|" * len(libs) + "---|")
    results = [conformance(lib) for lib in libs]
    for k, (expr, expected, why) in enumerate(PROBES):
        marks = " | ".join("ok" if results[j][k] else "**wrong**" for j in range(len(libs)))
        cell = expr.replace("|", "\\|")
        print(f"| `{cell}` | {_short(expected, 40)} | {marks} | {why} |")
    print("\n" + ", ".join(f"{lib.module}: {sum(results[j])}/{len(PROBES)}" for j, lib in enumerate(libs))
          + ".\n")

    print("## 3. Speed: compile once, evaluate many\n")
    print("| library | module | version | import s | compile µs/expr | convert µs/binding "
          "| evaluate µs/eval | total ms | conformance |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for j, lib in enumerate(libs):
        t = timing(lib, bindings, args.repeat)
        total = (t["compile"] + t["convert"] + t["evaluate"]) * 1e3
        print(f"| {lib.name} | `{lib.module}` | {_version(lib.name)} | {import_seconds(lib.module):.3f} "
              f"| {t['compile'] / len(EXPRESSIONS) * 1e6:.1f} | {t['convert'] / len(bindings) * 1e6:.1f} "
              f"| {t['evaluate'] / n_eval * 1e6:.2f} | {total:.1f} | {sum(results[j])}/{len(PROBES)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
