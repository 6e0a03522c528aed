"""Running nns-run from a benchmark and reading its statistics: the one owner of nns-run's
summary-line format on the benchmark side (tools/nns-run/nns-run.cpp prints it).

    from nnsrun import ROOT, log, nns_run
    r = nns_run(build, model, prompts, ["--max-tokens", "256"])
    r["generated"], r["seconds"], r["decode"], r["rss"], r["outputs"]
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMBER = r"([0-9.e+-]+)"


def print_table(header, rows):
    """Prints a Markdown table of `rows` (lists of strings) under `header`."""
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def print_load_average():
    print("\nload average during the run: %s" % open("/proc/loadavg").read().split()[:3])


def log(msg, tag="bench"):
    print("[%s] %s" % (tag, msg), file=sys.stderr, flush=True)


def run_measured(cmd, env=None):
    """Runs cmd to the end; returns (stdout, stderr, peak RSS in bytes) of that process. Exits
    the benchmark with the command's stderr if it failed. The peak RSS (ru_maxrss) includes
    what the forked copy of this process held before exec (Linux keeps that high-water mark),
    so it is the child's own only while this process is smaller: keep big imports out of it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if returncode != 0:
        sys.exit("%s failed (%d): %s\n%s" % (cmd[0], returncode, " ".join(cmd), stderr[-4000:]))
    return stdout, stderr, usage.ru_maxrss * 1024


def parse_stats(stderr):
    """nns-run's statistics lines as numbers: prompt, generated, seconds, hits (prefix cache hit
    tokens), ttft and decode (tok/s after each request's first token; None without a second
    token), and under tensor parallelism comm_seconds, comm_ms_per_step and steps (else 0)."""
    line = next((l for l in stderr.splitlines() if l.startswith("requests ")), None)
    if line is None:
        sys.exit("nns-run printed no statistics line:\n" + stderr[-4000:])
    m = re.search(r"prompt tokens (\d+), generated (\d+) in %s s" % _NUMBER, line)
    hits = re.search(r"prefix cache hit tokens (\d+)", line)
    after = re.search(r"first token after %s s(?:, then %s tok/s)?" % (_NUMBER, _NUMBER), stderr)
    comm = re.search(r"spent %s s in \d+ collectives .* over (\d+) steps: %s ms per step"
                     % (_NUMBER, _NUMBER), stderr)
    return dict(prompt=int(m.group(1)), generated=int(m.group(2)), seconds=float(m.group(3)),
                hits=int(hits.group(1)) if hits else 0,
                ttft=float(after.group(1)) if after else None,
                decode=float(after.group(2)) if after and after.group(2) else None,
                comm_seconds=float(comm.group(1)) if comm else 0.0,
                steps=int(comm.group(2)) if comm else 0,
                comm_ms_per_step=float(comm.group(3)) if comm else 0.0)


def nns_run(build, model, prompts, extra=(), env=None, quiet=False):
    """Runs build/bin/nns-run greedy with EOS ignored on `prompts` (a list of --prompts JSONL
    objects, {"ids": [...], "max_tokens": N} or {"prompt": "..."}) with the extra flags. Returns
    parse_stats' numbers plus outputs (the --json result objects in request order), ids (their
    token ids), rss (peak bytes) and wall (seconds, loading included)."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for p in prompts:
            f.write(json.dumps(p) + "\n")
    cmd = [os.path.join(build, "bin", "nns-run"), "--model", model, "--prompts", f.name,
           "--json", "--temperature", "0", "--ignore-eos", *extra]
    if not quiet:
        log("$ " + " ".join(cmd))
    start = time.time()
    try:
        stdout, stderr, rss = run_measured(cmd, env)
    finally:
        os.unlink(f.name)
    outputs = [json.loads(l) for l in stdout.splitlines() if l.startswith("{")]
    outputs.sort(key=lambda r: r["request"])
    return dict(parse_stats(stderr), outputs=outputs, ids=[r["ids"] for r in outputs], rss=rss,
                wall=time.time() - start)
