#!/usr/bin/env python3
"""Reads a `staticlm batch --format openai` results file with the `openai`
SDK's own types: every successful line's response body must validate as a
`ChatCompletion` (or be a staticlm score body), every error line must have
`response: null` and an `error` with a string `code` and `message`, and
`custom_id` must be a string or null. An independent check that tools written
for OpenAI's batch output read these files (docs/BATCH.md).

    /opt/slm-py/bin/pip install openai==3.51.0
    /opt/slm-py/bin/python tools/check_openai_batch.py results.jsonl
"""
import json
import sys

from openai.types.chat import ChatCompletion

if len(sys.argv) != 2:
    sys.exit(__doc__)
counts = {"chat.completion": 0, "staticlm.score": 0, "error": 0}
with open(sys.argv[1], encoding="utf-8") as f:
    for n, text in enumerate(f, 1):
        line = json.loads(text)
        where = f"{sys.argv[1]} line {n}"
        if not (line["custom_id"] is None or isinstance(line["custom_id"], str)):
            sys.exit(f"{where}: custom_id is {line['custom_id']!r}")
        if line["error"] is not None:
            err = line["error"]
            if line["response"] is not None or not isinstance(err["code"], str) or not isinstance(err["message"], str):
                sys.exit(f"{where}: a malformed error line")
            counts["error"] += 1
            continue
        if line["response"]["status_code"] != 200:
            sys.exit(f"{where}: status_code {line['response']['status_code']}")
        body = line["response"]["body"]
        if body["object"] == "staticlm.score":
            counts["staticlm.score"] += 1
            continue
        completion = ChatCompletion.model_validate(body)  # raises on any field of the wrong shape
        choice = completion.choices[0]
        if choice.logprobs is not None:
            for token in choice.logprobs.content:
                if token.bytes is None or bytes(token.bytes).decode("utf-8", "replace") != token.token:
                    sys.exit(f"{where}: token {token.token!r} and its bytes {token.bytes} disagree")
        counts["chat.completion"] += 1
print(f"{sys.argv[1]}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
