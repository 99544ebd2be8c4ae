"""A sweep on a real Ray cluster: a head started with ``ray start --head`` on 127.0.0.1, the
CLI joining it with ``--address``, one worker process killed mid-sweep.

Shown: the sweep still completes, every cell is stored exactly once, and every stored result is
identical (bit for bit) to a serial run of the same grid. The cluster lives only on the loopback
interface (its node address is 127.0.0.1, every port is a free local one) and is shut down by
signalling the ``ray start --block`` process this test started, which stops its own children.

Runs when Ray is installed (CI installs the ``[ray]`` extra; under CI a missing Ray is a
failure, not a skip). Takes about a minute on 2 cores.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from theorylab.grid_file import load_grid_file
from theorylab.results import load_result
from theorylab.sweeps import open_sweep, sweep

if os.environ.get("CI") and os.environ.get("THEORYLAB_SKIP_RAY") is None:
    import ray  # noqa: F401  (CI installs the [ray] extra: fail loudly if it is missing)
else:
    pytest.importorskip("ray")

BIN = Path(sys.executable).parent
GRID = """
episodes = {episodes}
seeds = 4
mdps = ["riverswim:S=6,H=10"]
algorithms = ["ucbvi-bernstein", "ucbvi-hoeffding", "psrl", "greedy"]
"""


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def _loopback_env() -> dict[str, str]:
    env = dict(os.environ)
    # Ray replaces 127.0.0.1 in an address by the machine's network address unless "cluster
    # mode" is off; off, every Ray process of this test talks over the loopback interface only.
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")])
    return env


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])


def _descends_from(pid: int, ancestor: int) -> bool:
    with contextlib.suppress(OSError, ValueError, IndexError):
        while pid > 1:
            if pid == ancestor:
                return True
            pid = _ppid(pid)
    return False


def _running_cell_workers(head: int) -> list[int]:
    """Worker processes of *our* cluster (descendants of our ``ray start``) running a cell."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if title.startswith(b"ray::_run_cell") and _descends_from(int(entry.name), head):
            out.append(int(entry.name))
    return out


@pytest.fixture
def ray_head(tmp_path_factory):
    """``ray start --head --block`` on 127.0.0.1 with free ports; yields (address, pid)."""
    temp = Path(f"/tmp/tlray-{os.getpid()}")  # short: Ray's unix socket paths must fit 107 bytes
    ports = _free_ports(9)
    worker_ports = _free_ports(1)[0]
    cmd = [
        str(BIN / "ray"),
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        f"--port={ports[0]}",
        f"--node-manager-port={ports[1]}",
        f"--object-manager-port={ports[2]}",
        f"--dashboard-agent-listen-port={ports[4]}",
        f"--dashboard-agent-grpc-port={ports[5]}",
        f"--metrics-export-port={ports[6]}",
        f"--runtime-env-agent-port={ports[7]}",
        f"--dashboard-port={ports[8]}",
        f"--min-worker-port={worker_ports}",
        f"--max-worker-port={worker_ports + 40}",
        "--include-dashboard=false",
        "--disable-usage-stats",
        "--num-cpus=2",
        "--object-store-memory=100000000",
        f"--temp-dir={temp}",
    ]
    log = tmp_path_factory.mktemp("ray") / "head.log"
    with open(log, "wb") as fh:
        head = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_loopback_env())
    address = f"127.0.0.1:{ports[0]}"
    try:
        deadline = time.monotonic() + 90
        while b"Ray runtime started" not in log.read_bytes():
            if head.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"ray start did not come up:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield address, head.pid
    finally:
        head.send_signal(signal.SIGTERM)  # --block: stops the cluster's own processes
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
        shutil.rmtree(temp, ignore_errors=True)


def test_sweep_survives_a_killed_ray_worker_and_matches_serial(ray_head, tmp_path):
    address, head_pid = ray_head
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID.format(episodes=2500))
    store = tmp_path / "store"
    t0 = time.monotonic()
    sweep_cmd = [
        str(BIN / "theorylab"),
        "sweep",
        str(grid),
        "--store",
        str(store),
        "--executor",
        "ray",
        "--address",
        address,
    ]
    proc = subprocess.Popen(
        sweep_cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=_loopback_env(),
        cwd=tmp_path,
    )
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and proc.poll() is None and time.monotonic() < deadline:
        workers = _running_cell_workers(head_pid)
        if workers:
            time.sleep(0.5)  # let it get into the cell
            with contextlib.suppress(ProcessLookupError):
                os.kill(workers[0], signal.SIGKILL)
                killed = workers[0]
        time.sleep(0.1)
    out, _ = proc.communicate(timeout=300)
    text = out.decode("utf-8", "replace")
    seconds = time.monotonic() - t0
    assert killed is not None, f"no worker was running a cell to kill:\n{text}"
    assert proc.returncode == 0, text
    assert "4 computed, 0 already stored, 0 failed, of 4 cells" in text, text
    # the driver joined the head on the loopback address it was given, not a network address
    assert f"Connecting to existing Ray cluster at address: {address}" in text, text

    cells = load_grid_file(grid)
    stored = open_sweep(store)
    assert sorted(c.id for c in stored.completed) == sorted(c.id for c in cells)
    cell_dirs = [p for p in store.iterdir() if p.is_dir()]
    assert len(cell_dirs) == len(cells)  # each cell exactly once, no stray directory

    serial = sweep(cells, directory=tmp_path / "serial", executor="serial", progress=False)
    for cell in cells:
        got = load_result(stored.path(cell))
        want = serial.result(cell)
        for name in ("regret", "returns", "value_estimates"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    print(f"ray sweep with one worker killed (pid {killed}): {seconds:.1f} s")
