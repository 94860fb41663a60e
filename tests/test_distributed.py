"""Joining a multi-process run: the flag checks (the run itself: tests/test_multiprocess.py)."""
import re

import pytest

from mechjax.sweeps import distributed
from mechjax.models.config import ConfigError


@pytest.mark.parametrize("args, message", [
    (("localhost", 2, 0), "--coordinator='localhost': must be HOST:PORT with a port in 1..65535"),
    (("127.0.0.1:0", 2, 0), "--coordinator='127.0.0.1:0': must be HOST:PORT"),
    ((":1234", 2, 0), "--coordinator=':1234': must be HOST:PORT"),
    (("127.0.0.1:1234", None, 0), "needs --num_processes and --process_id"),
    (("127.0.0.1:1234", 2, None), "needs --num_processes and --process_id"),
    (("127.0.0.1:1234", 0, 0), "--num_processes=0: must be an integer >= 1"),
    (("127.0.0.1:1234", 2, 2), "--process_id=2: must be in 0..1 (--num_processes=2)"),
    (("127.0.0.1:1234", 2, -1), "--process_id=-1: must be in 0..1"),
    ((None, 2, None), "--num_processes given without --coordinator"),
    ((None, 2, 1), "--num_processes and --process_id given without --coordinator"),
])
def test_bad_arguments_are_one_line(args, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        distributed.check_args(*args)


@pytest.mark.parametrize("args", [(None, None, None), ("127.0.0.1:1234", 2, 1),
                                  ("auto", None, None), ("auto", 4, 3), ("[::1]:80", 1, 0)])
def test_good_arguments_pass(args):
    distributed.check_args(*args)


def test_a_single_process_needs_nothing_and_agrees_with_itself():
    assert distributed.initialize(None) is False
    distributed.barrier("single")  # returns at once
    assert distributed.agree(True) is True and distributed.agree(0) is False


def test_heartbeat_limit_from_env_is_validated(monkeypatch):
    monkeypatch.delenv(distributed.HEARTBEAT_ENV_VAR, raising=False)
    assert distributed.heartbeat_seconds_from_env() == 100
    monkeypatch.setenv(distributed.HEARTBEAT_ENV_VAR, "7")
    assert distributed.heartbeat_seconds_from_env() == 7
    for bad in ("soon", "0", "-3", "2.5"):
        monkeypatch.setenv(distributed.HEARTBEAT_ENV_VAR, bad)
        with pytest.raises(ConfigError, match=re.escape(f"MECHJAX_HEARTBEAT_SECONDS={bad!r}")):
            distributed.heartbeat_seconds_from_env()
