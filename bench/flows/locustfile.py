"""The flow of tests/scripts/flow_login.lua for Locust (bench/flows.sh).

A visit logs in (POST JSON, token from the answer), lists /private/items
with the token as a Bearer header, rests uniform 0.5-1.5 s, then opens
/private/items/N with nothing but the cookie the login set.

Locust has only closed users, each running one visit at a time. The
closest to an open arrival rate of R visits/s (FLOW_RATE): R * PACE users
(locust -u), each starting a visit every PACE seconds with
constant_pacing(PACE) (at once when the last one ran longer). Locust
spawns a second's users at once (-r R: R users each second, together),
so each user first sleeps until its own slot, k / R seconds after the
first user for the k-th, which spreads the starts evenly. PACE
(FLOW_PACE, default 2 s) is above the longest visit (1.5 s of rest and
three quick answers), so in a healthy run every user keeps its slot; a
visit that runs over delays that user's next start, which no figure
records.

FLOW_CLIENT=fast makes the user a FastHttpUser (Locust's own faster
client) instead of the HttpUser (python-requests) of the default.
"""

import json
import os
import random
import time

import gevent
from locust import FastHttpUser, HttpUser, constant_pacing, task

PACE = float(os.environ.get("FLOW_PACE", "2"))
RATE = float(os.environ.get("FLOW_RATE", "50"))
FAST = os.environ.get("FLOW_CLIENT", "") == "fast"

_spawned = 0
_first = None


class Visitor(FastHttpUser if FAST else HttpUser):
    wait_time = constant_pacing(PACE)

    def on_start(self):
        global _spawned, _first
        now = time.monotonic()
        if _first is None:
            _first = now
        slot = _first + _spawned / RATE
        _spawned += 1
        gevent.sleep(max(0.0, slot - now))
        # constant_pacing counts from here, not from the user's creation.
        self._cp_last_run = time.perf_counter()

    @task
    def visit(self):
        # Each visit has its own cookies, as metron's and Artillery's do.
        if FAST:
            self.client.cookiejar.clear()
        else:
            self.client.cookies.clear()
        n = random.randrange(100)
        with self.client.post(
            "/login",
            data=json.dumps({"user": "u%d" % n}),
            headers={"Content-Type": "application/json"},
            name="login",
            catch_response=True,
        ) as r:
            if r.status_code != 200:
                r.failure("login %d" % r.status_code)
                return
            token = r.json()["token"]
        items = self.client.get(
            "/private/items",
            headers={"Authorization": "Bearer " + token},
            name="items",
        )
        if items.status_code != 200:
            return
        time.sleep(random.uniform(0.5, 1.5))  # gevent's sleep under Locust
        self.client.get("/private/items/%d" % n, name="item")
