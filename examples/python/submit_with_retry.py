#!/usr/bin/env python3
"""Submit a job to the gateway's HTTP API and retry it safely (docs/contract.md, "Retrying safely").

Standard library only. One Idempotency-Key is made per operation, before the first attempt, and
sent unchanged with the same body on every retry: a timeout, a dropped connection, a 5xx, a 429 or
a 409 IDEMPOTENCY_KEY_IN_USE is retried (after Retry-After when given); any other 4xx is final.
A retry of a submission that was charged gets the first answer again (Idempotent-Replayed: true),
so the task is made and charged once however many attempts it took.

    python3 submit_with_retry.py https://api.example.com "$API_KEY" /api/v1/tools/upscale-image \\
        '{"image_url": "https://cdn.example.com/a.png", "upscale_factor": "2"}'

Prints one JSON line: the final status, whether it was a replay, the key, the attempts and the body.
"""
import argparse
import json
import socket
import sys
import time
import urllib.error
import urllib.request
import uuid

RETRYABLE = {409, 429, 500, 502, 503, 504}


def attempt(url, api_key, body, key, timeout):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode("utf-8"),
        method="POST",
        headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json", "Idempotency-Key": key},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.load(error)


def submit(base_url, api_key, path, body, attempts=10, timeout=30.0, first_timeout=None, key=None):
    key = key or str(uuid.uuid4())
    url = base_url.rstrip("/") + path
    log = []
    for n in range(1, attempts + 1):
        wait = min(2 ** (n - 1) * 0.25, 5.0)
        try:
            status, headers, answer = attempt(url, api_key, body, key, first_timeout if n == 1 and first_timeout else timeout)
        except (TimeoutError, socket.timeout, urllib.error.URLError, ConnectionError) as error:
            # The request may have been done, or not: the same key makes the retry safe either way.
            log.append({"attempt": n, "error": type(error).__name__})
            time.sleep(wait)
            continue
        headers = {k.lower(): v for k, v in headers.items()}
        log.append({"attempt": n, "status": status})
        if status in RETRYABLE and n < attempts:
            retry_after = headers.get("retry-after")
            time.sleep(float(retry_after) if retry_after and retry_after.isdigit() else wait)
            continue
        return {"status": status, "replayed": headers.get("idempotent-replayed") == "true", "key": key, "attempts": log, "body": answer}
    return {"status": None, "replayed": False, "key": key, "attempts": log, "body": None}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("api_key")
    parser.add_argument("path", help="e.g. /api/v1/generate or /api/v1/tools/upscale-image")
    parser.add_argument("body", help="the JSON body")
    parser.add_argument("--key", help="the Idempotency-Key (default: a new UUID v4)")
    parser.add_argument("--attempts", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per attempt")
    parser.add_argument("--first-timeout", type=float, help="seconds for the first attempt only (to try a lost answer)")
    args = parser.parse_args()
    result = submit(args.base_url, args.api_key, args.path, json.loads(args.body), args.attempts, args.timeout, args.first_timeout, args.key)
    print(json.dumps(result))
    return 0 if result["status"] is not None and 200 <= result["status"] < 300 else 1


if __name__ == "__main__":
    sys.exit(main())
