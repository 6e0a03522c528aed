// The params form: one row (div.param[data-param=NAME]) per `param` the source declares.
// Scalars take a number (i64 also a token in quotes, " Paris", tokenized to its one id), bools
// a checkbox, tensors a JSON list or a .npy/.safetensors file. Rows survive edits of the
// source while the param keeps its name and type.
import {apiPost} from "./api.js";
import {el} from "./dom.js";
import {encodeParam, parseNpy, parseSafetensors} from "./formats.js";
import {resolveShape} from "./source.js";

export class ParamsPanel {
  constructor(container) {
    this.container = container;
    this.rows = new Map();  // name -> Row
  }

  /// Lays out the rows for the declared params against the model's numbers.
  update(params, model) {
    const rows = new Map();
    for (const p of params) {
      if (rows.has(p.name)) continue;
      const shape = resolveShape(p.dims, model);
      const key = `${p.elem}[${p.dims ?? ""}]=${p.default}|${shape}`;
      const old = this.rows.get(p.name);
      rows.set(p.name, old && old.key === key ? old : new Row(p, shape, key, old));
    }
    this.rows = rows;
    this.container.replaceChildren(...[...rows.values()].map((r) => r.node));
    if (rows.size === 0)
      this.container.append(
          el("p", {class: "hint"}, "no params (declare them with `param NAME: TYPE`)"));
  }

  /// Fills rows from an example's params: numbers, bools, lists, or {token: " Paris"}.
  setValues(values) {
    for (const [name, value] of Object.entries(values ?? {})) this.rows.get(name)?.set(value);
  }

  clearErrors() {
    for (const row of this.rows.values()) row.showError("");
  }

  /// Shows a server's message next to the param; false when no row has that name.
  showError(name, message) {
    const row = this.rows.get(name);
    row?.showError(message);
    return row !== undefined;
  }

  /// The request's `params`, or null when a row's value is wrong (shown next to it). Rows left
  /// empty are not sent (the declared default applies).
  async collect() {
    const out = {};
    let ok = true;
    for (const [name, row] of this.rows) {
      try {
        const value = await row.value();
        if (value !== undefined) out[name] = value;
      } catch (e) {
        row.showError(e.message);
        ok = false;
      }
    }
    return ok ? out : null;
  }
}

class Row {
  constructor(p, shape, key, previous) {
    this.p = p;
    this.key = key;
    this.shape = shape;
    this.scalar = p.dims === null;
    this.file = null;  // a tensor read from a file
    const typeText =
        this.scalar ? p.elem : `${p.elem}[${shape ? shape.join(", ") : p.dims.join(", ")}]`;
    this.error = el("span", {class: "param-error", role: "alert"});
    this.input = this.makeInput();
    const controls = [this.input];
    if (!this.scalar) {
      this.fileName = el("span", {class: "param-file-name"});
      this.fileInput = el("input", {
        type: "file",
        class: "param-file",
        accept: ".npy,.safetensors",
        title: "a .npy (float32/float64/int64/int32, C order) or .safetensors file",
        onchange: () => this.readFile(),
      });
      this.clearButton =
          el("button", {
            type: "button",
            class: "param-file-clear",
            hidden: true,
            title: "use the text field again",
            onclick: () => this.clearFile(),
          },
             "×");
      controls.push(
          el("label", {class: "file-button"}, "file…", this.fileInput), this.fileName,
          this.clearButton);
    }
    this.node = el("div", { class: "param", dataset: { param: p.name } },
      el("label", { class: "param-name", for: `param-${p.name}` }, p.name,
        el("span", { class: "param-type" }, `: ${typeText}`),
        p.default !== null ? el("span", { class: "param-default" }, ` = ${p.default}`) : null),
      el("span", { class: "param-controls" }, controls),
      this.error);
      if (previous && previous.edited() && previous.input.type === this.input.type) {
        if (this.input.type === "checkbox")
          this.input.checked = previous.input.checked;
        else
          this.input.value = previous.input.value;
      }
  }

  makeInput() {
      const {p} = this;
      const id = `param-${p.name}`;
      const common = {id, class: "param-value", oninput: () => this.showError("")};
      if (this.scalar && p.elem === "bool")
        return el(
            "input", {...common, type: "checkbox", checked: /^(true|True)$/.test(p.default ?? "")});
      if (this.scalar && p.elem === "f32")
        return el("input", {...common, type: "number", step: "any", value: p.default ?? ""});
      if (this.scalar)
        return el("input", {
          ...common,
          type: "text",
          value: p.default ?? "",
          placeholder: "an id, or a token: \" Paris\"",
          spellcheck: "false",
        });
      return el("input", {
        ...common,
        type: "text",
        spellcheck: "false",
        placeholder: p.default !== null ? `JSON list (default: all ${p.default})` :
                                          "JSON list, e.g. [0.5, -1, ...]",
      });
  }

  /// Whether the value differs from what the row started with (its default).
  edited() {
      if (this.input.type === "checkbox") return this.input.checked !== this.input.defaultChecked;
      return this.input.value !== this.input.defaultValue;
  }

  set(value) {
      this.showError("");
      if (this.input.type === "checkbox")
        this.input.checked = Boolean(value);
      else if (value && typeof value === "object" && !Array.isArray(value) && "token" in value)
        this.input.value = JSON.stringify(value.token);
      else
        this.input.value = typeof value === "string" ? value : JSON.stringify(value);
  }

  showError(message) {
      this.error.textContent = message;
      this.node.classList.toggle("has-error", Boolean(message));
  }

  async readFile() {
      this.showError("");
      const f = this.fileInput.files[0];
      this.file = null;
      if (!f) return this.clearFile();
      this.fileName.textContent = f.name;
      this.clearButton.hidden = false;
      this.input.hidden = true;
      try {
        const buffer = await f.arrayBuffer();
        if (f.name.endsWith(".npy"))
          this.file = parseNpy(buffer);
        else
          this.file = this.pickTensor(parseSafetensors(buffer));
        this.fileName.textContent = `${f.name}: ${this.file.dtype}[${this.file.shape.join(", ")}]`;
      } catch (e) {
        this.showError(`${f.name}: ${e.message}`);
      }
  }

  /// The safetensors tensor named like the param, or the only one.
  pickTensor(tensors) {
      if (tensors.has(this.p.name)) return tensors.get(this.p.name);
      if (tensors.size === 1) return [...tensors.values()][0];
      throw new Error(`no tensor named '${this.p.name}' among ${tensors.size} (${
              [...tensors.keys()].slice(0, 8).join(", ")})`);
  }

  clearFile() {
      this.file = null;
      this.fileInput.value = "";
      this.fileName.textContent = "";
      this.clearButton.hidden = true;
      this.input.hidden = false;
      this.showError("");
  }

  async value() {
      const {p} = this;
      if (this.input.type === "checkbox") return this.input.checked;
      if (!this.scalar && this.fileInput.files.length) {
        if (!this.file) throw new Error("the file could not be read");
        return encodeParam(this.file);
      }
      const text = this.input.value.trim();
      if (text === "") return undefined;
      if (!this.scalar) {
        try {
          return JSON.parse(text);
        } catch (e) {
          throw new Error(`not a JSON list: ${e.message}`);
        }
      }
      if (p.elem === "f32") {
        const x = Number(text);
        if (!Number.isFinite(x)) throw new Error("not a number");
        return x;
      }
      if (/^[-+]?\d+$/.test(text)) return Number(text);
      if (/^(["']).*\1$/s.test(text)) return tokenId(text);
      throw new Error("an integer, or a token in quotes (\" Paris\")");
  }
  }

  /// The id of a quoted token (JSON's escapes in double quotes); it must be exactly one token.
  async function tokenId(quoted) {
    let text;
    try {
      text = quoted[0] === "\"" ? JSON.parse(quoted) : quoted.slice(1, -1);
    } catch {
      throw new Error(`cannot read ${quoted} as a string`);
    }
    const r = await apiPost("v1/nns/tokenize", {text, add_special_tokens: false});
    if (r.ids.length !== 1)
      throw new Error(`${quoted} is ${r.ids.length} tokens (${
          r.ids.join(", ")}); a token param takes exactly one`);
    return r.ids[0];
  }
