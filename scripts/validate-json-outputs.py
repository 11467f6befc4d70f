#!/usr/bin/env python3
"""Validates generated JSON outputs against their JSON Schema with an independent validator
(python3-jsonschema, Draft 2020-12, formats checked by jsonschema.FormatChecker).

    scripts/validate-json-outputs.py SCHEMA.json OUTPUTS.jsonl [SCHEMA2.json OUTPUTS2.jsonl ...]

OUTPUTS: the records of `edgellm run --parallel N -f PROMPTS --json` (one {"index", "text",
"finish_reason", ...} per prompt and a {"summary": ...} line), or lines {"text": ...}.
Prints one JSON line per pair: {"schema", "outputs", "stopped", "parsed", "valid", "failures": [...]}
and exits 0 only when every output of every pair finished with "stop", parses as JSON and
validates. Several pairs in one run: starting Python and importing jsonschema costs ~0.5 s of CPU,
more than validating a test's outputs (grammar_test_schema_validity checks 12 schemas per model).
"""
import json
import sys

import jsonschema


def validate(schema_path, outputs_path):
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=jsonschema.FormatChecker())
    outputs = stopped = parsed = valid = 0
    failures = []
    with open(outputs_path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            if "summary" in rec:
                continue
            outputs += 1
            text = rec["text"]
            if rec.get("finish_reason", "stop") == "stop":
                stopped += 1
            else:
                failures.append({"index": rec.get("index"), "why": "finish_reason " + str(rec.get("finish_reason")), "text": text[:300]})
                continue
            try:
                value = json.loads(text)
            except ValueError as e:
                failures.append({"index": rec.get("index"), "why": "not JSON: " + str(e), "text": text[:300]})
                continue
            parsed += 1
            errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
            if errors:
                failures.append({"index": rec.get("index"), "why": errors[0].message[:200], "text": text[:300]})
                continue
            valid += 1
    result = {"schema": schema_path, "outputs": outputs, "stopped": stopped, "parsed": parsed, "valid": valid,
              "failures": failures[:5], "n_failures": len(failures)}
    print(json.dumps(result, ensure_ascii=False))
    return outputs > 0 and valid == outputs


def main():
    args = sys.argv[1:]
    if len(args) < 2 or len(args) % 2 != 0:
        print(__doc__, file=sys.stderr)
        return 2
    ok = True
    for i in range(0, len(args), 2):
        ok = validate(args[i], args[i + 1]) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
