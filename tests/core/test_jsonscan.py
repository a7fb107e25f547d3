"""checker/inputs/jsonscan.py reads a large JSON file in chunks: every element, its text, line and
byte offsets must be what reading the whole file gives, wherever the chunks are cut."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checker.inputs.jsonscan import Irregular, read_spans, scan_array_member

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=12)


def _write(tmp_path, others, items, *, indent, bom, crlf, ascii_only):
    document = {**others, "runs": items}
    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only)
    if crlf:
        text = text.replace("\n", "\r\n")
    path = tmp_path / "big.json"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


@settings(max_examples=150, deadline=None)
@given(others=st.dictionaries(st.sampled_from(["version", "metadata", "x"]), values, max_size=3),
       items=st.lists(values, max_size=8), chunk=st.integers(1, 40), indent=st.sampled_from([None, 1, 2]),
       bom=st.booleans(), crlf=st.booleans(), ascii_only=st.booleans())
def test_elements_are_what_the_whole_file_holds(tmp_path_factory, others, items, chunk, indent, bom, crlf,
                                                ascii_only):
    tmp_path = tmp_path_factory.mktemp("scan")
    path = _write(tmp_path, others, items, indent=indent, bom=bom, crlf=crlf, ascii_only=ascii_only)
    raw = path.read_bytes()
    seen = []

    def visit(element):
        text = element.text()
        assert json.loads(text) == element.value
        assert raw[element.byte_start:element.byte_end].decode("utf-8") == text
        line = raw[:element.byte_start].count(b"\n") + 1
        assert element.line == line
        seen.append((element.byte_start, element.byte_end))
        return element.value

    found_others, key, got = scan_array_member(path, ("runs", "Runs"), visit, chunk=chunk)
    assert key == "runs" and got == items and found_others == others
    assert [json.loads(t) for t in read_spans(path, seen)] == items


@pytest.mark.parametrize("text", [
    '[1, 2]', '{"runs": [1], "runs": [2]}', '{"runs": 3}', '{"runs": [1], "Runs": [2]}',
    '{"a": {"b": 1, "b": 2}, "runs": []}', '{"runs": []} x', '{"a": 1 "runs": []}',
])
def test_other_shapes_are_irregular(tmp_path, text):
    path = tmp_path / "f.json"
    path.write_text(text)
    with pytest.raises(Irregular):
        scan_array_member(path, ("runs", "Runs"), lambda e: e.value, chunk=2)


@pytest.mark.parametrize("text", ['{"runs": [1, 2', '{"runs": [{"a": tru}]}', '{"runs": [1,]}'])
def test_broken_json_is_a_decode_error(tmp_path, text):
    path = tmp_path / "f.json"
    path.write_text(text)
    with pytest.raises((json.JSONDecodeError, Irregular)):
        scan_array_member(path, ("runs",), lambda e: e.value, chunk=3)


def test_a_number_cut_by_a_chunk_is_read_whole(tmp_path):
    path = tmp_path / "f.json"
    path.write_text('{"runs": [123456789, 2]}')
    for chunk in range(1, 25):
        assert scan_array_member(path, ("runs",), lambda e: e.value, chunk=chunk)[2] == [123456789, 2]


def test_lone_surrogates_are_replaced_wherever_a_chunk_cuts(tmp_path):
    """As the whole-file reader does (checker/safety/surrogates.py): a lone surrogate becomes
    U+FFFD in members, keys and elements; a pair, even cut by a chunk, stays one character."""
    path = tmp_path / "f.json"
    path.write_text('{"version": "\\ud800", "runs": [{"t\\udc00": "a\\uD800b\\ud83d\\ude00"}, "\\udfff", "c"]}')
    for chunk in range(1, 30):
        others, _, items = scan_array_member(path, ("runs",), lambda e: e.value, chunk=chunk)
        assert others == {"version": "\ufffd"}
        assert items == [{"t\ufffd": "a\ufffdb\U0001F600"}, "\ufffd", "c"]
