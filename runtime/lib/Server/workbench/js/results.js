// One request's block in #results (div.result): its prompt(s), the completion per invoke as
// tokens (span.token.prompt / span.token.generated), the run without the program beside it
// (.plain-completion, differing tokens marked .changed), the saves, or the request's error.
import {el} from "./dom.js";
import {arrangeSaves, neededIds, renderSaves} from "./saves.js";
import {loadTokens, tokenSpan, visibleText} from "./tokens.js";

export class ResultView {
  /// prompt: a string, or [{invoke, text}] for a trace with invokes.
  constructor(container, index, prompt) {
    const title = typeof prompt === "string" ?
        prompt :
        prompt.map((p) => `${p.invoke}: ${p.text}`).join("  ·  ");
    this.status = el("span", {class: "result-status"}, "running…");
    this.body = el("div", {class: "result-body"});
    this.el =
        el("div", {class: "result running", dataset: {index}},
           el("div", {class: "result-head"}, el("span", {class: "result-title", title}, title),
              this.status),
           this.body);
    container.append(this.el);
  }

  finish(text, ok) {
    this.status.textContent = text;
    this.el.classList.remove("running");
    this.el.classList.toggle("failed", !ok);
  }

  /// The request's error: the server's message (a compile error is marked in the editor and
  /// only named here).
  showError(error) {
    if (error.code === "compile_error") {
      this.body.append(
          el("p", {class: "compile-note"},
             "the program does not compile: the errors are marked in the editor"));
    } else {
      this.body.append(
          el("div", {
            class: "run-error",
            role: "alert",
            dataset: {param: error.param ?? "", code: error.code ?? ""}
          },
             error.status ? `${error.status}: ${error.message}` : error.message));
    }
  }

  /// Draws a response. saves: Map name -> tensor; plain: the response without the program, or
  /// null; model: {vocab, heads}.
  async show(response, saves, plain, model) {
    const choices = response.choices;
    const items = arrangeSaves(saves);
    const sequences = choices.map((c) => ({prompt: c.prompt_token_ids ?? [], all: allIds(c)}));
    const ctx = {
      vocab: model.vocab,
      heads: model.heads,
      labelsFor: (n) => labelsFor(sequences, n),
      patternLabels: (T, S) => {
        const keys = contextLabels(sequences, S);
        return keys ? {keys: keys.text, queries: keys.text.slice(S - T)} : null;
      },
    };
    const ids = [...neededIds(items, ctx), ...sequences.flatMap((s) => s.all)];
    if (plain) ids.push(...plain.choices.flatMap(allIds));
    await loadTokens(ids, model.vocab ?? Infinity);

    const last = choices.at(-1);
    const plainChoice = plain?.choices[0] ?? null;
    const changed =
        plainChoice ? differing(last.token_ids ?? [], plainChoice.token_ids ?? []) : null;
    const blocks = choices.slice(0, -1).map((c) => completion(c, "completion", null));
    const lastBlock = completion(last, "completion", changed);
    blocks.push(
        plainChoice ? el("div", {class: "compare"}, lastBlock,
                         completion(plainChoice, "plain-completion", changed)) :
                      lastBlock);
    this.body.append(el("div", {class: "completions"}, blocks));

    const saveNodes = renderSaves(items, ctx);
    this.body.append(
        el("div", {class: "saves"},
           saveNodes.length ? saveNodes : el("p", {class: "hint"}, "no saves")));
  }
}

/// Token labels for the n positions of a prompt of n tokens (the last such choice's), or null.
function labelsFor(sequences, n) {
  const pick = [...sequences].reverse().find((s) => s.prompt.length === n);
  return pick && n > 0 ? labels(pick.all.slice(0, n)) : null;
}

/// Token labels for the first n positions of a sequence (prompt and generated tokens) at
/// least that long: the keys of an attention pattern over a context of n.
function contextLabels(sequences, n) {
  const pick = [...sequences].reverse().find((s) => s.prompt.length === n) ??
      [...sequences].reverse().find((s) => s.all.length >= n);
  return pick && n > 0 ? labels(pick.all.slice(0, n)) : null;
}

function labels(ids) {
  return {ids, text: ids.map(visibleText)};
}

/// Indices where two generated sequences differ (one's extra tokens included).
function differing(a, b) {
  const out = new Set();
  for (let i = 0; i < Math.max(a.length, b.length); i++)
    if (a[i] !== b[i]) out.add(i);
  return out;
}

/// A choice's prompt and generated token ids.
function allIds(choice) {
  return [...(choice.prompt_token_ids ?? []), ...(choice.token_ids ?? [])];
}

function completion(choice, cls, changed) {
  const prompt = (choice.prompt_token_ids ?? []).map((id) => tokenSpan(id, "prompt"));
  const ids = choice.token_ids ?? [];
  const generated =
      ids.map((id, i) => tokenSpan(id, changed?.has(i) ? "generated changed" : "generated"));
  let label = "with the program";
  if (cls === "plain-completion")
    label = "without the program";
  else if (choice.invoke)
    label = `invoke ${choice.invoke}`;
  const dataset = choice.invoke && cls === "completion" ? {invoke: choice.invoke} : {};
  return el(
      "div", {class: cls, dataset},
      el("div", {class: "completion-head"}, el("span", {class: "completion-label"}, label),
         el("span", {class: "finish-reason", title: "finish reason"}, choice.finish_reason ?? "")),
      el("div", {class: "tokens"}, prompt,
         generated.length ? generated : el("span", {class: "hint"}, " (nothing generated)")));
}
