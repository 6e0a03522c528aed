// What the page reads off .nns source without compiling it: a lexer for highlighting, the
// params it declares and the traces with their invokes. The compiler stays the judge: this
// only lays out the form (param rows, one prompt per invoke).

const KEYWORDS = new Set(
    "trace invoke for in steps if else param true false True False None and or not".split(" "));
const BUILTINS = new Set("save stop finish cache skip".split(" "));
const TYPES = new Set(["f32", "i64", "bool"]);
const DIMS = new Set("hidden vocab heads kv_heads head_dim intermediate layers".split(" "));
const SITES = new Set(
    ("embed embed_tokens norm lm_head logits samples result model self_attn mlp input output " +
     "pattern input_layernorm post_attention_layernorm pre_feedforward_layernorm " +
     "post_feedforward_layernorm q_proj k_proj v_proj o_proj q_norm k_norm gate_proj up_proj " +
     "down_proj act_fn")
        .split(" "));

const TOKEN = new RegExp(
    [
      /(#.*)/.source,                                    // comment
      /("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)/.source,  // string
      /((?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)/.source,   // number
      /([A-Za-z_][A-Za-z0-9_]*)/.source,                 // word
    ].join("|"),
    "g");

/// One line as [{text, cls}] segments (cls "" for plain text).
export function lexLine(line) {
  const out = [];
  let last = 0;
  for (const m of line.matchAll(TOKEN)) {
    if (m.index > last) out.push({text: line.slice(last, m.index), cls: ""});
    out.push({text: m[0], cls: classOf(m)});
    last = m.index + m[0].length;
  }
  if (last < line.length) out.push({text: line.slice(last), cls: ""});
  return out;
}

function classOf(m) {
  if (m[1] !== undefined) return "tok-comment";
  if (m[2] !== undefined) return "tok-string";
  if (m[3] !== undefined) return "tok-number";
  const w = m[4];
  if (KEYWORDS.has(w)) return "tok-keyword";
  if (BUILTINS.has(w)) return "tok-builtin";
  if (TYPES.has(w)) return "tok-type";
  if (DIMS.has(w)) return "tok-dim";
  if (SITES.has(w)) return "tok-site";
  return "";
}

/// The source with comments and strings blanked (same length, same lines).
function blankCommentsAndStrings(src) {
  return src.split("\n")
      .map(
          (line) => lexLine(line)
                        .map(
                            (s) => s.cls === "tok-comment" || s.cls === "tok-string" ?
                                " ".repeat(s.text.length) :
                                s.text,
                            )
                        .join(""))
      .join("\n");
}

// param NAME: ELEM [DIMS] = DEFAULT
const PARAM = new RegExp(
    String.raw`^\s*param\s+([A-Za-z_]\w*)\s*:\s*([A-Za-z_]\w*)` +
    String.raw`\s*(?:\[([^\]]*)\])?\s*(?:=\s*([^;]*?))?\s*(?:;|$)`);

/// {params: [{name, elem, dims: null | [string], default: null | string}],
///  traces: [{name: null | string, invokes: [string]}]}
export function parseProgram(src) {
  const code = blankCommentsAndStrings(src);
  const params = [];
  for (const line of code.split("\n")) {
    const m = PARAM.exec(line);
    if (!m) continue;
    params.push({
      name: m[1],
      elem: m[2],
      dims: m[3] === undefined ? null : m[3].split(",").map((d) => d.trim()).filter((d) => d),
      default: m[4] ? m[4].trim() : null,
    });
  }
  return {params, traces: parseTraces(code)};
}

function parseTraces(code) {
  const words = [...code.matchAll(/[A-Za-z_]\w*|[{}]/g)].map((m) => m[0]);
  const traces = [];
  let depth = 0;
  let trace = null;
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (w === "{")
      depth++;
    else if (w === "}") {
      depth--;
      if (trace && depth < trace.depth) trace = null;
    } else if (depth === 0 && w === "trace") {
      const named = words[i + 1] !== undefined && words[i + 1] !== "{";
      trace = {name: named ? words[i + 1] : null, invokes: [], depth: 1};
      traces.push(trace);
      if (named) i++;
    } else if (
        trace && depth === trace.depth && w === "invoke" && /^\w+$/.test(words[i + 1] ?? "")) {
      trace.invokes.push(words[i + 1]);
      i++;
    }
  }
  return traces.map(({name, invokes}) => ({name, invokes}));
}

/// A param's shape with model dimension names resolved: [576], [] for a scalar, or null when a
/// name is unknown (the model's numbers are not loaded).
export function resolveShape(dims, model) {
  if (dims === null) return [];
  const out = [];
  for (const d of dims) {
    if (/^\d+$/.test(d))
      out.push(Number(d));
    else if (model && Number.isInteger(model[d]))
      out.push(model[d]);
    else
      return null;
  }
  return out;
}
