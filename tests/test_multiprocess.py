"""A sweep across two processes on JAX's distributed runtime (loopback coordinator, gloo CPU
collectives), through the quickstart's command line, against one process of the same mesh."""
import os
import re
import signal
import socket
import subprocess
import time

import numpy as np
import pytest
from conftest import PYTHON, REPO, fast_compile_env, run_module_env
from mechjax.distributed import HEARTBEAT_ENV_VAR

TINY = os.path.join(REPO, "experiments", "quickstart", "configs", "tiny.py")
# 12 chunks of 10 steps, a checkpoint after each: room to kill a process mid-run.
N_CHUNKS = 12
CONFIG = [f"--config={TINY}", f"--config.train.steps={10 * N_CHUNKS}",
          "--config.train.eval_every=10", "--config.chunk_evals=1"]
TIMEOUT = 300
# The coordination service's heartbeat timeout for these runs: a survivor of a killed process
# must exit by itself within it (plus the time to notice and shut down).
HEARTBEAT = 5
SURVIVOR_MARGIN = 40


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(workdir, log_dir, tag, n_processes, devices_per_process):
    """Start ``n_processes`` quickstart processes on one workdir; returns (popen, log path)s."""
    env = fast_compile_env(f"--xla_force_host_platform_device_count={devices_per_process}",
                           {HEARTBEAT_ENV_VAR: str(HEARTBEAT)})
    port = free_port()
    procs = []
    for i in range(n_processes):
        dist = ([f"--coordinator=127.0.0.1:{port}", f"--num_processes={n_processes}",
                 f"--process_id={i}"] if n_processes > 1 else [])
        path = os.path.join(log_dir, f"{tag}.{i}.log")
        with open(path, "w") as out:
            procs.append((subprocess.Popen(
                [PYTHON, "-m", "experiments.quickstart", f"--workdir={workdir}", *CONFIG, *dist],
                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT), path))
    return procs


def finish(procs):
    """Wait for every process; each must exit 0. Returns their logs."""
    logs = []
    for proc, path in procs:
        try:
            rc = proc.wait(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
        logs.append(open(path).read())
        assert rc == 0, f"{path} exited {rc}:\n{logs[-1][-3000:]}"
    return logs


def outputs(workdir):
    """Every array a finished run leaves: its metrics file and every parameter snapshot."""
    out = {f"metrics.npz/{k}": v for k, v in np.load(os.path.join(workdir, "metrics.npz")).items()}
    snaps = os.path.join(workdir, "snapshots")
    for name in sorted(os.listdir(snaps)):
        out.update({f"{name}/{k}": v for k, v in np.load(os.path.join(snaps, name)).items()})
    return out


def assert_bitwise_equal(a, b, what):
    assert sorted(a) == sorted(b), what
    differ = [k for k in a if a[k].dtype != b[k].dtype
              or not np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f")]
    assert not differ, f"{what}: not bit for bit equal: {differ[:5]}"


@pytest.mark.timeout(600)  # a whole tiny experiment: 30-75 s cold on 2 cores
def test_two_processes_equal_one_survive_a_sigkill_and_resume(tmp_path):
    logs = str(tmp_path)
    # The reference: one process holding both devices of the same 2-device seed mesh (with
    # another device count the seeds' float rounding differs by ~1e-6, so not bit for bit).
    one = str(tmp_path / "one")
    finish(start(one, logs, "one", 1, 2))
    reference = outputs(one)
    assert any(k.startswith(f"step_{10 * N_CHUNKS:09d}.npz/") for k in reference)

    # Two processes of one device each; SIGKILL process 1 only, once a checkpoint past the
    # first exists, before the run ends. The survivor must exit by itself (non-zero) once JAX's
    # coordination service misses process 1's heartbeats (HEARTBEAT s here, 100 s by default);
    # then a job launcher restarts both, and so does this test. (One two-process run serves
    # both checks: every chunk of the final result was computed by two processes, before the
    # kill or after the restart.)
    two = str(tmp_path / "two")
    procs = start(two, logs, "killed", 2, 1)
    ckpt = os.path.join(two, "checkpoints")
    deadline = time.time() + TIMEOUT
    while not (os.path.isdir(ckpt) and any(n.isdigit() and int(n) >= 2 for n in os.listdir(ckpt))):
        assert time.time() < deadline and all(p.poll() is None for p, _ in procs), \
            open(procs[0][1]).read()[-3000:]
        time.sleep(0.02)
    procs[1][0].send_signal(signal.SIGKILL)
    procs[1][0].wait(timeout=60)
    killed_at = time.monotonic()
    survivor = procs[0][0]
    try:
        rc = survivor.wait(timeout=HEARTBEAT + SURVIVOR_MARGIN)
    except subprocess.TimeoutExpired:
        survivor.kill()
        raise AssertionError(f"process 0 still running {HEARTBEAT + SURVIVOR_MARGIN} s after "
                             f"process 1 was killed:\n{open(procs[0][1]).read()[-3000:]}")
    survived_for = time.monotonic() - killed_at
    killed = [open(path).read() for _, path in procs]
    assert rc != 0, f"the survivor exited 0 without its peer:\n{killed[0][-3000:]}"
    assert survived_for < HEARTBEAT + SURVIVOR_MARGIN
    at_kill = sorted(int(n) for n in os.listdir(ckpt) if n.isdigit())
    assert at_kill and at_kill[-1] < N_CHUNKS, f"the run ended before the kill: {at_kill}"
    assert "on 2 device(s)" in killed[0]  # the mesh spans both processes
    # Each process holds and trains its own slice of the 3 seeds (padded to 4 rows).
    assert "process 0/2: trains seeds [0, 1] on 1 of 2 devices" in killed[0], killed[0][-2000:]
    assert "process 1/2: trains seeds [2] (+1 padding row) on 1 of 2 devices" in killed[1]

    out0, _ = finish(start(two, logs, "restart", 2, 1))
    resumed = re.search(r"resumed from the checkpoint after chunk (\d+)/", out0)
    assert resumed, out0[-2000:]
    assert at_kill[-1] <= int(resumed.group(1)) < N_CHUNKS  # never earlier than what was saved
    assert f"chunk {N_CHUNKS}/{N_CHUNKS}" in out0
    # One checkpoint series (orbax keeps the last two) and one metrics file, written together.
    assert sorted(os.listdir(ckpt)) == [str(N_CHUNKS - 1), str(N_CHUNKS)]
    assert_bitwise_equal(outputs(two), reference, "two processes, killed and resumed, vs one")
    assert open(os.path.join(two, "summary.json")).read() == \
        open(os.path.join(one, "summary.json")).read()


def test_a_bad_multiprocess_flag_is_one_line_before_anything_is_written(tmp_path):
    wd = tmp_path / "wd"
    proc = subprocess.run([PYTHON, "-m", "experiments.quickstart", f"--workdir={wd}", *CONFIG,
                           "--coordinator=127.0.0.1:1234", "--num_processes=2",
                           "--process_id=2"], cwd=REPO, env=run_module_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1] == ("error: --process_id=2: must be in 0..1 "
                                                    "(--num_processes=2)"), proc.stderr[-1500:]
    assert not wd.exists()
