"""An execution started without an id gets a new random UUID (execution.md), written as
``str(uuid.uuid4())`` writes one: :func:`~orbit_actors.actors.execution.uuid4_text` builds the
text from random hex digits without ``uuid.UUID``, so it is checked against it."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from orbit_actors.actors.execution import new_execution_id, uuid4_text


@given(st.binary(min_size=16, max_size=16))
def test_a_new_execution_id_is_the_text_of_the_version_4_uuid_of_its_random_bytes(
    random: bytes,
) -> None:
    assert uuid4_text(random.hex()) == str(uuid.UUID(bytes=random, version=4))


def test_new_execution_ids_are_version_4_uuids_and_differ() -> None:
    ids = [new_execution_id() for _ in range(1000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and str(parsed) == text
