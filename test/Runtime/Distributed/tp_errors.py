"""nns-run --tensor-parallel-size's failures as a user meets them: each prints a clear error
naming the rank, exits non-zero, and leaves no rank behind or waiting.

Usage: tp_errors.py NNS_RUN GGUF
Prints one line per case, "CASE: exit N: <rank 0's error line>".
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time

nns_run, gguf = sys.argv[1:3]
base = [nns_run, "--model", gguf, "--threads", "1", "--quiet"]


def error_line(stderr):
    lines = [l for l in stderr.splitlines() if l.startswith("nns-run: error: rank 0")]
    return lines[0] if lines else stderr.strip().splitlines()[-1]


def children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


# A split the model does not allow (SmolLM2: 9 heads).
p = subprocess.run(base + ["--tensor-parallel-size", "2", "--prompt", "Hi"],
                   capture_output=True, text=True, timeout=120)
print(f"bad split: exit {p.returncode}: {error_line(p.stderr)}")

# The rendezvous port is taken.
taken = socket.socket()
taken.bind(("127.0.0.1", 0))
taken.listen()
port = taken.getsockname()[1]
env = dict(os.environ, MASTER_PORT=str(port), NNSC_DIST_TIMEOUT="10")
p = subprocess.run(base + ["--tensor-parallel-size", "3", "--prompt", "Hi"],
                   capture_output=True, text=True, timeout=120, env=env)
print(f"port in use: exit {p.returncode}: {error_line(p.stderr)}".replace(str(port), "PORT"))
taken.close()

# A rank killed mid-run: rank 0 stops with an error well before the timeout, and no rank is
# left running.
env = dict(os.environ, NNSC_DIST_TIMEOUT="30")
proc = subprocess.Popen(base + ["--tensor-parallel-size", "3", "--prompt", "Once upon a time",
                                "--max-tokens", "2000", "--ignore-eos"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
ranks = []
deadline = time.time() + 60
while len(ranks) < 2 and time.time() < deadline:
    time.sleep(0.5)
    ranks = children(proc.pid)
time.sleep(3)  # past loading, into the steps
os.kill(ranks[-1], signal.SIGKILL)
killed = time.time()
_, stderr = proc.communicate(timeout=120)
took = time.time() - killed
alive = [r for r in ranks if os.path.exists(f"/proc/{r}") and
         open(f"/proc/{r}/stat").read().split()[2] != "Z"]
# Which collective notices first depends on where rank 0 was in its step.
line = re.sub(r"rank 0: (all_reduce|all_gather|gather|broadcast) failed", "rank 0: OP failed",
              error_line(stderr)).split(" (another rank")[0]
print(f"rank killed: exit {proc.returncode}: {line}, "
      f"{'within' if took < 20 else 'after'} 20 s, {len(alive)} ranks left")
