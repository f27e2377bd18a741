"""A server-sent events endpoint on aiohttp, with a known timetable, for
tests/it/events.rs: the streaming server of an LLM-style API, written with
an HTTP server nobody on this project wrote.

    python3 tests/sse_server.py PORT

GET or POST /stream?n=N&first=MS&gap=MS[&pause_after=K&pause=MS] answers
`text/event-stream`: the head at once, the first event MS after the
request, then one every `gap` ms (after event K, one pause of `pause` ms
more), the last event `data: [DONE]`. Each event is written and drained
when it is due. Prints "ready" once it listens.
"""

import asyncio
import sys

from aiohttp import web

async def stream(request: web.Request) -> web.StreamResponse:
    q = request.query
    n = int(q.get("n", "10"))
    first = float(q.get("first", "0")) / 1000
    gap = float(q.get("gap", "100")) / 1000
    pause_after = int(q.get("pause_after", "0"))
    pause = float(q.get("pause", "0")) / 1000
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    # Due times from the request's arrival, so that gaps do not drift.
    due = t0 + first
    for i in range(1, n + 1):
        await asyncio.sleep(max(0.0, due - loop.time()))
        data = "[DONE]" if i == n else f'{{"token": {i}}}'
        await response.write(f"data: {data}\n\n".encode())
        due += gap
        if i == pause_after:
            due += pause
    await response.write_eof()
    return response


def main() -> None:
    port = int(sys.argv[1])
    app = web.Application()
    app.router.add_route("*", "/stream", stream)

    async def serve() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
