"""examples/python/experiments.py runs, and what it prints holds: steering changed the text, the
capture has one row per layer, and the logit lens at the last layer predicts the token the model
generated."""

import os
import re
import subprocess
import sys

from conftest import ROOT


def test_experiments_example_runs():
    script = os.path.join(ROOT, "examples", "python", "experiments.py")
    proc = subprocess.run([sys.executable, script, "--max-tokens", "8"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    pairs = re.findall(r"plain:   (.*)\n  steered: (.*)", out)
    assert len(pairs) == 2 and any(a != b for a, b in pairs), out
    assert "residual stream [layers, hidden] = [30, 576]" in out, out
    m = re.search(r"last layer's prediction (.*), the model's next token (.*)", out)
    assert m and m.group(1) == m.group(2), out
