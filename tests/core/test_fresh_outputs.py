"""Outputs are written as new files renamed into place (issue 22): a process that still
holds the old file open - a survivor of the agent's - writes into nothing anyone reads."""

from __future__ import annotations

import os

from checker.report.writes import OutputFiles


def test_a_descriptor_held_on_the_old_file_reaches_nothing(tmp_path):
    path = tmp_path / "report" / "results.json"
    path.parent.mkdir()
    path.write_text('{"forged": true}')
    held = os.open(path, os.O_WRONLY)  # opened by the agent before root writes the results
    try:
        assert OutputFiles().write(path, '{"passed": false}\n', "results file")
        os.lseek(held, 0, os.SEEK_SET)
        os.write(held, b'{"passed": true, "forged": 1}\n')  # the survivor keeps writing
    finally:
        os.close(held)
    assert path.read_text() == '{"passed": false}\n'
    assert sorted(p.name for p in path.parent.iterdir()) == ["results.json"]  # no temporary left


def test_a_symlink_in_the_outputs_place_is_replaced_not_followed(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep")
    path = tmp_path / "results.json"
    path.symlink_to(target)
    assert OutputFiles().write(path, "new\n", "results file")
    assert not path.is_symlink() and path.read_text() == "new\n" and target.read_text() == "keep"
