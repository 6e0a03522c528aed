// The workbench page: wires the editor, sites, params, prompts, examples and results to the
// server, and runs the program over the prompts.
import {apiGet, apiKey, onAuthError, setApiKey} from "./api.js";
import {el} from "./dom.js";
import {Editor} from "./editor.js";
import {exampleSource, showExamples} from "./examples.js";
import {writeSafetensors} from "./formats.js";
import {ParamsPanel} from "./params.js";
import {PromptsPanel} from "./prompts.js";
import {ResultView} from "./results.js";
import {runRequest} from "./runner.js";
import {showSites} from "./sites.js";
import {parseProgram} from "./source.js";

const $ = (id) => document.getElementById(id);

const state = {
  modelId: null,  // the `model` field of completions
  info: null,     // /v1/nns/sites: the model's numbers and sites
  traces: [],
  running: false,
  started: 0,  // performance.now() when the run began
  saves: [],   // [{index, saves: Map}] of the last run, for #download-saves
};

const editor = new Editor({
  textarea: $("source"),
  highlight: $("source-highlight"),
  gutter: $("source-gutter"),
  errorBox: $("compile-error"),
  onChange: () => layoutForm(),
});
const params = new ParamsPanel($("params"));
const prompts = new PromptsPanel($("prompts"));

function setStatus(kind, text) {
  $("status").dataset.state = kind;
  $("status").textContent = text;
}

/// Lays out params, the trace choice and the prompt fields for the source as it is now (on
/// every edit: reading the source is cheap next to highlighting it).
function layoutForm() {
  const program = parseProgram(editor.value);
  params.update(program.params, state.info);
  state.traces = program.traces;
  const select = $("trace");
  const previous = select.value;
  const named = program.traces.filter((t) => t.name !== null);
  $("trace-choice").hidden = named.length < 2;
  select.replaceChildren(...named.map((t) => new Option(t.name, t.name)));
  if (named.some((t) => t.name === previous)) select.value = previous;
  prompts.update(selectedTrace()?.invokes ?? []);
}

function selectedTrace() {
  if (state.traces.length < 2) return state.traces[0] ?? null;
  return state.traces.find((t) => t.name === $("trace").value) ?? state.traces[0];
}

/// The served model's name, and its numbers and sites when the server tells them.
async function loadModel() {
  const models = await apiGet("v1/models");
  state.modelId = models.data[0].id;
  $("model-name").textContent = state.modelId;
  try {
    state.info = await apiGet("v1/nns/sites");
    showSites({
      info: state.info,
      summaryBox: $("model-info"),
      list: $("sites"),
      filter: $("site-filter"),
      onInsert: (path) => editor.insertAtCursor(path),
    });
  } catch (e) {
    if (e.status === 401) throw e;
    $("sites").replaceChildren(el("li", {class: "run-error"}, `sites: ${e.message}`));
  }
  layoutForm();
}

async function init() {
  $("api-key").value = apiKey();
  let keyTimer = 0;
  $("api-key").addEventListener("input", () => {
    setApiKey($("api-key").value.trim());
    $("api-key").classList.remove("needs-key");
    clearTimeout(keyTimer);
    keyTimer = setTimeout(() => {
      if (state.modelId) return;
      loadModel().then(() => {
        if (!state.running) setStatus("idle", "");
      }, () => {});
    }, 300);
  });
  onAuthError(() => {
    $("api-key").classList.add("needs-key");
    $("api-key").focus();
  });
  $("run").addEventListener("click", run);
  $("trace").addEventListener("change", () => prompts.update(selectedTrace()?.invokes ?? []));
  $("download-saves").addEventListener("click", downloadSaves);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run();
    }
  });
  layoutForm();
  showExamples($("examples"), pickExample);
  try {
    await loadModel();
  } catch (e) {
    if (state.modelId) return;  // a later load, after the key was typed, succeeded
    if (e.status === 401)
      setStatus("needs-key", "this server needs its API key: enter it above");
    else
      setStatus("failed", `failed: cannot load the model (${e.message})`);
  }
}

/// Loads an example's source, prompts, params and sampling fields, and runs it.
async function pickExample(ex) {
  if (state.running) return;
  beginRun();
  for (const b of document.querySelectorAll("button.example"))
    b.classList.toggle("active", b.dataset.example === ex.id);
  let source;
  try {
    source = await exampleSource(ex);
  } catch (e) {
    setStatus("failed", `failed: example '${ex.id}': ${e.message}`);
    setRunning(false);
    return;
  }
  editor.value = source;
  prompts.setPrompts(ex.prompts ?? []);
  params.setValues(ex.params);
  $("max-tokens").value = ex.max_tokens ?? 8;
  $("temperature").value = ex.temperature ?? 0;
  $("compare-plain").checked = Boolean(ex.compare_plain);
  await execute();
}

function setRunning(running) {
  state.running = running;
  $("run").disabled = running;
  for (const b of document.querySelectorAll("button.example")) b.disabled = running;
}

/// The param a refusal names: `nns.params.NAME`, or `nns.params` with the name quoted in
/// the message.
function paramOf(error) {
  const p = error.param ?? "";
  if (p.startsWith("nns.params.")) return p.slice("nns.params.".length);
  if (p === "nns.params") return /param '([^']+)'/.exec(error.message)?.[1] ?? null;
  return null;
}

function readNumber(id, integer) {
  const text = $(id).value.trim();
  const x = Number(text);
  if (text === "" || !Number.isFinite(x) || x < 0 || (integer && !Number.isInteger(x)))
    throw new Error(`${$(id).getAttribute("aria-label") ?? id} must be ${
        integer ? "an integer" : "a number"} >= 0`);
  return x;
}

async function run() {
  if (state.running) return;
  beginRun();
  await execute();
}

/// Marks the run as started: buttons off, status "running…", the last results gone.
function beginRun() {
  setRunning(true);
  setStatus("running", "running…");
  state.started = performance.now();
  editor.clearMarks();
  params.clearErrors();
  $("results").replaceChildren();
  state.saves = [];
  $("download-saves").disabled = true;
}

/// Sends the requests of a run begun by beginRun and ends it, whatever happens.
async function execute() {
  const seconds = () => ((performance.now() - state.started) / 1000).toFixed(1);
  try {
    if (!state.modelId) await loadModel();
    const values = await params.collect();
    if (values === null) throw new Error("a param's value is wrong (shown next to it)");
    const requests = prompts.requests();
    if (requests.length === 0) throw new Error("no prompt: type one in the prompts field");
    const options = {
      model: state.modelId,
      program: editor.value,
      params: values,
      trace: state.traces.length > 1 ? selectedTrace()?.name ?? undefined : undefined,
      maxTokens: readNumber("max-tokens", true),
      temperature: readNumber("temperature", false),
      comparePlain: $("compare-plain").checked,
    };
    const outcomes = await Promise.all(requests.map((prompt, i) => runOne(prompt, i, options)));
    const failures = outcomes.filter((ok) => !ok).length;
    if (failures)
      setStatus("failed", `failed: ${failures} of ${outcomes.length} requests (${seconds()} s)`);
    else
      setStatus("done", `done in ${seconds()} s`);
  } catch (e) {
    setStatus("failed", `failed: ${e.message}`);
    $("results").append(el("div", {class: "run-error", role: "alert"}, e.message));
  } finally {
    setRunning(false);
  }
}

async function runOne(prompt, index, options) {
  const view = new ResultView($("results"), index, prompt);
  const start = performance.now();
  try {
    const r = await runRequest({...options, prompt});
    await view.show(r.response, r.saves, r.plain, state.info ?? {});
    if (r.plainError)
      view.showError(
          {...r.plainError, code: null, message: `without the program: ${r.plainError.message}`});
    if (r.saves.size) {
      state.saves.push({index, saves: r.saves});
      $("download-saves").disabled = false;
    }
    view.finish(`${((performance.now() - start) / 1000).toFixed(1)} s`, true);
    return true;
  } catch (e) {
    if (e.code === "compile_error") editor.showCompileError(e.message);
    if (e.code === "program_failed") editor.showRunError(e.message);
    const name = paramOf(e);
    if (name) params.showError(name, e.message);
    view.showError(e);
    view.finish("failed", false);
    return false;
  }
}

/// One safetensors file of the last run's saves (prefixed "<request>/" when it had several).
function downloadSaves() {
  const entries = [];
  const runs = [...state.saves].sort((a, b) => a.index - b.index);
  for (const {index, saves} of runs) {
    for (const [name, t] of [...saves].sort(
             ([a], [b]) => a.localeCompare(b, undefined, {numeric: true})))
      entries.push([runs.length > 1 ? `${index}/${name}` : name, t]);
  }
  const url = URL.createObjectURL(
      new Blob([writeSafetensors(entries)], {type: "application/octet-stream"}));
  const a = Object.assign(document.createElement("a"), {href: url, download: "saves.safetensors"});
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

init();
