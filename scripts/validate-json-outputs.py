#!/usr/bin/env python3
"""Validates generated JSON outputs against their JSON Schema with an independent validator
(python3-jsonschema, Draft 2020-12, formats checked by jsonschema.FormatChecker).

    scripts/validate-json-outputs.py SCHEMA.json OUTPUTS.jsonl [--quiet]

OUTPUTS: the records of `edgellm run --parallel N -f PROMPTS --json` (one {"index", "text",
"finish_reason", ...} per prompt and a {"summary": ...} line), or lines {"text": ...}.
Prints one JSON line: {"schema", "outputs", "stopped", "parsed", "valid", "failures": [...]}
and exits 0 only when every output finished with "stop", parses as JSON and validates.
"""
import json
import sys

import jsonschema


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=jsonschema.FormatChecker())
    outputs = stopped = parsed = valid = 0
    failures = []
    with open(sys.argv[2], encoding="utf-8") as f:
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
    result = {"schema": sys.argv[1], "outputs": outputs, "stopped": stopped, "parsed": parsed, "valid": valid,
              "failures": failures[:5], "n_failures": len(failures)}
    print(json.dumps(result, ensure_ascii=False))
    return 0 if outputs > 0 and valid == outputs else 1


if __name__ == "__main__":
    sys.exit(main())
