"""Conformance: chainform's validator and schema dialects measured on public test data, next to peers.

Run from the repository root:  .venv/bin/python bench/bench_conformance.py [--no-peers]

1. The validator against JSON-Schema-Test-Suite (draft2020-12, draft7; required and optional tests).
2. The validator against every valid/invalid instance of JSONSchemaBench (dev subsets).
3. Each dialect on JSONSchemaBench: schemas converted, valid instances that survive the round trip
   (forward_instance -> accepted by the converted schema -> restore -> valid for the original AND equal
   to it), invalid instances still rejected by the final check against the original schema.
4. Peers' OpenAI-strict converters (pydantic-ai, openai-agents) on the same schemas, run in their own
   venv bench/.venv so the project's dependencies stay clean.

Writes bench/results/conformance.json and prints a markdown table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# ../shared/data beside the checkout (a worktree may sit one level deeper).
DATA = next(
    (p / "shared" / "data" for p in REPO.parents if (p / "shared" / "data").is_dir()),
    REPO.parent / "shared" / "data",
)
SUITE = DATA / "json-schema-test-suite"
BENCH = DATA / "jsonschemabench-dev"
PEER_VENV = REPO / "bench" / ".venv"
DIALECTS = ("jsonschema", "openai-strict", "gemini", "anthropic", "bedrock", "llguidance")
DRAFT_URI = {
    "draft2020-12": "https://json-schema.org/draft/2020-12/schema",
    "draft7": "http://json-schema.org/draft-07/schema#",
}


def load_bench() -> list[dict[str, Any]]:
    out = []
    for path in sorted(BENCH.glob("*/*.json")):
        doc = json.loads(path.read_text())
        out.append(
            {"name": f"{path.parent.name}/{path.stem}", "schema": doc["schema"], "tests": doc["tests"]}
        )
    return out


def suite_registry(draft: str) -> Any:
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT7, DRAFT202012

    spec = DRAFT202012 if draft == "draft2020-12" else DRAFT7
    remotes = SUITE / "remotes"
    resources = [
        (
            f"http://localhost:1234/{p.relative_to(remotes).as_posix()}",
            Resource.from_contents(json.loads(p.read_text()), default_specification=spec),
        )
        for p in remotes.rglob("*.json")
    ]
    return Registry().with_resources(resources)


def run_suite() -> dict[str, Any]:
    from chainform.errors import SchemaError
    from chainform.schema.validate import is_valid

    results: dict[str, Any] = {}
    for draft, uri in DRAFT_URI.items():
        registry = suite_registry(draft)
        for part in ("required", "optional"):
            files = sorted((SUITE / "tests" / draft).rglob("*.json"))
            files = [f for f in files if ("optional" in f.parts) == (part == "optional")]
            for formats in (True, False):
                passed = total = 0
                failures: list[str] = []
                for path in files:
                    for case in json.loads(path.read_text()):
                        schema = case["schema"]
                        if isinstance(schema, dict) and "$schema" not in schema:
                            schema = {**schema, "$schema": uri}
                        for test in case["tests"]:
                            total += 1
                            try:
                                got: object = is_valid(
                                    test["data"], schema, registry=registry, formats=formats
                                )
                            except SchemaError as exc:
                                got = f"SchemaError: {str(exc)[:80]}"
                            if got == test["valid"]:
                                passed += 1
                            else:
                                failures.append(
                                    f"{path.relative_to(SUITE / 'tests').as_posix()}: {case['description']} / {test['description']}"
                                )
                results[f"{draft}/{part}/{'formats' if formats else 'annotation'}"] = {
                    "passed": passed,
                    "total": total,
                    "failures": failures,
                }
    return results


def run_bench_agreement(docs: list[dict[str, Any]]) -> dict[str, Any]:
    from chainform.errors import SchemaError
    from chainform.schema.validate import check_schema, is_valid

    agree = total = bad_schemas = 0
    disagreements: list[str] = []
    for doc in docs:
        try:
            check_schema(doc["schema"])
        except SchemaError:
            bad_schemas += 1
            if doc["tests"]:
                disagreements.append(f"{doc['name']}: schema rejected but has tests")
            continue
        for test in doc["tests"]:
            total += 1
            if is_valid(test["data"], doc["schema"]) == test["valid"]:
                agree += 1
            else:
                disagreements.append(f"{doc['name']}: {test['description']}")
    return {"agree": agree, "total": total, "schemas_rejected": bad_schemas, "disagreements": disagreements}


def run_dialects(docs: list[dict[str, Any]]) -> dict[str, Any]:
    from chainform.errors import SchemaError
    from chainform.schema.dialects import convert, forward_instance, provider_accepts, restore
    from chainform.schema.validate import check_schema, is_valid

    usable = []
    for doc in docs:
        try:
            check_schema(doc["schema"])
            usable.append(doc)
        except SchemaError:
            pass
    out: dict[str, Any] = {}
    for dialect in DIALECTS:
        t0 = time.perf_counter()
        converted = lossless = valid_n = survived = invalid_n = rejected = 0
        errors: dict[str, int] = {}
        lost: dict[str, int] = {}
        for doc in usable:
            schema = doc["schema"]
            try:
                conv = convert(schema, dialect)  # type: ignore[arg-type]
            except SchemaError as exc:
                key = str(exc).split(":")[-1].strip()[:60] if "$" in str(exc) else str(exc)[:60]
                errors[key] = errors.get(key, 0) + 1
                conv = None
            if conv is not None:
                converted += 1
                lossless += conv.lossless
            for test in doc["tests"]:
                if test["valid"]:
                    valid_n += 1
                    if conv is None:
                        continue
                    emitted = forward_instance(test["data"], schema, dialect)  # type: ignore[arg-type]
                    if not provider_accepts(emitted, conv):
                        lost["not emittable under the converted schema"] = (
                            lost.get("not emittable under the converted schema", 0) + 1
                        )
                        continue
                    back = restore(emitted, schema, dialect)  # type: ignore[arg-type]
                    if back != test["data"]:
                        lost["restored value differs"] = lost.get("restored value differs", 0) + 1
                    elif not is_valid(back, schema):
                        lost["restored value invalid"] = lost.get("restored value invalid", 0) + 1
                    else:
                        survived += 1
                else:
                    invalid_n += 1
                    value = test["data"]
                    if conv is not None:
                        value = restore(forward_instance(value, schema, dialect), schema, dialect)  # type: ignore[arg-type]
                    rejected += not is_valid(value, schema)
        n = len(usable)
        out[dialect] = {
            "schemas": n,
            "converted": converted,
            "lossless": lossless,
            "valid_instances": valid_n,
            "round_trip_ok": survived,
            "invalid_instances": invalid_n,
            "invalid_rejected": rejected,
            "round_trip_losses": lost,
            "conversion_errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])[:12]),
            "seconds": round(time.perf_counter() - t0, 2),
        }
    return out


PEER_SCRIPT = r"""
import json, sys, copy
schemas = json.load(open(sys.argv[1]))
out = {}
try:
    from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer
    import pydantic_ai
    ok = strict = 0
    for s in schemas:
        try:
            t = OpenAIJsonSchemaTransformer(copy.deepcopy(s), strict=True)
            t.walk()
            ok += 1
            strict += bool(t.is_strict_compatible)
        except Exception:
            pass
    out["pydantic-ai"] = {"version": pydantic_ai.__version__, "converted": ok, "strict_compatible": strict}
except ImportError as exc:
    out["pydantic-ai"] = {"error": str(exc)}
try:
    from agents.strict_schema import ensure_strict_json_schema
    import importlib.metadata as md
    ok = 0
    for s in schemas:
        try:
            ensure_strict_json_schema(copy.deepcopy(s))
            ok += 1
        except Exception:
            pass
    out["openai-agents"] = {"version": md.version("openai-agents"), "converted": ok}
except ImportError as exc:
    out["openai-agents"] = {"error": str(exc)}
print(json.dumps(out))
"""


def ensure_peer_venv() -> Path | None:
    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
    probe = subprocess.run([str(python), "-c", "import pydantic_ai, agents"], capture_output=True)
    if probe.returncode != 0:
        install = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "pydantic-ai-slim", "openai-agents"],
            capture_output=True,
            timeout=900,
        )
        if install.returncode != 0:
            print("peers: install failed, skipped", file=sys.stderr)
            return None
    return python


def run_peers(docs: list[dict[str, Any]]) -> dict[str, Any]:
    from chainform.errors import SchemaError
    from chainform.schema.validate import check_schema

    schemas = []
    for doc in docs:
        try:
            check_schema(doc["schema"])
            schemas.append(doc["schema"])
        except SchemaError:
            pass
    python = ensure_peer_venv()
    if python is None:
        return {"skipped": "peer venv could not be installed"}
    tmp = REPO / "bench" / "results" / ".peer_schemas.json"
    tmp.write_text(json.dumps(schemas))
    try:
        proc = subprocess.run(
            [str(python), "-c", PEER_SCRIPT, str(tmp)], capture_output=True, text=True, timeout=900
        )
    finally:
        tmp.unlink(missing_ok=True)
    if proc.returncode != 0:
        return {"skipped": proc.stderr[-500:]}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["schemas"] = len(schemas)
    return result


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}% ({a}/{b})" if b else "n/a"


def table(results: dict[str, Any]) -> str:
    lines = ["### Validator", "", "| data | passed |", "|---|---|"]
    for key, r in results["suite"].items():
        lines.append(f"| JSON-Schema-Test-Suite {key} | {pct(r['passed'], r['total'])} |")
    a = results["bench_agreement"]
    lines.append(f"| JSONSchemaBench-dev instances (agreement with labels) | {pct(a['agree'], a['total'])} |")
    lines += ["", "### Dialects on JSONSchemaBench-dev", ""]
    lines += [
        "| dialect | schemas converted | lossless | valid round-trip | invalid still rejected |",
        "|---|---|---|---|---|",
    ]
    for d, r in results["dialects"].items():
        lines.append(
            f"| {d} | {pct(r['converted'], r['schemas'])} | {pct(r['lossless'], r['schemas'])} | "
            f"{pct(r['round_trip_ok'], r['valid_instances'])} | {pct(r['invalid_rejected'], r['invalid_instances'])} |"
        )
    peers = results.get("peers") or {}
    if peers and "skipped" not in peers:
        lines += ["", "### OpenAI-strict converters (share of schemas converted without error)", ""]
        lines += ["| converter | converted | strict-compatible |", "|---|---|---|"]
        n = peers["schemas"]
        ours = results["dialects"]["openai-strict"]
        lines.append(
            f"| chainform openai-strict | {pct(ours['converted'], n)} | {pct(ours['converted'], n)} |"
        )
        for name in ("pydantic-ai", "openai-agents"):
            p = peers.get(name, {})
            if "converted" in p:
                sc = pct(p["strict_compatible"], n) if "strict_compatible" in p else "n/a (raises or passes)"
                lines.append(f"| {name} {p['version']} | {pct(p['converted'], n)} | {sc} |")
    elif peers:
        lines.append(f"\nPeers skipped: {peers['skipped']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-peers", action="store_true", help="skip pydantic-ai / openai-agents")
    args = parser.parse_args()
    if not BENCH.is_dir() or not SUITE.is_dir():
        sys.exit(f"conformance data not found under {DATA}")
    import jsonschema

    docs = load_bench()
    t0 = time.perf_counter()
    results: dict[str, Any] = {
        "machine": f"{platform.platform()} {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {"jsonschema": jsonschema.__version__ if hasattr(jsonschema, "__version__") else "?"},
        "suite": run_suite(),
        "bench_agreement": run_bench_agreement(docs),
        "dialects": run_dialects(docs),
    }
    results["peers"] = {} if args.no_peers else run_peers(docs)
    results["seconds"] = round(time.perf_counter() - t0, 1)
    out = REPO / "bench" / "results" / "conformance.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(table(results))
    print(
        f"\n{results['machine']}; {results['date']}; {results['seconds']} s; written to {out.relative_to(REPO)}"
    )


if __name__ == "__main__":
    main()
