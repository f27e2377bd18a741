"""A gRPC server on grpcio, a stack nobody on this project wrote, for
tests/it/grpc.rs: the service greet.Greeter of tests/grpc/greet.proto,
served through generic handlers with its few fields encoded and decoded
here by hand (nothing is generated from the .proto at run time).

    python3 tests/grpc_server.py PORT COUNTS_FILE [--workers N] [--times]
                                 [--lifetime SECONDS] [--tls CERT KEY]

Listens on 127.0.0.1:PORT (0: a port of the system's choosing; with
--tls, TLS with that PEM certificate and key) and prints
"ready PORT" once it does. It counts what it receives: calls per method,
SayHello calls it failed on purpose, the names SayHello was given, the
metadata fields whose names start with "x-" (as "name=value"), and the
stream messages it sent. With --times it also keeps when it finished each
SayHello call, as [Unix seconds, name], in the order it finished them.

On SIGUSR1 it writes those counts to COUNTS_FILE as one JSON object and
goes on; on SIGTERM it stops serving, writes them, and exits 0. Either
write replaces the file whole (written aside, then renamed). It exits by
itself after --lifetime seconds (default 900), so that a forgotten one
does not serve forever.

The methods:
  SayHello(HelloRequest{name, fail_every}) -> HelloReply{message, seq}:
      "hello NAME" and the call's number among all SayHello calls received;
      with fail_every = N > 0, every Nth call received is aborted with
      UNAVAILABLE (a trailers-only response: no message, the status in
      the head).
  Countdown(StreamRequest{count, interval_ms}) -> stream HelloReply:
      `count` replies, the first at once, then one every interval_ms
      (due times from the call's arrival, so gaps do not drift).
  Collect(stream HelloRequest) -> HelloReply: reads them all, answers
      how many; only there for a client to refuse to call.
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
from concurrent import futures

import grpc


# --- protobuf's wire format, for the few fields of greet.proto ---------------

def _varint(value: int) -> bytes:
    """A varint; negative numbers as their 64-bit two's complement."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int):
    result = 0
    shift = 0
    for _ in range(10):
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    raise ValueError("varint longer than 10 bytes")


def _signed32(value: int) -> int:
    value &= (1 << 64) - 1
    if value >= 1 << 63:
        value -= 1 << 64
    return max(-(1 << 31), min((1 << 31) - 1, value))


def _fields(data: bytes):
    """(field number, value) of each field: an int for varints, bytes for
    length-delimited fields; fixed-width fields are skipped."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
            yield number, value
        elif wire == 2:
            length, pos = _read_varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field")
            yield number, data[pos:pos + length]
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"wire type {wire} not understood")
    if pos != len(data):
        raise ValueError("truncated field")


def decode_hello_request(data: bytes) -> dict:
    msg = {"name": "", "fail_every": 0}
    for number, value in _fields(data):
        if number == 1 and isinstance(value, bytes):
            msg["name"] = value.decode("utf-8")
        elif number == 2 and isinstance(value, int):
            msg["fail_every"] = _signed32(value)
    return msg


def decode_stream_request(data: bytes) -> dict:
    msg = {"count": 0, "interval_ms": 0}
    for number, value in _fields(data):
        if number == 1 and isinstance(value, int):
            msg["count"] = _signed32(value)
        elif number == 2 and isinstance(value, int):
            msg["interval_ms"] = _signed32(value)
    return msg


def encode_hello_reply(reply: dict) -> bytes:
    out = bytearray()
    message = reply.get("message", "").encode("utf-8")
    if message:
        out += b"\x0a" + _varint(len(message)) + message
    seq = reply.get("seq", 0)
    if seq:
        out += b"\x10" + _varint(seq)
    return bytes(out)


# --- the service ---------------------------------------------------------------

class Counts:
    """What the server received, under one lock."""

    def __init__(self, keep_times: bool) -> None:
        self.lock = threading.Lock()
        self.calls = {"SayHello": 0, "Countdown": 0, "Collect": 0}
        self.failed = 0
        self.names = {}
        self.metadata = {}
        self.messages_sent = 0
        self.keep_times = keep_times
        self.finished = []

    def received(self, method: str, context) -> int:
        """Counts a call of `method` and its x- metadata; returns its
        number among the calls of that method."""
        tagged = [
            f"{k}={v}"
            for k, v in context.invocation_metadata()
            if k.startswith("x-") and isinstance(v, str)
        ]
        with self.lock:
            self.calls[method] += 1
            for t in tagged:
                self.metadata[t] = self.metadata.get(t, 0) + 1
            return self.calls[method]

    def snapshot(self) -> dict:
        with self.lock:
            doc = {
                "calls": dict(self.calls),
                "failed": self.failed,
                "names": dict(self.names),
                "metadata": dict(self.metadata),
                "messages_sent": self.messages_sent,
            }
            if self.keep_times:
                doc["finished"] = list(self.finished)
            return doc


def handlers(counts: Counts):
    def say_hello(request: dict, context):
        seq = counts.received("SayHello", context)
        name = request["name"]
        every = request["fail_every"]
        with counts.lock:
            counts.names[name] = counts.names.get(name, 0) + 1
            fail = every > 0 and seq % every == 0
            if fail:
                counts.failed += 1
            if counts.keep_times:
                counts.finished.append([time.time(), name])
        if fail:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"call {seq} failed as asked")
        return {"message": f"hello {name}", "seq": seq}

    def countdown(request: dict, context):
        seq = counts.received("Countdown", context)
        interval = max(0, request["interval_ms"]) / 1000.0
        due = time.monotonic()
        for i in range(max(0, request["count"])):
            if i > 0:
                due += interval
                time.sleep(max(0.0, due - time.monotonic()))
            if not context.is_active():
                return
            # Counted as it is handed over, so that a stream cut at the
            # end never shows more messages at the client than here.
            with counts.lock:
                counts.messages_sent += 1
            yield {"message": f"{request['count'] - i}", "seq": seq}

    def collect(requests, context):
        counts.received("Collect", context)
        n = sum(1 for _ in requests)
        return {"message": f"collected {n}", "seq": n}

    return grpc.method_handlers_generic_handler(
        "greet.Greeter",
        {
            "SayHello": grpc.unary_unary_rpc_method_handler(
                say_hello,
                request_deserializer=decode_hello_request,
                response_serializer=encode_hello_reply,
            ),
            "Countdown": grpc.unary_stream_rpc_method_handler(
                countdown,
                request_deserializer=decode_stream_request,
                response_serializer=encode_hello_reply,
            ),
            "Collect": grpc.stream_unary_rpc_method_handler(
                collect,
                request_deserializer=decode_hello_request,
                response_serializer=encode_hello_reply,
            ),
        },
    )


def write_counts(path: str, counts: Counts) -> None:
    aside = f"{path}.part"
    with open(aside, "w") as f:
        json.dump(counts.snapshot(), f)
        f.write("\n")
    os.replace(aside, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("port", type=int)
    p.add_argument("counts_file")
    p.add_argument("--workers", type=int, default=64,
                   help="threads serving calls (a streaming call holds one)")
    p.add_argument("--times", action="store_true",
                   help="keep when each SayHello call finished, and its name")
    p.add_argument("--lifetime", type=float, default=900.0)
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"),
                   help="serve TLS (h2 by ALPN) with this PEM certificate and key")
    args = p.parse_args()

    counts = Counts(args.times)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=args.workers),
        handlers=[handlers(counts)],
        options=[("grpc.so_reuseport", 0)],
    )
    try:
        address = f"127.0.0.1:{args.port}"
        if args.tls:
            with open(args.tls[0], "rb") as c, open(args.tls[1], "rb") as k:
                creds = grpc.ssl_server_credentials([(k.read(), c.read())])
            port = server.add_secure_port(address, creds)
        else:
            port = server.add_insecure_port(address)
    except RuntimeError:  # grpcio raises where older releases returned 0
        port = 0
    if port == 0:
        # Where a test's helper looks for why it did not start (a port
        # taken meanwhile: it tries another).
        why = f"cannot listen on 127.0.0.1:{args.port}: address in use?"
        with open(args.counts_file, "w") as f:
            json.dump({"error": why}, f)
        sys.exit(why)
    server.start()

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    signal.signal(signal.SIGUSR1, lambda *_: write_counts(args.counts_file, counts))
    print(f"ready {port}", flush=True)

    # Wakes now and then so that the signal handlers run promptly.
    deadline = time.monotonic() + args.lifetime
    while not done.is_set() and time.monotonic() < deadline:
        done.wait(0.2)
    server.stop(grace=None).wait(5)
    write_counts(args.counts_file, counts)


if __name__ == "__main__":
    main()
