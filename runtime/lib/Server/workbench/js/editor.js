// The .nns editor: a textarea over a highlighted <pre> with the same font and metrics (the
// textarea's text is transparent, its caret and selection show), a line-number gutter, and
// compile errors marked at their line and column.
import {escapeHtml} from "./dom.js";
import {lexLine} from "./source.js";

const DIAGNOSTIC = /^program\.nns:(\d+):(\d+): (error|warning|note): (.*)$/;
const RUN_PLACE = /program\.nns:(\d+):(\d+): /;

/// The `program.nns:L:C: severity: text` lines of a compile error's message.
function parseDiagnostics(message) {
  const out = [];
  for (const line of message.split("\n")) {
    const m = DIAGNOSTIC.exec(line);
    if (m) out.push({line: Number(m[1]), column: Number(m[2]), severity: m[3], text: m[4]});
  }
  return out;
}

export class Editor {
  /// onChange runs after every edit (typing, insertions, setting the source).
  constructor({textarea, highlight, gutter, errorBox, onChange}) {
    this.textarea = textarea;
    this.highlight = highlight;
    this.gutter = gutter;
    this.errorBox = errorBox;
    this.onChange = onChange;
    this.marks = [];
    textarea.addEventListener("input", () => this.edited());
    textarea.addEventListener("scroll", () => this.syncScroll());
    textarea.addEventListener("keydown", (e) => this.keydown(e));
    errorBox.addEventListener("click", () => {
      if (errorBox.dataset.line)
        this.goTo(Number(errorBox.dataset.line), Number(errorBox.dataset.column));
    });
    this.render();
  }

  get value() {
    return this.textarea.value;
  }

  set value(src) {
    this.textarea.value = src;
    this.textarea.setSelectionRange(0, 0);
    this.textarea.scrollTop = 0;
    this.edited();
  }

  /// Inserts text at the cursor (replacing a selection), as typing would (undo works).
  insertAtCursor(text) {
    this.textarea.focus();
    if (!document.execCommand("insertText", false, text)) {
      this.textarea.setRangeText(
          text, this.textarea.selectionStart, this.textarea.selectionEnd, "end");
      this.edited();
    }
  }

  /// Marks compile diagnostics; errors mark their line (span.error-line) and column
  /// (span.error-caret), and #compile-error shows the message with the first error's place.
  showCompileError(message) {
    const diagnostics = parseDiagnostics(message);
    this.showMarks(diagnostics.filter((d) => d.severity === "error"), diagnostics[0], message);
  }

  /// Marks the place a run-time failure names (`program_failed`: "... program.nns:L:C: index
  /// 100 is out of range ..."), as a compile error is marked.
  showRunError(message) {
    const m = RUN_PLACE.exec(message);
    if (!m) return;
    const place = {line: Number(m[1]), column: Number(m[2]), severity: "error", text: message};
    this.showMarks([place], place, message);
  }

  showMarks(marks, fallback, message) {
    this.marks = marks;
    const first = this.marks[0] ?? fallback;
    this.errorBox.textContent = message.replace(/\n+$/, "");
    this.errorBox.hidden = false;
    if (first) {
      this.errorBox.dataset.line = first.line;
      this.errorBox.dataset.column = first.column;
      this.errorBox.title = "click to go to the error";
    }
    this.render();
  }

  clearMarks() {
    this.marks = [];
    this.errorBox.hidden = true;
    this.errorBox.textContent = "";
    delete this.errorBox.dataset.line;
    delete this.errorBox.dataset.column;
    this.errorBox.removeAttribute("title");
    this.render();
  }

  /// Puts the cursor at a 1-based line and column and scrolls it into view.
  goTo(line, column) {
    const lines = this.textarea.value.split("\n");
    let offset = 0;
    for (let i = 0; i < Math.min(line - 1, lines.length); i++) offset += lines[i].length + 1;
    const lineText = lines[Math.min(line, lines.length) - 1] ?? "";
    offset += Math.min(Math.max(column - 1, 0), lineText.length);
    this.textarea.focus();
    this.textarea.setSelectionRange(offset, offset);
    const lineHeight = parseFloat(getComputedStyle(this.textarea).lineHeight) || 18;
    const top = (line - 1) * lineHeight;
    if (top < this.textarea.scrollTop ||
        top > this.textarea.scrollTop + this.textarea.clientHeight - 2 * lineHeight)
      this.textarea.scrollTop = Math.max(0, top - this.textarea.clientHeight / 3);
    this.syncScroll();
  }

  edited() {
    if (this.marks.length || !this.errorBox.hidden)
      this.clearMarks();
    else
      this.render();
    this.onChange?.();
  }

  keydown(e) {
    if (e.key === "Tab" && !e.shiftKey && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      this.insertAtCursor("    ");
    }
  }

  syncScroll() {
    this.highlight.scrollTop = this.textarea.scrollTop;
    this.highlight.scrollLeft = this.textarea.scrollLeft;
    this.gutter.scrollTop = this.textarea.scrollTop;
  }

  render() {
    const lines = this.textarea.value.split("\n");
    const byLine = new Map();
    for (const m of this.marks)
      if (!byLine.has(m.line)) byLine.set(m.line, m);
    const html = lines.map((line, i) => {
      const mark = byLine.get(i + 1);
      if (!mark) return segmentsHtml(lexLine(line));
      return `<span class="error-line" data-line="${i + 1}">${
          markedLineHtml(line, mark.column)}</span>`;
    });
    // The trailing newline keeps a last empty line as tall as in the textarea.
    this.highlight.innerHTML = html.join("\n") + "\n";
    this.gutter.innerHTML =
        lines
            .map(
                (_, i) => byLine.has(i + 1) ? `<span class="error-line-number">${i + 1}</span>` :
                                              String(i + 1),
                )
            .join("\n") +
        "\n";
    this.syncScroll();
  }
}

function segmentsHtml(segments) {
  return segments
      .map(({text,
             cls}) => cls ? `<span class="${cls}">${escapeHtml(text)}</span>` : escapeHtml(text))
      .join("");
}

/// A line with the character at the 1-based column wrapped in span.error-caret (a space after
/// the end when the column is past it).
function markedLineHtml(line, column) {
  const at = column - 1;
  if (at >= line.length)
    return segmentsHtml(lexLine(line)) + "<span class=\"error-caret\"> </span>";
  let pos = 0;
  let html = "";
  for (const seg of lexLine(line)) {
    const end = pos + seg.text.length;
    if (at >= pos && at < end) {
      const k = at - pos;
      html += segmentsHtml([{text: seg.text.slice(0, k), cls: seg.cls}]);
      html +=
          `<span class="error-caret">${segmentsHtml([{text: seg.text[k], cls: seg.cls}])}</span>`;
      html += segmentsHtml([{text: seg.text.slice(k + 1), cls: seg.cls}]);
    } else
      html += segmentsHtml([seg]);
    pos = end;
  }
  return html;
}
