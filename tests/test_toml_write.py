"""Identity documents are written with tomli-w: whatever the keys and strings, the file
reads back as the document (None values left out: TOML has no null)."""

from __future__ import annotations

import tomllib

from hypothesis import given
from hypothesis import strategies as st

from registry.checkpoint.document import to_toml

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))
documents = st.recursive(
    st.dictionaries(st.text(min_size=1, max_size=10), scalars, max_size=5),
    lambda inner: st.dictionaries(st.text(min_size=1, max_size=10), st.one_of(
        scalars, inner, st.lists(inner, max_size=3)), max_size=5),
    max_leaves=20)


def without_none(value):
    if isinstance(value, dict):
        return {k: without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_none(v) for v in value if v is not None]
    return value


@given(documents)
def test_written_toml_reads_back(doc) -> None:
    assert tomllib.loads(to_toml(doc)) == without_none(doc)


def test_keys_that_need_quotes_and_arrays_of_tables() -> None:
    doc = {"a b": 'say "hi"\\', "rows": [{"n": 1}, {"n": 2}], "t": {"x.y": [1, 2]}}
    text = to_toml(doc)
    assert '"a b"' in text and '"x.y"' in text
    assert tomllib.loads(text) == doc
