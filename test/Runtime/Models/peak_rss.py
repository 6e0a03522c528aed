"""Peak resident set of two nns-run commands, and the difference against a bound.

  peak_rss.py MAX_EXTRA_MB -- BASE_CMD... -- OTHER_CMD...

Runs each command to completion (each in its own process, so its peak is its own), fails if
either fails, and prints "extra <OTHER - BASE> MB <= MAX_EXTRA_MB MB: ok" or exits non-zero
naming both peaks.
"""

import os
import subprocess
import sys


def peak_mb(cmd):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    stderr = proc.stderr.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit("FAIL: %s exited %d: %s" % (" ".join(cmd), code, stderr[-2000:]))
    return usage.ru_maxrss / 1024.0  # kB on Linux


def main():
    args = sys.argv[1:]
    if len(args) < 4 or args[1] != "--" or "--" not in args[2:]:
        sys.exit(__doc__)
    bound = float(args[0])
    split = args.index("--", 2)
    base, other = args[2:split], args[split + 1:]
    base_mb, other_mb = peak_mb(base), peak_mb(other)
    extra = other_mb - base_mb
    if extra > bound:
        sys.exit("FAIL: peak RSS %.0f MB against %.0f MB: %.0f MB more, over %.0f MB"
                 % (other_mb, base_mb, extra, bound))
    print("extra %.0f MB <= %.0f MB: ok" % (extra, bound))


if __name__ == "__main__":
    main()
