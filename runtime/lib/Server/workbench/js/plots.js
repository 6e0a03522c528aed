// Plain SVG plots: line, bars and heatmap. Each returns a div.figure holding the svg and a
// .readout line that names the value under the mouse.
import {el, fmt, svgEl} from "./dom.js";

const WIDTH = 560;
const FONT = 11;
const MAX_LINE_POINTS = 1200;
const MAX_RECT_CELLS = 4096;
const CHAR_WIDTH = 6.7;  // of the 11 px monospace tick font

let gradientCount = 0;

/// A label cut to n characters.
function cut(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

function range(values) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo === Infinity) return [0, 1];
  return [lo, hi];
}

function figure(svg, width, height, onHover) {
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  const readout = el("div", {class: "readout"}, "\u00a0");
  svg.addEventListener("mousemove", (e) => {
    const box = svg.getBoundingClientRect();
    const scale = box.width / width;
    const text = onHover((e.clientX - box.left) / scale, (e.clientY - box.top) / scale);
    readout.textContent = text ?? "\u00a0";
  });
  svg.addEventListener("mouseleave", () => {
    readout.textContent = "\u00a0";
  });
  return el("div", {class: "figure"}, svg, readout);
}

/// Index ticks along x: every label when there are few, else the first, middle and last.
function xTicks(n, labels, x, y, rotate) {
  const out = [];
  const every = n <= 48 && labels;
  const at = every ? [...Array(n).keys()] : [...new Set([0, Math.floor((n - 1) / 2), n - 1])];
  for (const i of at) {
    const text = cut(labels ? labels[i] : String(i), 12);
    out.push(
        rotate ?
            svgEl(
                "text", {
                  class: "tick",
                  transform: `translate(${x(i)},${y}) rotate(-55)`,
                  "text-anchor": "end"
                },
                text) :
            svgEl("text", {class: "tick", x: x(i), y: y + FONT, "text-anchor": "middle"}, text));
  }
  return out;
}

/// A line over the values (a [min, max] envelope per pixel when there are many), with the
/// The largest and smallest value, written left of a plot's y axis.
function rangeLabels(left, top, plotH, lo, hi) {
  return [
    svgEl(
        "text", {class: "tick max-label", x: left - 4, y: top + FONT - 2, "text-anchor": "end"},
        `max ${fmt(hi)}`),
    svgEl(
        "text", {class: "tick min-label", x: left - 4, y: top + plotH, "text-anchor": "end"},
        `min ${fmt(lo)}`),
  ];
}

/// minimum and maximum labeled. labels: one x label per value, or null for indices.
export function linePlot(values, {labels = null, xName = "index", height = 150} = {}) {
  const n = values.length;
  const [lo0, hi0] = range(values);
  const lo = lo0 === hi0 ? lo0 - 1 : lo0;
  const hi = lo0 === hi0 ? hi0 + 1 : hi0;
  const rotate = labels !== null && n <= 48 && labels.some((l) => l.length > 3);
  const left = 90;
  const top = 8;
  const bottom = rotate ? 64 : 30;
  const plotW = WIDTH - left - 12;
  const plotH = height - top - bottom;
  const x = (i) => left + (n === 1 ? plotW / 2 : (i / (n - 1)) * plotW);
  const y = (v) => top + ((hi - v) / (hi - lo)) * plotH;

  let points = [];
  if (n > MAX_LINE_POINTS) {
    const buckets = MAX_LINE_POINTS / 2;
    for (let b = 0; b < buckets; b++) {
      const a = Math.floor((b * n) / buckets);
      const e = Math.floor(((b + 1) * n) / buckets);
      const [blo, bhi] = range(values.subarray ? values.subarray(a, e) : values.slice(a, e));
      points.push([x(a), y(bhi)], [x(a), y(blo)]);
    }
  } else {
    points = Array.from(values, (v, i) => [x(i), y(Number.isFinite(v) ? v : lo)]);
  }
  const marker = svgEl("circle", {class: "hover-marker", r: 3.5, cx: -10, cy: -10});
  const svg = svgEl(
      "svg",
      {class: "plot line-plot"},
      svgEl("line", {class: "axis", x1: left, y1: top, x2: left, y2: top + plotH}),
      svgEl("line", {class: "axis", x1: left, y1: top + plotH, x2: left + plotW, y2: top + plotH}),
      lo < 0 && hi > 0 ?
          svgEl("line", {class: "zero", x1: left, y1: y(0), x2: left + plotW, y2: y(0)}) :
          null,
      rangeLabels(left, top, plotH, lo0, hi0),
      svgEl("polyline", {class: "series", points: points.map((p) => p.join(",")).join(" ")}),
      n <= 64 ? Array.from(
                    values,
                    (v, i) => svgEl(
                        "circle",
                        {class: "point", r: 2.2, cx: x(i), cy: y(Number.isFinite(v) ? v : lo)})) :
                null,
      xTicks(n, labels, x, top + plotH + (rotate ? 8 : 4), rotate),
      rotate ?
          null :
          svgEl(
              "text", {class: "axis-name", x: left + plotW, y: height - 2, "text-anchor": "end"},
              xName),
      marker,
  );
  return figure(svg, WIDTH, height, (mx) => {
    if (mx < left - 6 || mx > left + plotW + 6) return null;
    const i = n === 1 ? 0 : Math.round(((mx - left) / plotW) * (n - 1));
    if (i < 0 || i >= n) return null;
    marker.setAttribute("cx", x(i));
    marker.setAttribute("cy", y(Number.isFinite(values[i]) ? values[i] : lo));
    return `${labels ? `${i}: ${labels[i]}` : `${xName} ${i}`} → ${fmt(values[i])}`;
  });
}

/// One bar per value (at most a few dozen) from zero, with the minimum and maximum labeled.
export function barPlot(values, {labels = null, height = 150} = {}) {
  const n = values.length;
  const [lo0, hi0] = range(values);
  const lo = Math.min(lo0, 0);
  const hi = Math.max(hi0, 0) === lo ? lo + 1 : Math.max(hi0, 0);
  const rotate = labels !== null && labels.some((l) => l.length > 3);
  const left = 90;
  const top = 8;
  const bottom = rotate ? 64 : 30;
  const plotW = Math.min(WIDTH - left - 12, n * 28);
  const plotH = height - top - bottom;
  const slot = plotW / n;
  const x = (i) => left + (i + 0.5) * slot;
  const y = (v) => top + ((hi - v) / (hi - lo)) * plotH;
  const bars = Array.from(values, (v, i) => {
    const y0 = y(0);
    const y1 = y(Number.isFinite(v) ? v : 0);
    return svgEl("rect", {
      class: v < 0 ? "bar negative" : "bar",
      x: left + i * slot + slot * 0.12,
      width: slot * 0.76,
      y: Math.min(y0, y1),
      height: Math.max(Math.abs(y1 - y0), 0.5),
    });
  });
  const svg = svgEl(
      "svg",
      {class: "plot bar-plot"},
      svgEl("line", {class: "axis", x1: left, y1: top, x2: left, y2: top + plotH}),
      bars,
      svgEl("line", {class: "axis", x1: left, y1: y(0), x2: left + plotW, y2: y(0)}),
      rangeLabels(left, top, plotH, lo0, hi0),
      xTicks(n, labels, x, top + plotH + (rotate ? 8 : 4), rotate),
  );
  return figure(svg, left + plotW + 12, height, (mx) => {
    const i = Math.floor((mx - left) / slot);
    if (i < 0 || i >= n) return null;
    return `${labels ? `${i}: ${labels[i]}` : `index ${i}`} → ${fmt(values[i])}`;
  });
}

/// [r, g, b] for t in [0, 1] (white to dark blue).
function sequential(t) {
  const stops = [[255, 255, 255], [107, 174, 214], [8, 48, 107]];
  const s = Math.min(Math.max(t, 0), 1) * 2;
  const k = Math.min(Math.floor(s), 1);
  const f = s - k;
  return stops[k].map((a, j) => Math.round(a + (stops[k + 1][j] - a) * f));
}

/// [r, g, b] for t in [-1, 1] (blue, white at 0, red).
function diverging(t) {
  const c = t < 0 ? [33, 102, 172] : [178, 24, 43];
  const f = Math.min(Math.abs(t), 1);
  return c.map((a) => Math.round(255 + (a - 255) * f));
}

/// A color function over [lo, hi]: diverging around 0 when the values have both signs.
export function colorScale(lo, hi) {
  if (lo < 0 && hi > 0) {
    const m = Math.max(-lo, hi);
    return {diverging: true, color: (v) => diverging(v / m), lo: -m, hi: m};
  }
  const span = hi - lo || 1;
  if (hi <= 0) return {diverging: false, color: (v) => sequential((hi - v) / span), lo, hi};
  return {diverging: false, color: (v) => sequential((v - lo) / span), lo, hi};
}

/// The value at fraction f of the legend.
function legendValue(scale, f) {
  if (scale.log)
    return 10 ** (Math.log10(scale.lo) + f * (Math.log10(scale.hi) - Math.log10(scale.lo)));
  return scale.lo + f * (scale.hi - scale.lo);
}

const rgb = (c) => `rgb(${c[0]},${c[1]},${c[2]})`;

/// A heatmap of rows x cols values (value(r, c)), with token or index labels on the axes, and
/// a color legend. Rect cells when there are few, one raster image otherwise. log: color by
/// log10 of positive values that span more than two decades (norms dominated by one position).
export function heatmap({
  rows,
  cols,
  value,
  rowLabels = null,
  colLabels = null,
  rowName = "row",
  colName = "column",
  lo,
  hi,
  maxWidth = WIDTH,
  log = false
}) {
  if (lo === undefined || hi === undefined) {
    lo = Infinity;
    hi = -Infinity;
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const v = value(r, c);
        if (Number.isFinite(v)) {
          lo = Math.min(lo, v);
          hi = Math.max(hi, v);
        }
      }
    }
    if (lo === Infinity) {
      lo = 0;
      hi = 1;
    }
  }
  let scale = colorScale(lo, hi);
  if (log && lo > 0 && hi / lo > 100) {
    const inner = colorScale(Math.log10(lo), Math.log10(hi));
    scale = {diverging: false, lo, hi, log: true, color: (v) => inner.color(Math.log10(v))};
  }
  const longest = (labels) => labels.reduce((m, s) => Math.max(m, Math.min(s.length, 14)), 1);
  const labelW = rowLabels ? Math.min(110, 12 + CHAR_WIDTH * longest(rowLabels)) : 34;
  const cellW = Math.min(18, (maxWidth - labelW - 10) / cols);
  const cellH = Math.min(18, Math.max(cellW, Math.min(14, 320 / rows)));
  const showColLabels = colLabels !== null && cellW >= 3;
  const headH = showColLabels ? Math.min(96, 10 + 5.6 * longest(colLabels)) : 16;
  const plotW = cellW * cols;
  const plotH = cellH * rows;
  const loText = fmt(scale.lo);
  const hiText = `${fmt(scale.hi)}${scale.log ? " (log scale)" : ""}`;
  const legendX = labelW + CHAR_WIDTH * loText.length + 4;
  const width =
      Math.ceil(Math.max(labelW + plotW + 10, legendX + 118 + CHAR_WIDTH * hiText.length));
  const height = Math.ceil(headH + plotH + 34);
  const x0 = labelW;
  const y0 = headH;

  let cells;
  if (rows * cols <= MAX_RECT_CELLS) {
    cells = [];
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const v = value(r, c);
        cells.push(svgEl("rect", {
          class: "cell",
          x: x0 + c * cellW,
          y: y0 + r * cellH,
          width: cellW,
          height: cellH,
          fill: Number.isFinite(v) ? rgb(scale.color(v)) : "#ccc",
        }));
      }
    }
  } else {
    const canvas = document.createElement("canvas");
    canvas.width = cols;
    canvas.height = rows;
    const ctx = canvas.getContext("2d");
    const image = ctx.createImageData(cols, rows);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const v = value(r, c);
        const col = Number.isFinite(v) ? scale.color(v) : [204, 204, 204];
        const k = 4 * (r * cols + c);
        image.data.set([col[0], col[1], col[2], 255], k);
      }
    }
    ctx.putImageData(image, 0, 0);
    cells = svgEl("image", {
      class: "cells",
      x: x0,
      y: y0,
      width: plotW,
      height: plotH,
      preserveAspectRatio: "none",
      href: canvas.toDataURL("image/png"),
    });
  }

  // Labels at least 11 px apart: every one when the cells are tall enough, else every n-th.
  const rowText = [];
  const rowStep = Math.ceil(11 / cellH);
  for (let r = 0; r < rows; r += rowStep) {
    rowText.push(svgEl(
        "text", {
          class: "tick",
          x: x0 - 4,
          y: y0 + (r + 0.5) * cellH + 4,
          "text-anchor": "end",
        },
        cut(rowLabels ? rowLabels[r] : String(r), 14)));
  }
  const colText = [];
  if (showColLabels) {
    const colStep = Math.ceil(11 / cellW);
    for (let c = 0; c < cols; c += colStep) {
      colText.push(svgEl(
          "text", {
            class: "tick",
            "text-anchor": "start",
            transform: `translate(${x0 + (c + 0.5) * cellW + 3},${y0 - 4}) rotate(-55)`,
          },
          cut(colLabels[c], 14)));
    }
  } else {
    colText.push(
        svgEl("text", {class: "tick", x: x0, y: y0 - 4}, "0"),
        svgEl(
            "text", {class: "tick", x: x0 + plotW, y: y0 - 4, "text-anchor": "end"},
            String(cols - 1)));
  }

  const id = `heat-gradient-${++gradientCount}`;
  const stops = scale.diverging ? 5 : 3;
  const legendY = y0 + plotH + 12;
  const legend = [
    svgEl(
        "defs", {},
        svgEl(
            "linearGradient", {id},
            [...Array(stops).keys()].map(
                (i) => svgEl("stop", {
                  offset: `${(100 * i) / (stops - 1)}%`,
                  "stop-color": rgb(scale.color(legendValue(scale, i / (stops - 1)))),
                })))),
    svgEl("text", {class: "tick", x: x0, y: legendY + 8}, loText),
    svgEl(
        "rect",
        {class: "legend", x: legendX, y: legendY, width: 110, height: 9, fill: `url(#${id})`}),
    svgEl("text", {class: "tick", x: legendX + 114, y: legendY + 8}, hiText),
  ];
  const svg = svgEl(
      "svg", {class: "plot heatmap"}, cells,
      svgEl("rect", {class: "frame", x: x0, y: y0, width: plotW, height: plotH}), rowText, colText,
      legend);
  return figure(svg, width, height, (mx, my) => {
    const c = Math.floor((mx - x0) / cellW);
    const r = Math.floor((my - y0) / cellH);
    if (r < 0 || r >= rows || c < 0 || c >= cols) return null;
    const rl = rowLabels ? `${r} ${rowLabels[r]}` : String(r);
    const cl = colLabels ? `${c} ${colLabels[c]}` : String(c);
    return `${rowName} ${rl}, ${colName} ${cl} → ${fmt(value(r, c))}`;
  });
}
