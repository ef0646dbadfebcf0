#!/usr/bin/env python3
"""Validates the outputs of a `staticlm batch` run against the JSON Schemas of
their requests with Python's jsonschema (pinned: jsonschema==4.23.0), a
validator independent of staticlm's own compiler.

    tools/check_json_outputs.py REQUESTS.jsonl RESULTS.jsonl [--allow-incomplete]

Every request with "json_schema" must have a result whose "text" parses as
JSON and validates (Draft 2020-12), with "complete": true. Requests whose
result is "length" with "complete": false count as incomplete: a failure
unless --allow-incomplete. Exit 0 when every output validates.
"""
import argparse
import importlib.metadata
import json
import sys

import jsonschema


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("requests")
    ap.add_argument("results")
    ap.add_argument("--allow-incomplete", action="store_true")
    args = ap.parse_args()
    version = importlib.metadata.version("jsonschema")
    if version != "4.23.0":
        print(f"warning: jsonschema {version}, checked with 4.23.0", file=sys.stderr)

    schemas = {}
    with open(args.requests, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            req = json.loads(line)
            if "json_schema" in req:
                key = json.dumps(req["id"])
                jsonschema.Draft202012Validator.check_schema(req["json_schema"])
                schemas[key] = req["json_schema"]

    results = {}
    with open(args.results, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            results[json.dumps(r["id"])] = r

    ok = incomplete = 0
    failures = []
    for key, schema in schemas.items():
        r = results.get(key)
        if r is None:
            failures.append((key, "no result"))
            continue
        if r.get("finish_reason") == "error":
            failures.append((key, "error: " + r["error"]["message"]))
            continue
        if r.get("complete") is False:
            incomplete += 1
            if not args.allow_incomplete:
                failures.append((key, f"incomplete ({r['finish_reason']}): {r['text']!r}"))
            continue
        try:
            value = json.loads(r["text"])
        except json.JSONDecodeError as e:
            failures.append((key, f"does not parse ({e}): {r['text']!r}"))
            continue
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(value))
        if errors:
            failures.append((key, f"invalid: {errors[0].message}: {r['text']!r}"))
            continue
        ok += 1

    total = len(schemas)
    print(f"{ok}/{total} outputs validate ({100.0 * ok / total if total else 0:.1f}%), "
          f"{incomplete} incomplete, {len(failures)} failures")
    for key, why in failures[:20]:
        print(f"  id {key}: {why}")
    return 0 if not failures and total > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
