"""Helpers the scripts that start `dpushard worker` processes share (soak.py, node_loss_bench.py)."""
import os
import signal
import subprocess
import time


def wait_for_file(path, process, who, seconds):
    """The stripped contents of `path` (a worker's --port-file) once the worker has written it.

    Exits naming `who` when the worker ends first or `seconds` pass without the file."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            with open(path) as f:
                return f.read().strip()
        if process.poll() is not None:
            raise SystemExit(f"{who}: worker exited with {process.returncode} before listening")
        time.sleep(0.05)
    raise SystemExit(f"{who}: no {path} after {seconds} s")


def stop_workers(processes, seconds=10):
    """SIGTERM every worker still running, then wait for each; SIGKILL one that outlives `seconds`."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            process.kill()
