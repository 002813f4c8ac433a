"""The API clients: :class:`Client` (synchronous) and :class:`AsyncClient` (asynchronous, for
trio or asyncio), over httpx, with one method per endpoint of http-api.md answering the API's
pydantic models.

Both send the calls of :mod:`orbit_actors.api.calls`, so they cannot drift apart. Every refusal is
raised as :class:`ApiError` carrying the API's ``code``, ``message`` and HTTP ``status``; a
server that cannot be reached is ``ApiError("UNAVAILABLE", …)``.

::

    with Client("http://127.0.0.1:7233") as orbit:
        orbit.deploy(Path("order.yaml").read_text())
        done = orbit.start("order", input={"amount": 5}, wait=60)
        print(done.status, done.output)

    async with AsyncClient("http://127.0.0.1:7233") as orbit:
        done = await orbit.start("order", input={"amount": 5}, wait=60)
"""

from ..api.calls import MAX_WAIT
from .aio import AsyncClient
from .answers import ApiError
from .settings import DEFAULT_URL
from .sync import Client

__all__ = ["DEFAULT_URL", "MAX_WAIT", "ApiError", "AsyncClient", "Client"]
