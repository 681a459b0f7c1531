#!/usr/bin/env python3
"""Follow a task on a media-worker gateway live, with the standard library only (urllib).

Reads GET /api/v1/tasks/{id}/events (server-sent events, docs/contract.md "Live task events")
line by line: prints each progress step on stderr, then the settled task (the same object
GET /api/v1/tasks/{id} answers) as JSON on stdout. A stream cut before the end is resumed
with the Last-Event-ID header, so only later events come.

Usage:
  MEDIA_WORKER_API_KEY=mwk_... python3 follow_task.py --url http://127.0.0.1:8080 --task t_...

Exits 0 when the task completed, 2 when it failed, expired or was cancelled, 1 when it cannot be
followed (unknown task, bad key, gateway unreachable).
"""

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

TERMINAL = {"completed", "failed", "expired", "cancelled"}


def events(response):
    """(id, event, data) for each event of an open text/event-stream response; comments skipped."""
    event_id, name, data = None, "", []
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                yield event_id, name or "message", "\n".join(data)
            event_id, name, data = None, "", []
        elif line.startswith(":"):
            continue  # heartbeat
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field == "event":
                name = value
            elif field == "id":
                event_id = value


def progress_line(data):
    progress = json.loads(data)
    count = ""
    if "done" in progress:
        count = f" {progress['done']}" + (f"/{progress['total']}" if "total" in progress else "") + (f" {progress['unit']}" if "unit" in progress else "")
    percent = f" {progress['percent']} %" if "percent" in progress else ""
    # Seconds left in this stage when the worker sent it (at), once the worker can tell.
    eta = f", about {spoken_duration(progress['etaSeconds'])} left" if isinstance(progress.get("etaSeconds"), (int, float)) else ""
    # While one unit (a tile) runs long, its clock: how long it has run against the worker's estimate.
    clock = f", {step_clock(progress.get('unit'), progress['step'])}" if valid_step(progress.get("step")) else ""
    return f"{progress.get('stage', 'working')}{count}{percent}{eta}{clock}"


def valid_step(step):
    """A step as docs/schemas/progress.schema.json allows it; the sender's claim, dropped whole otherwise."""
    def whole(value):  # JSON's 48 and 48.0 are one number, as JavaScript reads them
        return isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer()

    def seconds(value):
        return whole(value) and 0 <= value <= 86400
    return (
        isinstance(step, dict)
        and whole(step.get("index")) and step["index"] >= 1
        and seconds(step.get("elapsedSeconds"))
        and ("estimatedSeconds" not in step or seconds(step["estimatedSeconds"]))
    )


def step_clock(unit, step):
    """tile 4 running 48.0s of ~59.0s estimated; past the estimate, by how much and that it still works."""
    one = (unit[:-1] if unit.endswith("s") else unit) if unit else "step"
    head = f"{one} {int(step['index'])} running {short_seconds(step['elapsedSeconds'])}"
    estimate = step.get("estimatedSeconds")
    if estimate is None:
        return head
    if step["elapsedSeconds"] <= estimate:
        return f"{head} of ~{short_seconds(estimate)} estimated"
    over = short_seconds(step["elapsedSeconds"] - estimate)
    return f"{head}, {over} past its ~{short_seconds(estimate)} estimate: still working (a busy machine is slower)"


def short_seconds(seconds):
    """48.0s, 3m29s (whole seconds on the wire)."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def spoken_duration(seconds):
    """18 s, 2 min 5 s, 1 h 20 min."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60} s" if s % 60 else "")
    # Half a minute rounds up, as in the command line's (Python's round() goes to the even minute).
    hours, minutes = s // 3600, (s % 3600 + 30) // 60
    if minutes == 60:
        hours, minutes = hours + 1, 0
    return f"{hours} h" + (f" {minutes} min" if minutes else "")


def follow(base_url, task_id, api_key, max_quiet_reconnects=5):
    last_id = None
    quiet = 0
    while True:
        headers = {"Authorization": f"Bearer {api_key}", "Accept": "text/event-stream"}
        if last_id is not None:
            headers["Last-Event-ID"] = last_id
        request = urllib.request.Request(f"{base_url.rstrip('/')}/api/v1/tasks/{task_id}/events", headers=headers)
        heard = False
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # heartbeats come every 15 s
                for event_id, name, data in events(response):
                    heard = True
                    last_id = event_id or last_id
                    if name in TERMINAL:
                        print(f"{task_id}: {name}", file=sys.stderr)
                        print(data)
                        return 0 if name == "completed" else 2
                    if name == "progress":
                        print(f"{task_id}: {progress_line(data)}", file=sys.stderr)
        except urllib.error.HTTPError as err:
            body = json.loads(err.read() or b"{}").get("error", {})
            print(f"{err.code} {body.get('code')}: {body.get('message')}", file=sys.stderr)
            return 1
        except OSError as err:  # connection refused or cut, read timeout
            print(f"{task_id}: connection lost ({err})", file=sys.stderr)
        quiet = 0 if heard else quiet + 1
        if quiet >= max_quiet_reconnects:
            return 1
        time.sleep(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the gateway's address, e.g. http://127.0.0.1:8080")
    parser.add_argument("--task", required=True, help="the task id the submission answered")
    parser.add_argument("--api-key", default=os.environ.get("MEDIA_WORKER_API_KEY"), help="default: MEDIA_WORKER_API_KEY")
    args = parser.parse_args()
    if not args.api_key:
        parser.error("an API key is needed: --api-key or MEDIA_WORKER_API_KEY")
    sys.exit(follow(args.url, args.task, args.api_key))


if __name__ == "__main__":
    main()
