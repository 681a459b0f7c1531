#!/usr/bin/env python3
"""A control plane for media-worker in Python, written from docs/protocol.md alone (nats-py).

It does what a billing control plane does, in the documented order:

  1. discovery: ask every live worker what it can run (media.capabilities, scatter-gather);
  2. quote:     request media.quote; a refusal carries {"error": {code, status, message}};
  3. job:       publish to media.jobs.<kind>.<model> with Nats-Msg-Id = task id, then publish the
                same task again (the stream drops the duplicate inside its 2-minute window);
  4. cancel:    publish a second, slow job and cancel it on media.cancel;
  5. events:    read MEDIA_EVENTS with a durable pull consumer of its own, believing an event only
                from the host that settles the task (its subject media.events.<host>.<task> against
                the task's claims media.claims.*.<task>, replayed as leases by the server's order and
                times): completed -> keep the result; failed -> refund what was deducted.

Usage:
  pip install nats-py
  python3 control_plane.py --nats-url nats://127.0.0.1:4222 \
      --image-url https://cdn.example.com/a.png --slow-image-url https://cdn.example.com/big.png

Prints one JSON object (what happened) on stdout; exits 1 when the worker broke a promise of the
protocol. It never creates the worker's streams: `media-worker provision` does (docs/protocol.md,
"Start order").
"""

import argparse
import asyncio
import base64
import json
import sys
import time
import uuid
from datetime import datetime, timezone

import nats
from nats.errors import NoRespondersError, TimeoutError as NatsTimeout
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

PROTOCOL_HEADER = "Media-Protocol-Version"
PROTOCOL_VERSION = "2.1"


async def discover(nc, wait=0.5):
    """Every live worker's capabilities: replies to media.capabilities collected for `wait` seconds."""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish("media.capabilities", b"", reply=inbox)
    found = []
    deadline = time.monotonic() + wait
    while (left := deadline - time.monotonic()) > 0:
        try:
            msg = await sub.next_msg(timeout=left)
        except NatsTimeout:
            break
        found.append(json.loads(msg.data))
    await sub.unsubscribe()
    return found


async def quote(nc, job):
    """The quote, or {"error": {...}}. No worker at all is NATS 'no responders': MODEL_UNAVAILABLE."""
    try:
        msg = await nc.request("media.quote", json.dumps(job).encode(), timeout=30)
    except NoRespondersError:
        return {"error": {"code": "MODEL_UNAVAILABLE", "status": 503, "message": "no worker is running"}}
    return json.loads(msg.data)


async def publish_job(js, kind, job):
    """Publishes with Nats-Msg-Id = task id; returns whether the stream saw it as a duplicate."""
    ack = await js.publish(
        f"media.jobs.{kind}.{job['model']}",
        json.dumps(job).encode(),
        headers={"Nats-Msg-Id": job["id"], PROTOCOL_HEADER: PROTOCOL_VERSION},
    )
    return bool(ack.duplicate)


async def cancel(nc, task_id, credits):
    msg = await nc.request("media.cancel", json.dumps({"id": task_id, "credits": credits, "reason": "example"}).encode(), timeout=10)
    return json.loads(msg.data)


def server_ms(timestamp):
    """The stream's RFC 3339 time (nanoseconds, "Z") in milliseconds since the epoch."""
    whole, _, rest = timestamp.rstrip("Z").partition(".")
    seconds = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    return int(seconds * 1000) + int((rest + "000")[:3])


async def claim_entries(nc, task_id):
    """Every readable claim of the task in stream order: (host, op, lease_ms or None, server ms)."""
    entries, seq = [], 1
    while True:
        request = {"seq": seq, "next_by_subj": f"media.claims.*.{task_id}"}
        reply = json.loads((await nc.request("$JS.API.STREAM.MSG.GET.MEDIA_CLAIMS", json.dumps(request).encode(), timeout=5)).data)
        if "error" in reply:
            return entries  # no more (404)
        stored = reply["message"]
        try:
            body = json.loads(base64.b64decode(stored.get("data", "")))
        except ValueError:
            body = None
        lease = body.get("leaseMs") if isinstance(body, dict) else None
        op = body.get("op", "claim") if isinstance(body, dict) else None
        if isinstance(body, dict) and op in ("claim", "renew", "settle") and (lease is None or isinstance(lease, int)):
            entries.append((stored["subject"].split(".")[2], op, lease, server_ms(stored["time"])))
        seq = stored["seq"] + 1


async def settling_host(nc, task_id):
    """The host whose event settles the task, or None (docs/protocol.md, "Who settles a task").

    Claims are leases: the first claim holds for its leaseMs from when the server stored it, its
    host's entries renew it; another host's claim stored after the lease lapsed takes the task over;
    the holder's settle mark makes it the settling host for good. A claim without leaseMs never lapses.
    """
    holder, expires, settled = None, None, False
    for host, op, lease, at in await claim_entries(nc, task_id):
        until = None if lease is None else at + lease
        if holder is None:
            holder, expires, settled = host, until, op == "settle"
        elif host == holder:
            if not settled:
                expires, settled = until, op == "settle"
        elif not settled and op == "claim" and expires is not None and at > expires:
            holder, expires = host, until
    return holder if settled or (holder is not None and expires is None) else None


async def believed(nc, msg, event):
    """An event counts only from the host that settles the task: media.events.<host>.<task id>, <host> = that host."""
    tokens = msg.subject.split(".")
    if len(tokens) != 4 or tokens[3] != event.get("id"):
        return False
    return tokens[2] == await settling_host(nc, event["id"])


async def wait_for_events(nc, js, task_ids, durable, timeout):
    """Reads events with our own durable consumer until every task has one; acks each after 'billing' it."""
    await js.add_consumer(
        "MEDIA_EVENTS",
        ConsumerConfig(durable_name=durable, filter_subject="media.events.>", ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL),
    )
    sub = await js.pull_subscribe_bind(durable, stream="MEDIA_EVENTS")
    events = {}
    deadline = time.monotonic() + timeout
    try:
        while set(task_ids) - set(events) and time.monotonic() < deadline:
            try:
                msgs = await sub.fetch(1, timeout=1)
            except NatsTimeout:
                continue
            for msg in msgs:
                event = json.loads(msg.data)
                if event["id"] in task_ids and await believed(nc, msg, event):
                    # One transaction keyed by the task id in a real control plane: completed -> store
                    # the result; failed with refund -> give back what was deducted for the task.
                    events.setdefault(event["id"], []).append({**event, "_protocol": msg.headers.get(PROTOCOL_HEADER) if msg.headers else None})
                await msg.ack()
    finally:
        await js.delete_consumer("MEDIA_EVENTS", durable)
    return events


async def main(args):
    nc = await nats.connect(args.nats_url)
    js = nc.jetstream()
    run = uuid.uuid4().hex[:8]
    report = {"problems": []}

    def expect(ok, what):
        if not ok:
            report["problems"].append(what)

    workers = await discover(nc)
    report["workers"] = [{"worker": w["worker"], "models": w["models"], "protocol": w["protocol"]} for w in workers]
    report["image_workers"] = [w["worker"] for w in workers if w["kinds"]["image"]["ready"]]
    expect(report["image_workers"], "no live worker can run image jobs")

    job = {"id": f"py-{run}-1", "model": "vendor-image-upscale", "input": {"image_url": args.image_url, "upscale_factor": "2"}}
    priced = await quote(nc, job)
    report["quote"] = priced
    expect("creditsUsed" in priced, f"quote refused: {priced.get('error')}")
    credits = priced.get("creditsUsed", 0)
    # (Deduct `credits` from the account here, then publish.)
    job = {**job, "credits": credits, "createdAt": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())}
    report["first_publish_duplicate"] = await publish_job(js, "image", job)
    report["second_publish_duplicate"] = await publish_job(js, "image", job)
    expect(report["first_publish_duplicate"] is False and report["second_publish_duplicate"] is True, "the duplicate publish was not dropped")

    music = await quote(nc, {"model": "vendor-v5-generate-music", "input": {"prompt": "a calm song"}})
    report["unserved_quote"] = music
    slow = {"id": f"py-{run}-2", "model": "vendor-image-upscale", "input": {"image_url": args.slow_image_url}, "credits": credits}
    await publish_job(js, "image", slow)
    await asyncio.sleep(args.cancel_after)
    report["cancel"] = await cancel(nc, slow["id"], credits)
    expect(report["cancel"].get("cancelled") is True, f"cancel refused: {report['cancel']}")

    events = await wait_for_events(nc, js, [job["id"], slow["id"]], f"py-example-{run}", args.timeout)
    report["events"] = events
    done = events.get(job["id"], [])
    cancelled = events.get(slow["id"], [])
    expect(len(done) == 1 and done[0]["status"] == "completed", f"expected one completed event for {job['id']}, got {done}")
    expect(
        len(cancelled) == 1 and cancelled[0]["status"] == "failed" and cancelled[0]["error"]["code"] == "CANCELLED" and cancelled[0]["refund"] is True,
        f"expected one CANCELLED event with a refund for {slow['id']}, got {cancelled}",
    )
    # A cancel after completion changes nothing.
    report["cancel_after_completion"] = await cancel(nc, job["id"], credits)
    expect(report["cancel_after_completion"].get("cancelled") is False, "a cancel after completion changed something")
    await nc.close()
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nats-url", default="nats://127.0.0.1:4222")
    parser.add_argument("--image-url", required=True, help="input of the job that should complete")
    parser.add_argument("--slow-image-url", required=True, help="input of the job that is cancelled while it runs")
    parser.add_argument("--cancel-after", type=float, default=1.0, help="seconds between publishing the slow job and cancelling it")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the events")
    result = asyncio.run(main(parser.parse_args()))
    print(json.dumps(result, indent=2))
    sys.exit(1 if result["problems"] else 0)
