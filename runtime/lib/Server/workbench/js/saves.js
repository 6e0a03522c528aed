// Saves drawn by their shape. Each save is a div.save[data-name] with pictures
// ([data-kind] = scalar, tokens, topk, bars, line, heatmap). Saves named BASE.<k>, and cache
// saves model.layers.<k>.REST (as model.layers.*.REST), are gathered into one
// div.save-group[data-base]: integer members into a token grid (table.lens-grid, shaded by a
// float group of the same members when there is one: the logit lens), float members into a
// plot over k.
import {el, fmt} from "./dom.js";
import {isFloat, numel} from "./formats.js";
import {barPlot, colorScale, heatmap, linePlot} from "./plots.js";
import {tokenNodes, tokenSpan, tokenText, tokenTitle, visibleText} from "./tokens.js";

const TOPK = 10;
const MAX_TOKEN_LIST = 1024;
const MAX_TOPK_ROWS = 64;
const MAX_HEAT_ROWS = 64;
const MAX_HEAT_COLS = 1024;
const MAX_PATTERN_QUERIES = 64;
const MAX_PATTERN_KEYS = 128;
const MAX_GRID_ROWS = 256;
const MAX_GRID_COLS = 64;
const MAX_TOKEN_IDS = 4096;

const LAYER_SITE = /^model\.layers\.(\d+)\.(.+)$/;
const INDEXED = /^(.+)\.(\d+)$/;

const byName = (a, b) => a.localeCompare(b, undefined, {numeric: true});

function isInt(t) {
  return t.dtype === "int64" || t.dtype === "int32";
}

/// The saves as a list of {name, tensor} singles and {base, members: [{k, name, tensor}]}
/// groups (two members or more), in name order.
export function arrangeSaves(saves) {
  const names = [...saves.keys()].sort(byName);
  const baseOf = new Map();  // name -> base
  const bases = new Map();   // base -> members
  for (const name of names) {
    const site = LAYER_SITE.exec(name);
    const indexed = site ? null : INDEXED.exec(name);
    if (!site && !indexed) continue;
    const base = site ? `model.layers.*.${site[2]}` : indexed[1];
    if (!bases.has(base)) bases.set(base, []);
    bases.get(base).push({k: Number(site ? site[1] : indexed[2]), name, tensor: saves.get(name)});
    baseOf.set(name, base);
  }
  const items = [];
  const placed = new Set();
  for (const name of names) {
    const base = baseOf.get(name);
    const members = base === undefined ? [] : bases.get(base);
    if (members.length < 2)
      items.push({name, tensor: saves.get(name)});
    else if (!placed.has(base)) {
      placed.add(base);
      items.push({base, members: members.sort((a, b) => a.k - b.k)});
    }
  }
  for (const item of items)
    if (item.members) item.shade = shadeGroup(item, items);
  // A shading group follows the grid it shades.
  const shades = new Set(items.map((item) => item.shade).filter((x) => x));
  const out = [];
  for (const item of items) {
    if (shades.has(item)) continue;
    out.push(item);
    if (item.shade && !out.includes(item.shade)) out.push(item.shade);
  }
  return out;
}

function sameShape(a, b) {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

function isTokenGroup(item) {
  const s = item.members[0].tensor.shape;
  return s.length <= 1 &&
      item.members.every((m) => isInt(m.tensor) && sameShape(m.tensor.shape, s));
}

/// For a token group, a float group with the same k's and shapes (prob.<k> beside top.<k>).
function shadeGroup(item, items) {
  if (!isTokenGroup(item)) return null;
  const shape = item.members[0].tensor.shape;
  const ks = item.members.map((m) => m.k).join(",");
  return items.find(
             (other) => other.members && other !== item &&
                 other.members.map((m) => m.k).join(",") === ks &&
                 other.members.every(
                     (m) => isFloat(m.tensor.dtype) && sameShape(m.tensor.shape, shape))) ??
      null;
}

const topkCache = new WeakMap();

/// The TOPK largest values of row `row` (n values) of t as [{id, value}], largest first.
function topk(t, row, n) {
  let rows = topkCache.get(t);
  if (!rows) topkCache.set(t, (rows = new Map()));
  if (rows.has(row)) return rows.get(row);
  const best = [];
  const v = t.values;
  const offset = row * n;
  for (let i = 0; i < n; i++) {
    const x = v[offset + i];
    if (Number.isNaN(x)) continue;
    if (best.length === TOPK && x <= best[TOPK - 1].value) continue;
    let j = Math.min(best.length, TOPK - 1);
    best[j] = {id: i, value: x};
    while (j > 0 && best[j - 1].value < x) {
      [best[j - 1], best[j]] = [best[j], best[j - 1]];
      j--;
    }
  }
  rows.set(row, best);
  return best;
}

/// The kind of picture a single save gets (before data-kind names).
function kindOf(name, t, ctx) {
  const s = t.shape;
  if (s.length === 0) return "scalar";
  if (isInt(t)) return s.length === 1 ? "tokens" : "token-table";
  if (s.length === 1) {
    if (s[0] === ctx.vocab) return "topk";
    return s[0] <= 64 ? "bars" : "line";
  }
  if (s.length === 2 && s[1] === ctx.vocab) return "topk-rows";
  if (s.length >= 2 && s.length <= 3 && isPattern(name, t, ctx))
    return s.length === 3 ? "pattern" : "pattern-row";
  return "matrix";
}

/// An attention pattern: [heads, T, S] or [T, S] with S >= T, named so or holding
/// probability rows (non-negative, each row summing to at most 1).
function isPattern(name, t, ctx) {
  const s = t.shape;
  const [T, S] = s.slice(-2);
  if (S < T || T === 0) return false;
  if (/pattern|attn|attention/i.test(name)) return true;
  if (s.length === 3 && s[0] !== ctx.heads) return false;
  const v = t.values;
  for (let r = 0; r < v.length / S; r++) {
    let sum = 0;
    for (let c = 0; c < S; c++) {
      const x = v[r * S + c];
      if (!(x >= 0)) return false;
      sum += x;
    }
    if (sum > 1.01) return false;
  }
  return true;
}

/// The token ids the saves' pictures show: int saves' values and top-k ids.
export function neededIds(items, ctx) {
  const ids = [];
  const visit = (name, t) => {
    if (isInt(t)) {
      const n = Math.min(t.values.length, MAX_TOKEN_IDS);
      for (let i = 0; i < n; i++) ids.push(t.values[i]);
      return;
    }
    const kind = kindOf(name, t, ctx);
    if (kind === "topk") ids.push(...topk(t, 0, t.shape[0]).map((e) => e.id));
    if (kind === "topk-rows") {
      for (let r = 0; r < Math.min(t.shape[0], MAX_TOPK_ROWS); r++)
        ids.push(...topk(t, r, t.shape[1]).map((e) => e.id));
    }
  };
  for (const item of items) {
    if (item.members)
      for (const m of item.members) visit(m.name, m.tensor);
    else
      visit(item.name, item.tensor);
  }
  return ids;
}

function capNote(text) {
  return el("p", {class: "cap-note"}, text);
}

function saveHead(name, t) {
  return el(
      "div", {class: "save-head"}, el("span", {class: "save-name"}, name),
      el("span", {class: "save-shape"}, `${t.dtype}[${t.shape.join(", ")}]`));
}

/// The DOM for the arranged saves. ctx: {vocab, heads, labelsFor(n), patternLabels(T, S)}.
export function renderSaves(items, ctx) {
  return items.map(
      (item) => (item.members ? renderGroup(item, ctx) : renderSave(item.name, item.tensor, ctx)));
}

function renderSave(name, t, ctx) {
  return el("div", {class: "save", dataset: {name}}, saveHead(name, t), pictures(name, t, ctx));
}

function pictures(name, t, ctx) {
  const s = t.shape;
  const v = t.values;
  if (v.length === 0) return el("p", {class: "hint"}, "no values (an empty tensor)");
  switch (kindOf(name, t, ctx)) {
    case "scalar":
      return el(
          "div", {class: "picture scalar", dataset: {kind: "scalar"}},
          el("span", {class: "scalar-value"}, fmt(v[0])),
          isInt(t) ? tokenSpan(v[0], "scalar-token") : null);
    case "tokens":
      return tokenList(v, s[0]);
    case "token-table":
      return tokenTable(t);
    case "topk":
      return topkTable(t, 1, s[0], null);
    case "topk-rows":
      return topkTable(t, s[0], s[1], ctx.labelsFor(s[0]));
    case "bars":
      return withKind(barPlot(v, {labels: ctx.labelsFor(s[0])?.text ?? null}), "bars");
    case "line": {
      const labels = s[0] <= 48 ? ctx.labelsFor(s[0])?.text ?? null : null;
      return withKind(linePlot(v, {labels}), "line");
    }
    case "pattern":
      return patternHeads(t, ctx);
    case "pattern-row": {
      const [T, S] = s;
      const hidden = T * S - Math.min(T, MAX_PATTERN_QUERIES) * Math.min(S, MAX_PATTERN_KEYS);
      return [
        withKind(patternFigure(t, 0, T, S, ctx), "heatmap"),
        hidden ? capNote(`the last queries and keys drawn; ${hidden} values not drawn`) : null
      ];
    }
    default:
      return matrix(t, ctx);
  }
}

function withKind(node, kind) {
  node.dataset.kind = kind;
  node.classList.add("picture");
  return node;
}

function tokenList(values, n) {
  const shown = Math.min(n, MAX_TOKEN_LIST);
  const spans = [];
  for (let i = 0; i < shown; i++) spans.push(tokenSpan(values[i]));
  return el(
      "div", {class: "picture token-list", dataset: {kind: "tokens"}}, spans,
      n > shown ? capNote(`${n - shown} tokens not drawn`) : null);
}

/// An int save of 2 or more dimensions: rows of tokens over the last dimension.
function tokenTable(t) {
  const cols = t.shape.at(-1);
  const rows = numel(t.shape) / cols;
  const shownRows = Math.min(rows, MAX_GRID_ROWS);
  const shownCols = Math.min(cols, MAX_GRID_COLS);
  const body = [];
  for (let r = 0; r < shownRows; r++) {
    const cells = [];
    for (let c = 0; c < shownCols; c++) cells.push(el("td", {}, tokenSpan(t.values[r * cols + c])));
    body.push(el("tr", {}, el("th", {}, String(r)), cells));
  }
  const hidden = rows * cols - shownRows * shownCols;
  return el(
      "div", {class: "picture", dataset: {kind: "tokens"}},
      el("div", {class: "table-scroll"},
         el("table", {class: "token-table"}, el("tbody", {}, body))),
      hidden ? capNote(`${hidden} values not drawn`) : null);
}

/// The 10 largest values with their tokens: rows tr.topk-row are the ranks of a 1-d save, or
/// the rows of a 2-d save (labeled by their position's token when it is known).
function topkTable(t, rows, n, rowLabels) {
  if (rows === 1 && t.shape.length === 1) {
    const entries = topk(t, 0, n);
    return el(
        "table", {class: "picture topk", dataset: {kind: "topk"}},
        el("thead", {},
           el("tr", {}, el("th", {}, "#"), el("th", {}, "token"), el("th", {}, "id"),
              el("th", {}, "value"))),
        el("tbody", {},
           entries.map(
               (e, i) =>
                   el("tr", {class: "topk-row", dataset: {tokenId: e.id}},
                      el("td", {class: "rank"}, String(i + 1)), el("td", {}, tokenSpan(e.id)),
                      el("td", {class: "num"}, String(e.id)),
                      el("td", {class: "num"}, fmt(e.value))))));
  }
  const shown = Math.min(rows, MAX_TOPK_ROWS);
  const body = [];
  for (let r = 0; r < shown; r++) {
    const label = rowLabels ? el("th", {class: "row-label"}, tokenSpan(rowLabels.ids[r])) :
                              el("th", {class: "row-label"}, String(r));
    body.push(
        el("tr", {class: "topk-row", dataset: {row: r}}, label,
           topk(t, r, n).map(
               (e) =>
                   el("td", {title: `${tokenTitle(e.id)}: ${fmt(e.value)}`}, tokenSpan(e.id),
                      el("span", {class: "topk-value"}, fmt(e.value))))));
  }
  return el(
      "div", {class: "picture", dataset: {kind: "topk"}},
      el("div", {class: "table-scroll"},
         el("table", {class: "topk topk-rows"},
            el("thead", {},
               el("tr", {}, el("th", {}, rowLabels ? "position" : "row"),
                  [...Array(TOPK).keys()].map((i) => el("th", {}, `#${i + 1}`)))),
            el("tbody", {}, body))),
      rows > shown ? capNote(`${rows - shown} rows not drawn`) : null);
}

/// A float save of 2 or more dimensions, as [rows, last]: each row's L2 norm, and the values
/// as a heatmap (at most 64 x 1024 of them).
function matrix(t, ctx) {
  const cols = t.shape.at(-1);
  const rows = numel(t.shape) / cols;
  const v = t.values;
  const norms = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let c = 0; c < cols; c++) s += v[r * cols + c] ** 2;
    norms[r] = Math.sqrt(s);
  }
  const labels = t.shape.length === 2 ? ctx.labelsFor(rows) : null;
  const out = [
    t.shape.length > 2 ? capNote(`shown as [${rows}, ${cols}]`) : null,
    el("p", {class: "plot-title"}, "L2 norm of each row"),
    withKind(
        linePlot(norms, {labels: labels && rows <= 48 ? labels.text : null, xName: "row"}), "line"),
  ];
  const shownRows = Math.min(rows, MAX_HEAT_ROWS);
  const shownCols = Math.min(cols, MAX_HEAT_COLS);
  out.push(
      el("p", {class: "plot-title"}, "values"),
      withKind(
          heatmap({
            rows: shownRows,
            cols: shownCols,
            value: (r, c) => v[r * cols + c],
            rowLabels: labels ? labels.text.slice(0, shownRows) : null,
            colName: "feature",
          }),
          "heatmap"));
  const hidden = rows * cols - shownRows * shownCols;
  if (hidden)
    out.push(capNote(
        `rows 0..${shownRows - 1}, columns 0..${shownCols - 1} drawn; ${hidden} values not drawn`));
  return out;
}

/// [heads, T, S]: one heatmap per head (svg.heatmap[data-head]), queries down, keys across,
/// with a selector to show one head.
function patternHeads(t, ctx) {
  const [H, T, S] = t.shape;
  const figures = [];
  for (let h = 0; h < H; h++) {
    figures.push(
        el("div", {class: "head-figure", dataset: {head: h}},
           el("p", {class: "plot-title"}, `head ${h}`), patternFigure(t, h, T, S, ctx, 300)));
  }
  const select =
      el("select", {
        class: "head-select",
        "aria-label": "head",
        onchange: () => figures.forEach((f) => {
          f.hidden = select.value !== "all" && f.dataset.head !== select.value;
        }),
      },
         el("option", {value: "all"}, `all ${H} heads`),
         [...Array(H).keys()].map((h) => el("option", {value: String(h)}, `head ${h}`)));
  const hidden = H * T * S - H * Math.min(T, MAX_PATTERN_QUERIES) * Math.min(S, MAX_PATTERN_KEYS);
  return el(
      "div", {class: "picture pattern", dataset: {kind: "heatmap"}},
      el("div", {class: "pattern-controls"}, select,
         el("span", {class: "hint"}, "rows: queries, columns: keys")),
      el("div", {class: "head-grid"}, figures),
      hidden ? capNote(`the last ${MAX_PATTERN_QUERIES} queries and ${
                   MAX_PATTERN_KEYS} keys drawn; ${hidden} values not drawn`) :
               null);
}

/// One head's [T, S] pattern (the last queries and keys when there are many).
function patternFigure(t, h, T, S, ctx, maxWidth) {
  const rows = Math.min(T, MAX_PATTERN_QUERIES);
  const cols = Math.min(S, MAX_PATTERN_KEYS);
  const r0 = T - rows;
  const c0 = S - cols;
  const labels = ctx.patternLabels(T, S);
  const v = t.values;
  const base = h * T * S;
  const figure = heatmap({
    rows,
    cols,
    value: (r, c) => v[base + (r0 + r) * S + c0 + c],
    rowLabels: labels ? labels.queries.slice(r0) : null,
    colLabels: labels ? labels.keys.slice(c0) : null,
    rowName: "query",
    colName: "key",
    lo: 0,
    hi: Math.max(1e-9, maxOf(v, base, T * S)),
    maxWidth,
  });
  figure.querySelector("svg").dataset.head = h;
  return figure;
}

function maxOf(v, from, n) {
  let m = -Infinity;
  for (let i = from; i < from + n; i++)
    if (v[i] > m) m = v[i];
  return m;
}

function renderGroup(item, ctx) {
  const {base, members} = item;
  const first = members[0].tensor;
  const ks = members.map((m) => m.k);
  const kName = base.startsWith("model.layers.*.") ? "layer" : "k";
  const title = base.startsWith("model.layers.*.") ? base : `${base}.<k>`;
  const head =
      el("div", {class: "save-head"}, el("span", {class: "save-name"}, title),
         el("span", {class: "save-shape"},
            `${members.length} × ${first.dtype}[${first.shape.join(", ")}]`),
         el("span", {class: "group-range"}, `${kName} ${ks[0]}..${ks.at(-1)}`));
  const node = el("div", {class: "save-group", dataset: {base}}, head);
  if (isTokenGroup(item))
    node.append(lensGrid(item, kName, ctx));
  else if (isLogitsGroup(item, ctx)) {
    node.append(lensGrid(topTokenGroup(item), kName, ctx));
    node.append(memberBrowser(item, kName, ctx, true));
  } else {
    const floats =
        members.every((m) => isFloat(m.tensor.dtype) && sameShape(m.tensor.shape, first.shape));
    const drawnOverK = floats && first.shape.length <= 2;
    if (drawnOverK) node.append(...overK(item, kName, ctx));
    node.append(memberBrowser(item, kName, ctx, drawnOverK));
  }
  return node;
}

/// Float members of one shape [vocab] or [T, vocab]: logits or (log-)probabilities per k, as
/// a logit lens over every layer saves them.
function isLogitsGroup(item, ctx) {
  const shape = item.members[0].tensor.shape;
  return shape.length >= 1 && shape.length <= 2 && shape.at(-1) === ctx.vocab &&
      item.members.every((m) => isFloat(m.tensor.dtype) && sameShape(m.tensor.shape, shape));
}

/// A logits group as the token group of each row's top token, shaded by that token's
/// probability: the softmax of the row (the same for logits, log-probabilities and, up to
/// rounding, probabilities' logarithms).
function topTokenGroup(item) {
  const shape = item.members[0].tensor.shape;
  const n = shape.at(-1);
  const rows = shape.length === 2 ? shape[0] : 1;
  const outShape = shape.slice(0, -1);
  const tokens = [];
  const probs = [];
  for (const m of item.members) {
    const v = m.tensor.values;
    const ids = new Float64Array(rows);
    const p = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      const off = r * n;
      let best = 0;
      for (let i = 1; i < n; i++)
        if (v[off + i] > v[off + best]) best = i;
      let sum = 0;
      for (let i = 0; i < n; i++) sum += Math.exp(v[off + i] - v[off + best]);
      ids[r] = best;
      p[r] = 1 / sum;
    }
    tokens.push({k: m.k, name: m.name, tensor: {dtype: "int64", shape: outShape, values: ids}});
    probs.push({
      k: m.k,
      name: `softmax(${m.name})`,
      tensor: {dtype: "float32", shape: outShape, values: p},
    });
  }
  return {base: item.base, members: tokens, shade: {base: `softmax(${item.base})`, members: probs}};
}

/// The members one at a time, chosen by k (select.member-select); folded away when the group
/// is already drawn over k above it.
function memberBrowser(item, kName, ctx, folded) {
  const view = el("div", {class: "group-members"});
  const select =
      el("select", {class: "member-select", "aria-label": kName},
         item.members.map((m, i) => el("option", {value: String(i)}, `${kName} ${m.k}`)));
  const show = () => {
    const m = item.members[Number(select.value)];
    view.replaceChildren(renderSave(m.name, m.tensor, ctx));
  };
  select.addEventListener("change", show);
  const controls = el("div", {class: "member-controls"}, "show ", select);
  if (!folded) {
    show();
    return el("div", {class: "members"}, controls, view);
  }
  const details = el(
      "details", {class: "members"},
      el("summary", {}, `each ${kName} on its own (${item.members.length} saves)`), controls, view);
  details.addEventListener("toggle", () => {
    if (details.open && !view.childElementCount) show();
  });
  return details;
}

/// Float members over k: scalars as they are, [D] by their norm (and stacked into a heatmap),
/// [T, D] by the last row's norm (and every row's norm as a heatmap).
function overK(item, kName, ctx) {
  const {members} = item;
  const shape = members[0].tensor.shape;
  const ks = members.map((m) => String(m.k));
  const K = members.length;
  const norm = (v, from, n) => {
    let s = 0;
    for (let i = from; i < from + n; i++) s += v[i] ** 2;
    return Math.sqrt(s);
  };
  if (shape.length === 0) {
    const values = Float64Array.from(members, (m) => m.tensor.values[0]);
    return [
      el("p", {class: "plot-title"}, `value per ${kName}`),
      withKind(linePlot(values, {labels: K <= 48 ? ks : null, xName: kName}), "line")
    ];
  }
  if (shape.length === 1) {
    const [D] = shape;
    const out = [
      el("p", {class: "plot-title"}, `L2 norm per ${kName}`),
      withKind(
          linePlot(
              Float64Array.from(members, (m) => norm(m.tensor.values, 0, D)),
              {labels: K <= 48 ? ks : null, xName: kName}),
          "line")
    ];
    if (D <= MAX_HEAT_COLS && K <= MAX_GRID_ROWS) {
      const labels = ctx.labelsFor(D);
      out.push(
          el("p", {class: "plot-title"}, `values (rows: ${kName})`),
          withKind(
              heatmap({
                rows: K,
                cols: D,
                value: (r, c) => members[r].tensor.values[c],
                rowLabels: ks,
                colLabels: labels ? labels.text : null,
                rowName: kName,
                colName: labels ? "position" : "index",
              }),
              "heatmap"));
    }
    return out;
  }
  const [T, D] = shape;
  const labels = ctx.labelsFor(T);
  const out = [
    el("p", {class: "plot-title"}, `L2 norm of the last row per ${kName}`),
    withKind(
        linePlot(
            Float64Array.from(members, (m) => norm(m.tensor.values, (T - 1) * D, D)),
            {labels: K <= 48 ? ks : null, xName: kName}),
        "line")
  ];
  if (T <= MAX_HEAT_COLS && K <= MAX_GRID_ROWS) {
    out.push(
        el("p", {class: "plot-title"},
           `L2 norm of each row (rows: ${kName}, columns: ${labels ? "positions" : "rows"})`),
        withKind(
            heatmap({
              rows: K,
              cols: T,
              value: (r, c) => norm(members[r].tensor.values, c * D, D),
              rowLabels: ks,
              colLabels: labels ? labels.text : null,
              rowName: kName,
              colName: labels ? "position" : "row",
              log: true,
            }),
            "heatmap"));
  }
  return out;
}

/// Token members ([T] or []) as a grid: a row per k, a column per position, each cell the
/// token, shaded by the matching float group's value (the logit lens: top.<k> and prob.<k>).
function lensGrid(item, kName, ctx) {
  const {members, shade} = item;
  const shape = members[0].tensor.shape;
  const T = shape.length === 0 ? 1 : shape[0];
  const cols = Math.min(T, MAX_GRID_COLS);
  const c0 = T - cols;
  const rows = Math.min(members.length, MAX_GRID_ROWS);
  const labels = shape.length === 0 ? null : ctx.labelsFor(T);
  let scale = null;
  if (shade) {
    let lo = Infinity;
    let hi = -Infinity;
    for (const m of shade.members)
      for (const x of m.tensor.values) {
        lo = Math.min(lo, x);
        hi = Math.max(hi, x);
      }
    if (lo >= 0 && hi <= 1) {
      lo = 0;
      hi = 1;
    }
    scale = colorScale(lo, hi === lo ? lo + 1 : hi);
  }
  const header =
      el("tr", {}, el("th", {class: "corner"}, kName),
         [...Array(cols).keys()].map(
             (c) =>
                 el("th", {class: "lens-pos", title: labels ? tokenTitle(labels.ids[c0 + c]) : ""},
                    shape.length === 0 ? "token" :
                        labels         ? tokenNodes(labels.ids[c0 + c]) :
                                         String(c0 + c))));
  const body = [];
  for (let r = 0; r < rows; r++) {
    const m = members[r];
    const cells = [];
    for (let c = 0; c < cols; c++) {
      const id = m.tensor.values[c0 + c];
      const s = shade ? shade.members[r].tensor.values[c0 + c] : null;
      const where = shape.length === 0 ?
          "" :
          ` at position ${c0 + c}${
              labels ? ` (${JSON.stringify(tokenText(labels.ids[c0 + c]) ?? "")})` : ""}`;
      const title = `${m.name}${where}: ${tokenTitle(id)}${
          shade ? `, ${shade.members[r].name} = ${fmt(s)}` : ""}`;
      const attrs = {class: "lens-cell", title, dataset: {tokenId: id}};
      if (scale) {
        const color = scale.color(s);
        attrs.style = `background: rgb(${color.join(",")}); color: ${
            color[0] * 0.3 + color[1] * 0.59 + color[2] * 0.11 < 130 ? "#fff" : "#111"}`;
        attrs.dataset.value = s;
      }
      cells.push(el("td", attrs, tokenNodes(id)));
    }
    body.push(el("tr", {dataset: {k: m.k}}, el("th", {class: "lens-k"}, String(m.k)), cells));
  }
  const hidden = members.length * T - rows * cols;
  return el(
      "div", {class: "picture lens", dataset: {kind: "tokens"}},
      shade ? el("p", {class: "plot-title"},
                 `shaded by ${shade.base}.<k> (${fmt(scale.lo)} .. ${
                     fmt(scale.hi)}); hover a cell for its value`) :
              null,
      el("div", {class: "table-scroll"},
         el("table", {class: "lens-grid"}, el("thead", {}, header), el("tbody", {}, body))),
      hidden ? capNote(`${hidden} cells not drawn`) : null);
}
