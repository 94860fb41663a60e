"""A sweep across two processes on JAX's distributed runtime (loopback coordinator, gloo CPU
collectives), through the quickstart's command line, against one process of the same mesh; one
of the two is killed, the other must exit by itself, and the restart resumes bit for bit."""
import os
import re
import signal
import socket
import subprocess
import textwrap
import time

import numpy as np
import pytest
from cli_fixtures import run_module_here
from conftest import PYTHON, REPO, fast_compile_env
from mechjax.sweeps.distributed import HEARTBEAT_ENV_VAR

TINY = os.path.join(REPO, "experiments", "quickstart", "configs", "tiny.py")
# 8 chunks of 5 steps, a checkpoint after each: room to kill a process mid-run.
N_CHUNKS, CHUNK_STEPS = 8, 5
OVERRIDES = {"train.steps": CHUNK_STEPS * N_CHUNKS, "train.eval_every": CHUNK_STEPS,
             "chunk_evals": 1}
CONFIG = [f"--config={TINY}", *(f"--config.{k}={v}" for k, v in OVERRIDES.items())]
TIMEOUT = 300
# The coordination service's heartbeat timeout for these runs: a survivor of a killed process
# must exit by itself within it (plus the time to notice and shut down).
HEARTBEAT = 5
SURVIVOR_MARGIN = 40


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_with(devices_per_process):
    return fast_compile_env(f"--xla_force_host_platform_device_count={devices_per_process}",
                            {HEARTBEAT_ENV_VAR: str(HEARTBEAT)})


def start(workdir, log_dir, tag, n_processes, devices_per_process):
    """Start ``n_processes`` quickstart processes on one workdir; returns (popen, log path)s."""
    env = env_with(devices_per_process)
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


# One process of both devices: the uninterrupted reference in one workdir, then the restart of
# the killed two-process run in another (its config given as the command line gave it, so the
# workdir's config check applies). One process, one compiled program, for both.
RESTART = textwrap.dedent("""
    import sys
    from experiments.quickstart import run
    from experiments.quickstart.configs import tiny
    config = tiny.get_config()
    for key, value in OVERRIDES.items():
        *section, name = key.split(".")
        (config[section[0]] if section else config)[name] = value
    for workdir in sys.argv[1:]:
        print(f"=== {workdir}", file=sys.stderr, flush=True)
        run.run(config, workdir)
""")


@pytest.mark.timeout(600)  # three fresh JAX processes: 30-60 s cold on 2 cores
def test_two_processes_survive_a_sigkill_of_one_and_resume_equal_to_one(tmp_path):
    logs = str(tmp_path)
    # Two processes of one device each; SIGKILL process 1 only, once a checkpoint past the
    # first exists, before the run ends. The survivor must exit by itself (non-zero) once JAX's
    # coordination service misses process 1's heartbeats (HEARTBEAT s here, 100 s by default).
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

    # The reference (one process holding both devices of the same 2-device seed mesh: with
    # another device count the seeds' float rounding differs by ~1e-6, so not bit for bit), then
    # the restart of the killed run on that same one process. The final result's chunks up to
    # the checkpoint were computed by two processes, the rest after the restart: equal bit for
    # bit to the reference means both the two-process training and the resume are exact.
    one = str(tmp_path / "one")
    script = tmp_path / "restart.py"
    script.write_text(f"OVERRIDES = {OVERRIDES!r}\n" + RESTART)
    proc = subprocess.run([PYTHON, str(script), one, two], cwd=REPO, env=env_with(2),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    restart_log = proc.stderr.split(f"=== {two}")[1]
    resumed = re.search(r"resumed from the checkpoint after chunk (\d+)/", restart_log)
    assert resumed, restart_log[-2000:]
    assert at_kill[-1] <= int(resumed.group(1)) < N_CHUNKS  # never earlier than what was saved
    assert f"chunk {N_CHUNKS}/{N_CHUNKS}" in restart_log[resumed.end():]
    # One checkpoint series (orbax keeps the last two) and one metrics file, written together.
    assert sorted(os.listdir(ckpt)) == [str(N_CHUNKS - 1), str(N_CHUNKS)]
    reference = outputs(one)
    assert any(k.startswith(f"step_{CHUNK_STEPS * N_CHUNKS:09d}.npz/") for k in reference)
    assert_bitwise_equal(outputs(two), reference, "two processes, killed and resumed, vs one")
    assert open(os.path.join(two, "summary.json")).read() == \
        open(os.path.join(one, "summary.json")).read()


def test_a_bad_multiprocess_flag_is_one_line_before_anything_is_written(tmp_path):
    """The quickstart's command line in this process (the distributed flags are checked before
    JAX or the workdir is touched; every refusal's wording: test_distributed.py)."""
    wd = tmp_path / "wd"
    code = run_module_here("experiments.quickstart", [
        f"--workdir={wd}", *CONFIG, "--coordinator=127.0.0.1:1234", "--num_processes=2",
        "--process_id=2"])
    assert code == "error: --process_id=2: must be in 0..1 (--num_processes=2)"
    assert not wd.exists()
