"""A WebSocket server on Python's `websockets` library, for the tests.

Prints its port, then serves until killed:
  /echo       sends every message back, as it came (text or binary)
  /close      echoes three messages, then closes with 1001 "bye"
  /forbidden  refuses the upgrade with 403
It counts the messages it received and sent on standard error, one line
per connection as it ends: "received N sent M close CODE".
"""
import asyncio
import sys
from http import HTTPStatus

from websockets.asyncio.server import serve


async def handler(ws):
    received = sent = 0
    try:
        async for message in ws:
            received += 1
            await ws.send(message)
            sent += 1
            if ws.request.path == "/close" and sent == 3:
                await ws.close(1001, "bye")
                break
    finally:
        print(f"received {received} sent {sent} close {ws.close_code}",
              file=sys.stderr, flush=True)


def refuse(connection, request):
    if request.path == "/forbidden":
        return connection.respond(HTTPStatus.FORBIDDEN, "not here\n")
    return None


async def main():
    async with serve(handler, "127.0.0.1", 0, process_request=refuse,
                     compression=None, ping_interval=None) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()


asyncio.run(main())
