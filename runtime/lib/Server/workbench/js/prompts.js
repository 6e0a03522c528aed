// The prompts form. A trace with invokes gets one textarea.prompt[data-invoke=NAME] per invoke
// (one request, the prompts as a list in invoke order); otherwise one textarea.prompt whose
// non-empty lines are separate requests. Text typed for an invoke survives source edits.
import {el} from "./dom.js";

export class PromptsPanel {
  constructor(container) {
    this.container = container;
    this.invokes = null;        // null until the first update
    this.byInvoke = new Map();  // invoke name -> its text
    this.plainText = "";
  }

  /// Lays out the fields for the trace's invokes ([] for a trace without).
  update(invokes) {
    if (this.invokes && this.invokes.join("\n") === invokes.join("\n")) return;
    this.remember();
    // Without invokes the last invoke's prompt stands in for an empty field.
    const lastInvoke = this.fields?.at(-1)?.invoke ? this.fields.at(-1).area.value : "";
    this.invokes = invokes;
    if (invokes.length === 0) {
      if (!this.plainText.trim()) this.plainText = lastInvoke;
      this.fields =
          [this.field(null, this.plainText, "one prompt per line; each line is its own request")];
    } else {
      this.fields = invokes.map(
          (name, i) => this.field(
              name,
              this.byInvoke.get(name) ??
                  (i === invokes.length - 1 ? this.plainText.split("\n")[0] : ""),
              `the prompt of invoke '${name}'`));
    }
    this.container.replaceChildren(...this.fields.map((f) => f.wrap));
  }

  field(invoke, text, placeholder) {
    const area = el("textarea", {
      class: "prompt",
      rows: invoke === null ? 3 : 2,
      spellcheck: "false",
      placeholder,
      "aria-label": invoke === null ? "prompts" : `prompt of invoke ${invoke}`,
      dataset: invoke === null ? {} : {invoke},
    });
    area.value = text;
    const wrap = invoke === null ?
        el("div", {class: "prompt-field"}, area) :
        el("div", {class: "prompt-field"}, el("label", {class: "invoke-name"}, invoke), area);
    return {invoke, area, wrap};
  }

  remember() {
    for (const f of this.fields ?? []) {
      if (f.invoke === null)
        this.plainText = f.area.value;
      else
        this.byInvoke.set(f.invoke, f.area.value);
    }
  }

  /// Fills the fields from an example: one prompt per invoke, or the prompts one per line.
  setPrompts(prompts) {
    if (this.invokes.length === 0)
      this.fields[0].area.value = prompts.join("\n");
    else
      this.fields.forEach((f, i) => {
        f.area.value = prompts[i] ?? "";
      });
    this.remember();
  }

  /// One entry per request: a string, or (with invokes) a list of {invoke, text}.
  requests() {
    if (this.invokes.length === 0)
      return this.fields[0].area.value.split("\n").filter((line) => line.trim() !== "");
    return [this.fields.map((f) => ({invoke: f.invoke, text: f.area.value}))];
  }
}
