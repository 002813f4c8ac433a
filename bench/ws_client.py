"""The worker's WebSocket client, measured: Orbit's own client (``orbit_actors.http``) against
trio-websocket (what the worker used before), and the masking it does per frame.

    python bench/ws_client.py [--messages 20000] [--size 300]

Round trips: one client process sends ``--messages`` text messages of ``--size`` bytes to an
echo server (Orbit's transport, in a subprocess of its own) and reads them back, 200 in flight;
it prints the client's CPU per message for each client. Masking: microseconds to mask one
payload of each size with the big-integer XOR, ``bytes.translate`` and wsproto's masker.
Ends with one JSON line. Numbers for people, not assertions.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
import timeit
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import trio

from orbit_actors.http import frames, open_websocket

IN_FLIGHT = 200
SERVER = """
import trio, sys
from orbit_actors.http.application import Limits
from orbit_actors.http.http1 import Response
from orbit_actors.http.transport import Server, open_listeners
from orbit_actors.http.websocket import SocketClosed

class Echo:
    async def respond(self, request): return Response(404, b"{}")
    async def websocket(self, request, socket):
        await socket.accept()
        try:
            while True:
                await socket.send(await socket.receive())
        except SocketClosed:
            return None

async def main():
    listeners, urls = await open_listeners("127.0.0.1:0", None)
    server = Server(Echo(), Limits(1 << 24, 1 << 24), lambda s, m: Response(s, b"{}"))
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve, listeners, nursery)
        print(urls[0], flush=True)
        await trio.sleep_forever()

trio.run(main)
"""


@asynccontextmanager
async def echo_server() -> AsyncIterator[str]:
    """The echo server in a subprocess (so that only the client's CPU is this process's)."""
    process = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    try:
        yield "ws" + process.stdout.readline().strip()[4:]
    finally:
        process.terminate()
        process.wait(10)


Send = Callable[[str], Awaitable[None]]
Receive = Callable[[], Awaitable[object]]


async def pump(send: Send, receive: Receive, count: int, size: int) -> None:
    """``count`` messages out and back, at most :data:`IN_FLIGHT` unanswered."""
    window = trio.Semaphore(IN_FLIGHT)
    message = "x" * size

    async def sender() -> None:
        for _ in range(count):
            await window.acquire()
            await send(message)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender)
        for _ in range(count):
            await receive()
            window.release()


async def orbit_client(url: str, count: int, size: int) -> float:
    async with open_websocket(url, max_message_bytes=1 << 24) as ws:
        began = time.process_time()
        await pump(ws.send, ws.receive, count, size)
        return time.process_time() - began


async def trio_websocket_client(url: str, count: int, size: int) -> float:
    from trio_websocket import open_websocket_url

    async with open_websocket_url(url, max_message_size=1 << 24) as ws:
        began = time.process_time()
        await pump(ws.send_message, ws.get_message, count, size)
        return time.process_time() - began


async def round_trips(count: int, size: int) -> dict[str, float]:
    results = {}
    async with echo_server() as url:
        for name, client in (("orbit", orbit_client), ("trio_websocket", trio_websocket_client)):
            cpu = min([await client(url, count, size) for _ in range(3)])
            results[name] = cpu * 1e6 / count
    return results


def masking(
    sizes: tuple[int, ...] = (64, 300, 1024, 4096, 65536, 1 << 20),
) -> dict[str, dict[int, float]]:
    from wsproto.frame_protocol import XorMaskerSimple

    key = os.urandom(4)
    table = [bytes(b ^ k for b in range(256)) for k in key]

    def int_xor(payload: bytes) -> bytes:
        mask = (key * (len(payload) // 4 + 1))[: len(payload)]
        return (int.from_bytes(payload, "big") ^ int.from_bytes(mask, "big")).to_bytes(
            len(payload), "big"
        )

    def translate(payload: bytes) -> bytes:
        data = bytearray(payload)
        for lane in range(4):
            data[lane::4] = data[lane::4].translate(table[lane])
        return bytes(data)

    ways: dict[str, Callable[[bytes], object]] = {
        "int_xor": int_xor, "translate": translate, "orbit_unmask": lambda p: frames.unmask(p, key),
        "wsproto": lambda p: XorMaskerSimple(key).process(bytearray(p)),
    }  # fmt: skip
    found: dict[str, dict[int, float]] = {name: {} for name in ways}
    for size in sizes:
        payload = os.urandom(size)
        number = max(20, 200_000 // max(1, size // 64))
        for name, way in ways.items():
            timer = timeit.Timer(functools.partial(way, payload))
            best = min(timer.repeat(number=number, repeat=3))
            found[name][size] = round(best / number * 1e6, 2)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--size", type=int, default=300)
    args = parser.parse_args()
    per_message = trio.run(round_trips, args.messages, args.size)
    for name, us in per_message.items():
        print(f"{name:>15}: {us:6.1f} us of client CPU per message round trip ({args.size} B)")
    masks = masking()
    for name, by_size in masks.items():
        cells = "  ".join(f"{size}B {us:8.2f}" for size, us in by_size.items())
        print(f"{name:>15}: {cells}  (us per payload)")
    print(json.dumps({"client_us_per_message": per_message, "mask_us": masks}))


if __name__ == "__main__":
    main()
