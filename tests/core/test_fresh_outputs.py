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


def test_a_device_is_written_through_never_replaced(tmp_path):
    """``--markdown /dev/stdout`` (or /dev/full in a test of a full disk) is not a file to
    rename over: it is written as before."""
    import stat

    assert OutputFiles().write(type(tmp_path)("/dev/null"), "x\n", "markdown report")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    assert not OutputFiles().write(type(tmp_path)("/dev/full"), "x\n", "results file")
    assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)
