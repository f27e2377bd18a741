"""A WebSocket server on Python's `websockets` library, for the tests.

    echo_server.py [--port N] [--log FILE] [--tls CERT KEY]

Prints its port (N, or one the system chose), then serves until killed
(SIGTERM closes every connection with 1001 going away first):
  /echo       sends every message back, as it came (text or binary)
  /close      echoes three messages, then closes with 1001 "bye"
  /chatter    before each echo, sends a message of its own,
              {"chatter": N}, as a room that relays others' messages does
  /push?events=N&first=MS&gap=MS[&close=CODE]
              sends "event 1" .. "event N", the first MS after the
              upgrade and each next one GAP ms after the one before's
              due time, then closes with CODE (default 1000); it counts,
              and does not answer, what the client sends
  /forbidden  refuses the upgrade with 403
  /once       takes its first upgrade (an echo), refuses every later one
              with 429, as a server limiting a client's connections does
It counts the messages it received and sent, one line per connection as
it ends, on standard error and appended to FILE: "received N sent M close
CODE deflate yes|no" (whether the connection agreed to permessage-deflate,
which it does when the client offers it, with its library's defaults).
With --tls it serves wss:// with that certificate and key.
"""
import argparse
import asyncio
import signal
import ssl
import sys
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

from websockets.exceptions import ConnectionClosed

from websockets.asyncio.server import serve

args = None


def note(line):
    print(line, file=sys.stderr, flush=True)
    if args.log:
        with open(args.log, "a") as log:
            log.write(line + "\n")


def deflate(ws):
    return " deflate yes" if ws.protocol.extensions else " deflate no"


async def push(ws):
    """The /push timetable, from the moment the upgrade was taken."""
    query = parse_qs(urlsplit(ws.request.path).query)
    number = lambda name, default: int(query.get(name, [default])[0])
    events, first, gap = number("events", 5), number("first", 0), number("gap", 100)
    code = number("close", 1000)
    counts = {"received": 0, "sent": 0}

    async def listen():
        async for _ in ws:
            counts["received"] += 1

    listener = asyncio.create_task(listen())
    loop = asyncio.get_running_loop()
    start = loop.time()
    try:
        for i in range(events):
            due = start + (first + i * gap) / 1000
            await asyncio.sleep(max(0.0, due - loop.time()))
            await ws.send(f"event {i + 1}")
            counts["sent"] += 1
        await ws.close(code)
    except ConnectionClosed:
        pass
    finally:
        listener.cancel()
        note(f"received {counts['received']} sent {counts['sent']} close {ws.close_code}{deflate(ws)}")


async def handler(ws):
    if urlsplit(ws.request.path).path == "/push":
        return await push(ws)
    received = sent = 0
    try:
        async for message in ws:
            received += 1
            if ws.request.path == "/chatter":
                await ws.send(f'{{"chatter": {received}}}')
                sent += 1
            await ws.send(message)
            sent += 1
            if ws.request.path == "/close" and sent == 3:
                await ws.close(1001, "bye")
                break
    finally:
        note(f"received {received} sent {sent} close {ws.close_code}{deflate(ws)}")


upgrades_once = 0


def refuse(connection, request):
    global upgrades_once
    if request.path == "/forbidden":
        return connection.respond(HTTPStatus.FORBIDDEN, "not here\n")
    if request.path == "/once":
        upgrades_once += 1
        if upgrades_once > 1:
            return connection.respond(HTTPStatus.TOO_MANY_REQUESTS, "one is enough\n")
    return None


async def main():
    tls = None
    if args.tls:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args.tls[0], args.tls[1])
    async with serve(handler, "127.0.0.1", args.port, process_request=refuse,
                     compression="deflate", ping_interval=None, ssl=tls,
                     max_size=None) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        # SIGTERM: close every connection with 1001 going away, count
        # them, and stop.
        stop = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().add_signal_handler(
            signal.SIGTERM, stop.set_result, None)
        await stop


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    args = parser.parse_args()
    asyncio.run(main())
