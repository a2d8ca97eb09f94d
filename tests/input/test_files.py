"""The hardened file layer: regular files only, bounded reads, strict text."""

from __future__ import annotations

import io
import os
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from metis_runtime import _input
from metis_runtime._input import configure_input_limits
from metis_runtime._input import input_lines
from metis_runtime._input import read_input_bytes
from metis_runtime._input import read_input_json
from metis_runtime._input import read_input_text
from metis_trace import InputError
from metis_trace import JsonLimits
from metis_trace import json_limits


def _error(path: str | Path, **kw: int) -> InputError:
    with pytest.raises(InputError) as info:
        read_input_bytes(path, **kw)
    assert "\n" not in str(info.value)
    return info.value


def test_a_regular_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b'{"a": [1, 2]}\n')
    assert read_input_bytes(path) == b'{"a": [1, 2]}\n'
    assert read_input_json(path) == {"a": [1, 2]}


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert _error(fifo).message == "not a regular file (a FIFO)"
    assert time.monotonic() - started < 1


def test_devices_directories_and_sockets_are_refused(tmp_path: Path) -> None:
    assert _error("/dev/zero").message == "not a regular file (a character device)"
    assert _error("/dev/null").message == "not a regular file (a character device)"
    assert _error(tmp_path).message == "not a regular file (a directory)"
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        assert _error(sock_path).message == "not a regular file (a socket)"


def test_a_symlink_to_a_device_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "trace.jsonl"
    link.symlink_to("/dev/zero")
    err = _error(link)
    assert err.message == "not a regular file (a character device)"
    assert err.source == str(link)


def test_a_fifo_swapped_in_after_the_check_cannot_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the pre-open check cannot close: O_NONBLOCK and the fstat do."""
    path = tmp_path / "t.jsonl"
    path.write_text("{}")
    real_open = os.open

    def swap_then_open(name: str, flags: int, *args: int) -> int:
        os.unlink(name)
        os.mkfifo(name)
        return real_open(name, flags, *args)

    monkeypatch.setattr(_input.os, "open", swap_then_open)
    done: list[InputError] = []

    def read() -> None:
        with pytest.raises(InputError) as info:
            read_input_bytes(path)
        done.append(info.value)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    assert done and done[0].message == "not a regular file (a FIFO)"


def test_a_missing_file_names_itself(tmp_path: Path) -> None:
    err = _error(tmp_path / "nope.jsonl")
    assert str(err) == f"{tmp_path / 'nope.jsonl'}: cannot read (No such file or directory)"


def test_reads_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 101)
    assert read_input_bytes(path, limit=101) == b"x" * 101
    assert "larger than the input limit of 100 bytes" in _error(path, limit=100).message
    monkeypatch.setenv("METIS_MAX_INPUT_BYTES", "50")
    configure_input_limits()
    try:
        assert "input limit of 50 bytes (set METIS_MAX_INPUT_BYTES)" in _error(path).message
    finally:
        monkeypatch.delenv("METIS_MAX_INPUT_BYTES")
        configure_input_limits()


def test_a_file_growing_past_the_limit_while_read_is_refused(tmp_path: Path) -> None:
    """/proc files report size 0 and still have content: the read itself is bounded."""
    assert read_input_bytes("/proc/self/status", limit=1 << 20).startswith(b"Name:")
    assert "input limit of 10 bytes" in _error("/proc/self/status", limit=10).message


def test_bad_limits_in_the_environment_are_one_line_errors() -> None:
    for name in ("METIS_MAX_INPUT_BYTES", "METIS_MAX_JSON_DEPTH", "METIS_MAX_JSON_INT"):
        for bad in ("nan", "-1", "0", "1e6", "12abc"):
            with pytest.raises(InputError) as info:
                configure_input_limits({name: bad})
            assert str(info.value) == f"environment: {name}={bad!r}: expected a positive integer"
    configure_input_limits({"METIS_MAX_JSON_DEPTH": "7"})
    assert json_limits() == JsonLimits(max_depth=7)
    configure_input_limits()
    assert json_limits() == JsonLimits()


def test_stdin_is_read_through_the_same_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stdin:
        buffer = io.BytesIO(b"y" * 30)

    monkeypatch.setattr(sys, "stdin", Stdin())
    assert read_input_bytes("-", limit=30) == b"y" * 30
    Stdin.buffer = io.BytesIO(b"y" * 31)
    err = _error("-", limit=30)
    assert str(err).startswith("<stdin>: larger than the input limit of 30 bytes")


def test_text_is_strict_utf8_and_the_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "\xff"}\n')
    with pytest.raises(InputError) as info:
        read_input_text(path)
    assert str(info.value) == f"{path}: line 2: not UTF-8 text (at byte column 8)"
    path.write_bytes(b'\xef\xbb\xbf{"bom": true}')  # RFC 8259 section 8.1 lets a parser skip it
    assert read_input_json(path) == {"bom": True}


def test_json_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{\n "permissions": {"allow": [NaN]}\n}')
    with pytest.raises(InputError) as info:
        read_input_json(path)
    assert str(info.value) == f"{path}: line 2: permissions.allow[0]: NaN is not a JSON number"


def test_lines_split_on_line_feeds_only() -> None:
    assert input_lines('{"a": "x\u2028y"}\n{"b": "\x85"}\r\n') == [
        '{"a": "x\u2028y"}',
        '{"b": "\x85"}\r',
        "",
    ]
