"""Shared fixtures of the HTTP and WebSocket tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio


@pytest.fixture
async def socket_pair() -> AsyncIterator[tuple[trio.SocketStream, trio.socket.SocketType]]:
    """A connected pair of local sockets: ours as a plain ``SocketStream``, and the peer's bare
    socket; both closed after the test (in trio's run, which a close tells)."""
    ours, theirs = trio.socket.socketpair()
    yield trio.SocketStream(ours), theirs
    ours.close()
    theirs.close()
