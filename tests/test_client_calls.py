"""Both clients are one definition of the endpoints (:mod:`orbit_actors.api.calls`), and that
definition covers every route the server serves."""

from __future__ import annotations

import inspect
import re
from typing import Any

from orbit_actors.api.calls import Call
from orbit_actors.client import AsyncClient, Client
from orbit_actors.client.endpoint import Endpoint, Endpoints
from orbit_actors.server.api import ENDPOINTS


def endpoints() -> dict[str, Endpoint[Any, Any]]:
    return {name: value for name, value in vars(Endpoints).items() if isinstance(value, Endpoint)}


def sample_calls(endpoint: Endpoint[Any, Any]) -> list[Call[Any]]:
    """The endpoint's call with its required arguments, and with every optional string too."""
    parameters = inspect.signature(endpoint.build).parameters.values()
    required = [p for p in parameters if p.default is inspect.Parameter.empty]
    optional = [p for p in parameters if p.default is None and "str" in str(p.annotation)]
    args = {p.name: "x" for p in required}
    return [endpoint.build(**args), endpoint.build(**args, **{p.name: "y" for p in optional})]


def test_every_route_of_the_server_has_a_method_on_both_clients() -> None:
    sent = {(call.method, call.path) for e in endpoints().values() for call in sample_calls(e)}
    for route in ENDPOINTS:
        pattern = re.compile(re.sub(r"\{[a-z_]+\}", "[^/]+", route.path) + "$")
        assert any(method == route.method and pattern.match(path) for method, path in sent), (
            f"no client method sends {route.method} {route.path}"
        )


def test_the_two_clients_offer_the_same_methods() -> None:
    def methods(cls: type) -> set[str]:
        return {name for name in dir(cls) if not name.startswith("_")}

    assert methods(Client) - {"close"} == methods(AsyncClient) - {"aclose"}
    assert set(endpoints()) <= methods(Client)


def test_a_method_keeps_its_endpoints_name_and_promise() -> None:
    with Client("http://127.0.0.1:1") as client:
        assert client.start.__name__ == "start"
        assert client.start.__doc__ is not None and "one request" in client.start.__doc__
