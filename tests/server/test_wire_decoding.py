"""A worker's frame is decoded into its message in one pass when it is valid, and a frame that
is not one is explained as before (the protocol's code, the field at fault), whichever path it
takes: few brackets or many, text or bytes."""

from __future__ import annotations

import json

import pytest

from orbit_actors.wire import messages as wire

COMPLETE = {"type": "complete", "token": "t1", "output": {"n": [1, "é", None]}, "id": 4}


def test_a_complete_frame_is_decoded_into_its_model_from_text_and_bytes() -> None:
    text = json.dumps(COMPLETE)
    for frame in (text, text.encode()):
        message = wire.decode_worker_message(frame)
        assert message == wire.Complete(**COMPLETE)


def test_a_shallow_frame_with_many_brackets_is_decoded() -> None:
    output: list[list[int]] = [[] for _ in range(100)]  # 101 brackets, two levels deep
    message = wire.decode_worker_message(json.dumps({**COMPLETE, "output": output}))
    assert isinstance(message, wire.Complete) and message.output == output


def test_a_frame_nested_too_deep_is_refused_as_an_invalid_request() -> None:
    deep = {**COMPLETE, "output": json.loads("[" * 70 + "]" * 70)}
    with pytest.raises(wire.WireError) as caught:
        wire.decode_worker_message(json.dumps(deep))
    assert caught.value.code == "INVALID_REQUEST"


@pytest.mark.parametrize(
    ("frame", "code", "message"),
    [
        ('{"type":"complete","id":3}', "INVALID_MESSAGE", "token: Field required"),
        ('{"type":"fail","token":"t","error":{}}', "INVALID_MESSAGE", "error.code: Field required"),
        ('{"type":"nope","id":"r"}', "UNKNOWN_MESSAGE", "unknown message type 'nope'"),
        ("[1]", "INVALID_MESSAGE", "a message must be a JSON object"),
    ],
)
def test_a_frame_that_is_not_a_message_is_explained(frame: str, code: str, message: str) -> None:
    with pytest.raises(wire.WireError) as caught:
        wire.decode_worker_message(frame)
    assert (caught.value.code, caught.value.message) == (code, message)
