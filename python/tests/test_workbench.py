"""The browser workbench (docs/Server.md, "Workbench") in a real browser: headless Chromium,
driven through chromium-driver by Selenium, against a live nns-serve with an API key. The page
is checked by its DOM, and what it shows against the server's own answer to the same request
(which test_client.py checks against nnsc.LLM and nns-run). Screenshots of the logit-lens grid
and the attention heatmaps are kept in <build>/test-artifacts/workbench/."""

import base64
import json
import os
import re
import subprocess
import urllib.error
import urllib.request

import pytest
import torch

from conftest import ROOT, served, tool
from nnsc._extension import BUILD_DIR, DEFAULT_MODEL

KEY = "workbench-secret"
EXAMPLES = os.path.join(ROOT, "examples", "workbench")
ARTIFACTS = os.path.join(BUILD_DIR, "test-artifacts", "workbench")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Generous: the 2-core CI machine runs the page's requests while other tests' servers load.
WAIT = 120


def call(url, path, body=None, key=KEY):
    """One API call as the page makes it; returns (status, parsed JSON or text)."""
    request = urllib.request.Request(url + path, data=None if body is None else
                                     json.dumps(body).encode())
    request.add_header("Content-Type", "application/json")
    if key:
        request.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(request, timeout=WAIT) as response:
            status, data, kind = response.status, response.read(), response.headers.get(
                "Content-Type", "")
    except urllib.error.HTTPError as e:
        status, data, kind = e.code, e.read(), e.headers.get("Content-Type", "")
    return status, json.loads(data) if kind.startswith("application/json") else data.decode()


def tensor(save):
    dtype = {"float32": torch.float32, "int64": torch.int64}[save["dtype"]]
    raw = bytearray(base64.b64decode(save["data"]))
    return torch.frombuffer(raw, dtype=dtype).reshape(save["shape"]) if raw else \
        torch.zeros(save["shape"], dtype=dtype)


def example(name):
    with open(os.path.join(EXAMPLES, "examples.json")) as f:
        entry = next(e for e in json.load(f) if e["id"] == name)
    with open(os.path.join(EXAMPLES, entry["file"])) as f:
        return entry, f.read()


@pytest.fixture(scope="module")
def server():
    with served("--api-key", KEY) as url:
        yield url


@pytest.fixture(scope="module")
def browser(server):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (scripts/setup installs it)")
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            pytest.skip("%s is missing: scripts/setup installs Debian's chromium and "
                        "chromium-driver" % path)
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000"):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(WAIT)
    os.makedirs(ARTIFACTS, exist_ok=True)
    driver.get(server + "/")
    key = driver.find_element("id", "api-key")
    key.clear()
    key.send_keys(KEY)
    yield driver
    driver.quit()


def wait_for(driver, selector, count=1):
    """The elements matching CSS `selector` once at least `count` are on the page."""
    from selenium.webdriver.support.ui import WebDriverWait

    def found(d):
        status = d.find_element("id", "status").text
        elements = d.find_elements("css selector", selector)
        if len(elements) >= count:
            return elements
        if "failed" in status:
            raise AssertionError("the page's run failed: %s; errors: %s" % (
                status, [e.text for e in d.find_elements("css selector", ".run-error")]))
        return False

    return WebDriverWait(driver, WAIT, poll_frequency=0.2).until(found)


def wait_done(driver):
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(driver, WAIT, poll_frequency=0.2).until(
        lambda d: not d.find_element("id", "status").text.startswith("running"))


def console_errors(driver):
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"
            and "status of 4" not in e["message"]]


def run_example(driver, name):
    driver.find_element("css selector", 'button.example[data-example="%s"]' % name).click()


def set_source(driver, text):
    """Replaces the editor's text as typing would (the page re-parses params and invokes)."""
    driver.execute_script(
        "const s = document.getElementById('source'); s.value = arguments[0];"
        "s.dispatchEvent(new Event('input', {bubbles: true}));", text)


def test_page_is_served_without_the_key_and_the_api_is_not(server):
    status, page = call(server, "/", key=None)
    assert status == 200 and "id=\"source\"" in page
    status, body = call(server, "/v1/nns/sites", key=None)
    assert status == 401 and body["error"]["code"] == "invalid_api_key"
    status, body = call(server, "/workbench/no-such-file.js", key=None)
    assert status == 404 and "no-such-file.js" in body["error"]["message"]


def test_no_workbench_serves_no_page():
    with served("--no-workbench") as url:
        status, body = call(url, "/", key=None)
        assert status == 404 and body["error"]["type"] == "NotFoundError"


def test_sites_endpoint_lists_what_nnsc_prints(server):
    status, body = call(server, "/v1/nns/sites")
    assert status == 200
    printed = subprocess.run([tool("nnsc"), "--print-sites", "--model", DEFAULT_MODEL],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(body["sites"]) == len(printed)
    for site, line in zip(body["sites"], printed):
        order, path, rest = line.split(" ", 2)
        shape = rest[rest.index("[") + 1:rest.index("]")]
        want = [d if d in ("T", "S") else int(d) for d in shape.split(", ")] if shape else []
        assert (site["path"], site["shape"]) == (path, want), line
        assert site["dtype"] == rest.split("] ")[1].split(" ")[0]
        assert site["writable"] == ("read-only" not in rest)
    assert (body["layers"], body["hidden"], body["heads"], body["vocab"]) == (30, 576, 9, 49152)


def test_tokens_of_ids(server):
    text = "The Eiffel Tower is in the city of"
    status, body = call(server, "/v1/nns/tokenize", {"text": text, "add_special_tokens": False,
                                                     "return_tokens": True})
    assert status == 200 and "".join(body["tokens"]) == text
    assert len(body["tokens"]) == body["count"]
    status, back = call(server, "/v1/nns/detokenize", {"ids": body["ids"], "return_tokens": True})
    assert status == 200 and back["tokens"] == body["tokens"] and back["text"] == text
    status, bad = call(server, "/v1/nns/detokenize", {"ids": [1], "return_tokens": 1})
    assert status == 400 and bad["error"]["param"] == "return_tokens"


def example_reply(server, name, **fields):
    """The example's request as the page sends it (token params tokenized first) straight to
    the API; the server's reply, checked to be a 200."""
    entry, source = example(name)
    params = {}
    for param, value in entry.get("params", {}).items():
        if isinstance(value, dict):
            status, body = call(server, "/v1/nns/tokenize", {"text": value["token"],
                                                             "add_special_tokens": False})
            assert status == 200 and body["count"] == 1, (param, body)
            value = body["ids"][0]
        params[param] = value
    prompts = entry["prompts"]
    status, reply = call(server, "/v1/completions", dict({
        "model": "SmolLM2-135M-Instruct.Q4_1",
        "prompt": prompts if len(prompts) > 1 else prompts[0],
        "max_tokens": entry["max_tokens"], "temperature": 0,
        "nns": {"program": source, "params": params}}, **fields))
    assert status == 200, reply
    return reply


def example_ids():
    with open(os.path.join(EXAMPLES, "examples.json")) as f:
        return [e["id"] for e in json.load(f)]


@pytest.mark.parametrize("name", example_ids())
def test_every_example_runs_through_the_api(server, name):
    """Each example as the page sends it (token params tokenized first) succeeds and saves or
    generates."""
    reply = example_reply(server, name)
    assert reply["nns"]["saves"] or reply["choices"][-1]["text"], name


def test_site_browser_lists_every_site(server, browser):
    _, body = call(server, "/v1/nns/sites")
    entries = wait_for(browser, "#sites li.site", len(body["sites"]))
    assert len(entries) == len(body["sites"])
    paths = {e.get_attribute("data-path") for e in entries}
    assert "layers.3.self_attn.pattern" in paths or "model.layers.3.self_attn.pattern" in paths


def test_logit_lens_example_draws_the_servers_answer(server, browser):
    run_example(browser, "logit-lens")
    grid = wait_for(browser, "table.lens-grid")[0]
    wait_done(browser)
    # The same request straight to the API: the grid's cells are its top tokens.
    reply = example_reply(server, "logit-lens", return_token_ids=True)
    saves = reply["nns"]["saves"]
    layers = sorted(int(name.split(".")[1]) for name in saves if name.startswith("top."))
    assert layers == list(range(30))
    rows = grid.find_elements("css selector", "tbody tr")
    assert len(rows) == 30
    ids = [tensor(saves["top.%d" % layer]).tolist() for layer in layers]
    shown = [[int(c.get_attribute("data-token-id")) for c in row.find_elements(
        "css selector", "td.lens-cell")] for row in rows]
    assert shown == ids
    browser.save_screenshot(os.path.join(ARTIFACTS, "logit-lens.png"))
    assert console_errors(browser) == []


def test_logits_per_layer_draw_as_a_lens_grid(server, browser):
    """Saves of [vocab] log-probabilities per layer (test/Integration/parity/programs/15) draw
    as a grid of each layer's top token, shaded by its probability."""
    with open(os.path.join(ROOT, "test", "Integration", "parity", "programs",
                           "15-logit-lens-all.nns")) as f:
        source = f.read()
    set_source(browser, source)
    prompt = browser.find_element("css selector", "textarea.prompt")
    prompt.clear()
    prompt.send_keys("The capital of France is")
    browser.find_element("id", "run").click()
    grid = wait_for(browser, '.save-group[data-base="lens"] table.lens-grid')[0]
    wait_done(browser)
    status, reply = call(server, "/v1/completions", {
        "model": "SmolLM2-135M-Instruct.Q4_1", "prompt": "The capital of France is",
        "max_tokens": 1, "temperature": 0, "nns": {"program": source}})
    assert status == 200, reply
    lens = [tensor(reply["nns"]["saves"]["lens.%d" % i]) for i in range(30)]
    cells = grid.find_elements("css selector", "td.lens-cell")
    assert [int(c.get_attribute("data-token-id")) for c in cells] == \
        [int(x.argmax()) for x in lens]
    shown = [float(c.get_attribute("data-value")) for c in cells]
    want = [float(x.exp().max()) for x in lens]
    # The page takes the softmax of each row again (float64, from the fp32 log-probabilities,
    # whose exponentials sum to 1 only within the rounding of 49,152 fp32 terms).
    assert max(abs(a - b) for a, b in zip(shown, want)) < 1e-3


def test_attention_example_draws_a_heatmap_per_head(server, browser):
    run_example(browser, "attention")
    maps = wait_for(browser, "svg.heatmap", 9)
    wait_done(browser)
    assert sorted(int(m.get_attribute("data-head")) for m in maps) == list(range(9))
    browser.save_screenshot(os.path.join(ARTIFACTS, "attention.png"))
    assert console_errors(browser) == []


def test_steering_example_shows_the_plain_run_beside_it(server, browser):
    entry, source = example("steering")
    run_example(browser, "steering")
    plain = wait_for(browser, ".plain-completion")[0]
    wait_done(browser)
    status, reply = call(server, "/v1/completions", {
        "model": "SmolLM2-135M-Instruct.Q4_1", "prompt": entry["prompts"][-1],
        "max_tokens": entry["max_tokens"], "temperature": 0})
    assert status == 200
    assert reply["choices"][0]["text"] in plain.text.replace("\u00b7", " ").replace("\u21b5", "\n")
    assert browser.find_elements("css selector", ".completion .token.generated")


@pytest.mark.parametrize("name", ["capture", "patching"])
def test_every_save_gets_a_picture(server, browser, name):
    """Every save the server returns for the example is on the page with a picture: alone
    (div.save[data-name]) or in its group (cache's model.layers.<k>.output)."""
    run_example(browser, name)
    wait_for(browser, ".result .picture")
    wait_done(browser)
    assert browser.find_element("id", "status").text.startswith("done")
    singles = {e.get_attribute("data-name") for e in browser.find_elements(
        "css selector", ".save[data-name]") if e.find_elements("css selector", ".picture")}
    groups = {e.get_attribute("data-base") for e in browser.find_elements(
        "css selector", ".save-group[data-base]") if e.find_elements("css selector", ".picture")}
    reply = example_reply(server, name)
    for save in reply["nns"]["saves"]:
        layer = re.match(r"model\.layers\.\d+\.(.+)$", save)
        assert save in singles or (layer and "model.layers.*." + layer.group(1) in groups), save


def test_compile_error_is_marked_at_its_line(server, browser):
    source = "# a comment\ntrace {\n  h = layers[40].output.save()\n}\n"
    set_source(browser, source)
    browser.find_element("id", "run").click()
    marked = wait_for(browser, '#source-highlight .error-line[data-line="3"]')
    assert marked
    error = browser.find_element("id", "compile-error")
    assert error.get_attribute("data-line") == "3" and error.get_attribute("data-column") == "14"
    assert "layer index 40 is out of range" in error.text
    assert browser.find_element("id", "run").is_enabled()


def run_with_param(browser, source, name, value):
    """Runs `source` from the editor with param `name` typed as `value`."""
    set_source(browser, source)
    field = wait_for(browser, '#params [data-param="%s"] input.param-value' % name)[0]
    field.clear()
    field.send_keys(value)
    browser.find_element("id", "run").click()


def test_run_time_failure_is_shown_and_marked(server, browser):
    run_with_param(browser, "param i: i64\ntrace {\n  h = layers[3].output[i].save()\n}\n",
                   "i", "100")
    error = wait_for(browser, '.run-error[data-code="program_failed"]')[0]
    assert "index 100 is out of range" in error.text
    assert wait_for(browser, '#source-highlight .error-line[data-line="3"]')
    assert browser.find_element("id", "compile-error").get_attribute("data-column") == "24"


def test_bad_param_shows_the_servers_message(server, browser):
    source = "param steer: f32[hidden]\ntrace { layers[3].output += steer }\n"
    run_with_param(browser, source, "steer", "[1, 2, 3]")
    error = wait_for(browser, ".run-error")[0]
    status, reply = call(server, "/v1/completions", {
        "model": "SmolLM2-135M-Instruct.Q4_1", "prompt": "x", "max_tokens": 1,
        "nns": {"program": source, "params": {"steer": [1, 2, 3]}}})
    assert status == 400 and reply["error"]["message"] in error.text
    # The page keeps working: the next run succeeds.
    run_example(browser, "attention")
    wait_for(browser, "svg.heatmap", 9)
    wait_done(browser)
