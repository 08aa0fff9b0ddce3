// The HTML report of an evolution run: the run's data sits in the page as JSON and the page's
// own script draws it into inline SVG when opened, so one file holds both the charts and the
// numbers behind them, and needs no network, library or font from elsewhere.
#include "evolve/search/report.h"

namespace ks {

namespace {

// The page. @DATA@ becomes the run's data; everything else is drawn by the script from it,
// so the C++ side never has to escape text for HTML.
constexpr const char *kPage = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kernelsmith evolve report</title>
<style>
  :root { --ink: #1f2328; --muted: #656d76; --line: #d0d7de; --panel: #f6f8fa; --add: #1a7f37; --del: #cf222e; }
  * { box-sizing: border-box; }
  body { max-width: 1200px; margin: 0 auto; padding: 24px 32px 48px; color: var(--ink); background: #fff;
         font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
  h1 { font-size: 22px; font-weight: 600; margin: 0; }
  h2 { font-size: 16px; font-weight: 600; margin: 32px 0 10px; padding-bottom: 4px;
       border-bottom: 1px solid var(--line); }
  code, pre { font: 12px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace; }
  .muted, .note { color: var(--muted); }
  #errors { color: var(--del); background: #fff0f0; border: 1px solid var(--del); padding: 8px; white-space: pre-wrap; }
  #errors:empty { display: none; }
  .top { display: flex; justify-content: space-between; align-items: flex-end; gap: 24px; flex-wrap: wrap; }
  #best { text-align: right; }
  #best .big { font-size: 30px; font-weight: 600; }
  #facts { display: flex; flex-wrap: wrap; gap: 8px 28px; margin: 14px 0 0; }
  #facts dt { color: var(--muted); font-size: 12px; }
  #facts dd { margin: 0; }
  .badge { padding: 0 6px; border-radius: 8px; background: #fff8c5; }
  .badge.finished { background: #dafbe1; }
  .legend { display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 12px; color: var(--muted); margin-bottom: 4px; }
  .swatch { display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin-right: 4px;
            vertical-align: -1px; }
  .swatch.line { width: 18px; height: 3px; border-radius: 0; vertical-align: 3px; }
  svg { display: block; max-width: 100%; height: auto; }
  svg .tick { font-size: 11px; fill: var(--muted); }
  svg .axis-title { font-size: 12px; fill: var(--ink); }
  circle.eval:hover { stroke: var(--ink); stroke-width: 2; }
  rect.cell:hover { stroke: var(--ink); stroke-width: 2; }
  #grids { display: flex; flex-wrap: wrap; gap: 16px 32px; }
  .island h3 { font-size: 13px; font-weight: 600; margin: 0 0 4px; }
  .island h3 span { font-weight: 400; color: var(--muted); }
  ol.chain { list-style: none; margin: 0; padding: 0 0 0 18px; border-left: 2px solid var(--line); }
  li.step { position: relative; margin: 0 0 12px; padding-left: 10px; }
  li.step::before { content: ""; position: absolute; left: -25px; top: 5px; width: 10px; height: 10px;
                    border-radius: 6px; background: #fff; border: 2px solid #57606a; }
  li.step:last-child::before { background: #57606a; }
  .step .head { display: flex; gap: 12px; align-items: baseline; }
  .step .speed { font-weight: 600; min-width: 56px; }
  .step .gain { color: var(--add); min-width: 52px; }
  .step .gain.loss { color: var(--del); }
  .diff { margin: 2px 0 0; white-space: pre-wrap; }
  .diff .add { color: var(--add); }
  .diff .del { color: var(--del); }
  details summary { cursor: pointer; color: var(--muted); font-size: 12px; }
  details pre { background: var(--panel); padding: 6px 8px; margin: 4px 0 0; white-space: pre-wrap; }
  table { border-collapse: collapse; }
  th, td { text-align: left; padding: 4px 14px 4px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
  th { font-size: 12px; font-weight: 600; color: var(--muted); }
  td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
  td.example { max-width: 720px; overflow-wrap: anywhere; }
  .bar { display: inline-block; height: 8px; border-radius: 2px; vertical-align: 0; }
</style>
</head>
<body>
<pre id="errors"></pre>
<script>
  // Installed first so that an error anywhere below, even in the data, shows on the page.
  function reportError(text) { document.getElementById('errors').textContent += text + '\n'; }
  window.onerror = function (message, source, line, column, error) {
    reportError((error && error.stack) || (message + ' (line ' + line + ')'));
  };
</script>
<header>
  <div class="top">
    <div><h1 id="title">evolve</h1><div class="muted" id="spec"></div></div>
    <div id="best"></div>
  </div>
  <dl id="facts"></dl>
</header>
<h2>Best speedup against evaluations</h2>
<div id="progress"></div>
<h2>Archive of each island</h2>
<div id="grid-legend"></div>
<div id="grids"></div>
<h2>Lineage of the best</h2>
<div id="lineage"></div>
<h2>Re-timed top candidates</h2>
<div id="retimed"></div>
<h2>Failures by verdict</h2>
<div id="failures"></div>
<script type="application/json" id="data">@DATA@</script>
<script>
'use strict';
const SVG_NS = 'http://www.w3.org/2000/svg';
const ISLAND_COLOURS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f',
                        '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
const STATUS_COLOURS = { correct: '#1a7f37', incorrect: '#cf222e', flagged: '#8250df', failed: '#6e7781',
                         refused: '#bc4c00', timeout: '#d4a72c' };
// A sequential scale from pale to dark blue; its pale end is kept off white so that a weak cell
// still reads as occupied next to the empty ones.
const RAMP = ['#edf8b1', '#c7e9b4', '#7fcdbb', '#41b6c4', '#1d91c0', '#225ea8', '#0c2c84'];

function list(v) { return Array.isArray(v) ? v : []; }
function num(v) { return typeof v === 'number' && isFinite(v) ? v : null; }
function positive(v) { return num(v) !== null && v > 0; }

function svg(tag, attrs, parent, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}
function html(tag, attrs, parent, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}
function note(parent, text) { return html('p', { class: 'note' }, parent, text); }

function fmtX(v) {
  if (num(v) === null) return '—';
  return (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) + 'x';
}
function fmtPct(cv) { const p = cv * 100; return p.toFixed(p < 10 ? 1 : 0) + '%'; }
function fmtMs(ms) { return num(ms) === null ? '—' : (ms >= 10 ? ms.toFixed(1) : ms.toPrecision(3)) + ' ms'; }
function fmtTick(v) { return String(+v.toPrecision(3)); }
function fmtDuration(s) {
  if (num(s) === null) return null;
  if (s < 60) return s.toFixed(1) + ' s';
  const m = Math.floor(s / 60), h = Math.floor(m / 60);
  if (h) return h + ' h ' + String(m % 60).padStart(2, '0') + ' min';
  return m + ' min ' + String(Math.round(s % 60)).padStart(2, '0') + ' s';
}
function shortId(id) { return id ? String(id).slice(0, 10) : '—'; }
function scheduleText(s) { return s ? String(s) : '(naive kernel: no schedule)'; }
function islandColour(i) { return ISLAND_COLOURS[(((i | 0) % 10) + 10) % 10]; }

function ramp(t) {
  const x = Math.max(0, Math.min(1, t)) * (RAMP.length - 1), i = Math.min(Math.floor(x), RAMP.length - 2);
  const a = parseInt(RAMP[i].slice(1), 16), b = parseInt(RAMP[i + 1].slice(1), 16), f = x - i;
  const channel = shift => Math.round(((a >> shift) & 255) * (1 - f) + ((b >> shift) & 255) * f);
  return 'rgb(' + channel(16) + ',' + channel(8) + ',' + channel(0) + ')';
}

// Ticks of a linear range, at steps of 1, 2 or 5 times a power of ten.
function linearTicks(lo, hi, count, minStep) {
  const span = hi - lo, mag = Math.pow(10, Math.floor(Math.log10(span / count)));
  let step = [1, 2, 5, 10].map(m => m * mag).find(s => span / s <= count) || 10 * mag;
  step = Math.max(step, minStep || 0);
  const ticks = [];
  for (let k = Math.ceil(lo / step); k * step <= hi + 1e-9 * step; k++) ticks.push(+(k * step).toPrecision(12));
  return ticks;
}
// A log axis spanning less than a decade or so gets linear ticks: 1-2-5 alone would leave it bare.
function logTicks(lo, hi) {
  const ticks = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++)
    for (const m of [1, 2, 5]) { const v = m * Math.pow(10, e); if (v >= lo && v <= hi) ticks.push(v); }
  return ticks.length >= 4 ? ticks : linearTicks(lo, hi, 6);
}

// The label of bin i of a feature: bin 0 lies below the first edge, the last at or above the last.
function binLabel(feature, i) {
  const e = list(feature && feature.edges).filter(v => num(v) !== null);
  if (!e.length) return String(i);
  if (i <= 0) return '<' + fmtTick(e[0]);
  if (i >= e.length) return '>=' + fmtTick(e[e.length - 1]);
  const lo = e[i - 1], hi = e[i];
  if (Number.isInteger(lo) && Number.isInteger(hi)) return hi - lo <= 1 ? String(lo) : lo + '-' + (hi - 1);
  return '[' + fmtTick(lo) + ', ' + fmtTick(hi) + ')';
}

function readData() {
  try {
    const d = JSON.parse(document.getElementById('data').textContent);
    return d && typeof d === 'object' ? d : {};
  } catch (e) {
    reportError('the data: ' + e.message);
    return {};
  }
}
const data = readData();
const run = data.run && typeof data.run === 'object' ? data.run : {};
const evaluations = list(data.evaluations).filter(e => e && typeof e === 'object');
const features = list(data.features);

function drawHeader() {
  const kernel = run.kernel || 'kernel';
  document.title = 'evolve: ' + kernel + (run.id !== undefined ? ' (run ' + run.id + ')' : '');
  document.getElementById('title').textContent = 'kernelsmith evolve: ' + kernel;
  document.getElementById('spec').textContent = run.spec || '';
  const facts = document.getElementById('facts');
  const fact = (label, value, cls) => {
    if (value === undefined || value === null || value === '') return;
    const div = html('div', {}, facts);
    html('dt', {}, div, label);
    html('span', cls ? { class: cls } : {}, html('dd', {}, div), String(value));
  };
  fact('device', run.device);
  fact('target', run.target);
  fact('precision', run.precision === 'tf32' ? 'tf32 (KernelBench\'s tolerance)' : run.precision === 'fp32' ? 'fp32-accurate' : run.precision);
  fact('sizes', run.sizes);
  fact('status', run.status, 'badge ' + (run.status || ''));
  const done = num(run.evaluations) !== null ? run.evaluations : evaluations.length;
  fact('evaluations', done + (num(run.budget) !== null ? ' / ' + run.budget : ''));
  fact('run time', fmtDuration(run.seconds));
  fact('started', run.started);
  fact('naive kernel', num(run.baseline_ms) !== null ? fmtMs(run.baseline_ms) : null);
  const proposers = run.proposers && typeof run.proposers === 'object' ? Object.entries(run.proposers) : [];
  fact('proposers', proposers.map(([name, weight]) => name + ' ' + weight).join(', '));
  fact('seed', run.seed);
  const model = data.cost_model && typeof data.cost_model === 'object' ? data.cost_model : null;
  if (model) {
    const rho = num(model.rank_correlation);
    fact('cost model', String(model.kind || '?') + (model.kind === 'xgboost'
        ? ': ' + (num(model.predicted) || 0) + ' ranked' +
          (rho !== null ? ', rank correlation ' + rho.toFixed(2) + ' with the measured speedups' : '')
        : ''));
  }
  const calls = data.model_calls && typeof data.model_calls === 'object' ? data.model_calls : null;
  if (calls)
    fact('model calls', (num(calls.calls) || 0) + ' (' + (num(calls.proposed) || 0) + ' gave a proposal: ' +
        (num(calls.evaluated) || 0) + ' evaluated, ' + (num(calls.correct) || 0) + ' correct, ' +
        (num(calls.failed_to_compile) || 0) + ' failed to compile, ' + (num(calls.duplicates) || 0) +
        ' duplicates, ' + (num(calls.refused) || 0) + ' refused), ' +
        (num(calls.prompt_tokens) || 0) + ' prompt and ' + (num(calls.completion_tokens) || 0) +
        ' completion tokens, ' + fmtDuration(num(calls.latency_s) || 0) + ' waiting');
  const device = data.device_time && typeof data.device_time === 'object' ? data.device_time : null;
  if (device && num(device.median_s) !== null) {
    // The device's calls by phase, the largest first; the driver's builds are the host's work.
    const phases = Object.entries(device.by_phase || {}).filter(([, s]) => num(s) !== null);
    const device_total = phases.filter(([p]) => !p.endsWith('.build')).reduce((a, [, s]) => a + s, 0);
    const builds = phases.filter(([p]) => p.endsWith('.build')).reduce((a, [, s]) => a + s, 0);
    const top = phases.filter(([p]) => !p.endsWith('.build')).sort((a, b) => b[1] - a[1]).slice(0, 5)
        .map(([p, s]) => p + ' ' + (device_total > 0 ? Math.round(100 * s / device_total) : 0) + '%');
    fact('device time', device.median_s.toPrecision(2) + ' s an evaluation (median): ' + top.join(', ') +
        '; the driver\'s builds ' + fmtDuration(builds) + ' in all');
  }
  fact('run', run.id);
  const outcomes = {};
  for (const e of evaluations) outcomes[e.status || '?'] = (outcomes[e.status || '?'] || 0) + 1;
  fact('outcomes', Object.entries(outcomes).map(([s, n]) => s + ' ' + n).join(', '));

  const box = document.getElementById('best'), best = data.best || {};
  const found = num(best.speedup), again = num(best.retimed_speedup), cv = num(best.retimed_cv);
  html('div', { class: 'muted' }, box, 'best speedup over the naive kernel');
  if (again !== null) {
    html('span', { class: 'big' }, box, fmtX(again));
    html('span', {}, box, (cv !== null ? ' ± ' + fmtPct(cv) : '') + ' (re-timed' +
                          (found !== null ? '; ' + fmtX(found) + ' when found' : '') + ')');
  } else {
    html('span', { class: 'big' }, box, found !== null ? fmtX(found) : 'none correct');
  }
}

function drawProgress() {
  const box = document.getElementById('progress');
  if (!evaluations.length) { note(box, 'No evaluations.'); return; }
  const seqs = evaluations.map((e, i) => num(e.seq) !== null ? e.seq : i + 1);
  const last = Math.max(1, ...seqs);
  const speeds = evaluations.filter(e => positive(e.speedup)).map(e => e.speedup);
  const lo = Math.min(1, ...speeds) / 1.12, hi = Math.max(1, ...speeds) * 1.12;
  const W = 1120, H = 400, m = { l: 64, r: 24, t: 12, b: 64 }, bottom = H - m.b;
  const x = s => m.l + (s / last) * (W - m.l - m.r);
  const y = v => bottom - (Math.log(v / lo) / Math.log(hi / lo)) * (bottom - m.t);

  const islands = [...new Set(evaluations.map(e => e.island | 0))].sort((a, b) => a - b);
  const legend = html('div', { class: 'legend' }, box);
  for (const i of islands) {
    const item = html('span', {}, legend);
    html('span', { class: 'swatch', style: 'background:' + islandColour(i) }, item);
    item.appendChild(document.createTextNode('island ' + i));
  }
  const bestItem = html('span', {}, legend);
  html('span', { class: 'swatch line', style: 'background:#24292f' }, bestItem);
  bestItem.appendChild(document.createTextNode('best so far (thin: within an island)'));
  html('span', {}, legend, 'hollow: a speedup not counted (not correct); ticks under the axis: no speedup');

  const chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, id: 'progress-chart' }, box);
  for (const v of logTicks(lo, hi)) {
    svg('line', { x1: m.l, x2: W - m.r, y1: y(v), y2: y(v), stroke: '#eaeef2' }, chart);
    svg('text', { x: m.l - 8, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, chart, fmtTick(v) + 'x');
  }
  for (const s of linearTicks(0, last, 12, 1)) {
    svg('line', { x1: x(s), x2: x(s), y1: bottom, y2: bottom + 18, stroke: '#d0d7de' }, chart);
    svg('text', { x: x(s), y: bottom + 32, 'text-anchor': 'middle', class: 'tick' }, chart, fmtTick(s));
  }
  svg('line', { x1: m.l, x2: W - m.r, y1: bottom, y2: bottom, stroke: '#8c959f' }, chart);
  svg('line', { x1: m.l, x2: m.l, y1: m.t, y2: bottom, stroke: '#8c959f' }, chart);
  const naive = svg('line', { x1: m.l, x2: W - m.r, y1: y(1), y2: y(1), stroke: '#8c959f',
                              'stroke-dasharray': '4 4' }, chart);
  svg('title', {}, naive, 'the naive kernel (1x)');
  svg('text', { x: (m.l + W - m.r) / 2, y: H - 12, 'text-anchor': 'middle', class: 'axis-title' }, chart,
      'evaluation');
  svg('text', { transform: 'translate(16 ' + (m.t + bottom) / 2 + ') rotate(-90)', 'text-anchor': 'middle',
                class: 'axis-title' }, chart, 'speedup over the naive kernel (log scale)');

  // Best so far, overall and per island: a step at each correct evaluation that improves on it.
  const steps = new Map([['all', []]]);
  evaluations.forEach((e, k) => {
    if (e.status !== 'correct' || !positive(e.speedup)) return;
    for (const key of ['all', e.island | 0]) {
      if (!steps.has(key)) steps.set(key, []);
      const s = steps.get(key);
      if (!s.length || e.speedup > s[s.length - 1][1]) s.push([seqs[k], e.speedup]);
    }
  });
  const stepPath = s => s.map(([q, v], k) => (k ? 'H' + x(q) + 'V' : 'M' + x(q) + ',') + y(v)).join('') + 'H' + x(last);
  for (const [key, s] of steps) {
    if (key === 'all' || !s.length) continue;
    const path = svg('path', { d: stepPath(s), fill: 'none', stroke: islandColour(key), 'stroke-width': 1.2,
                               'stroke-opacity': 0.75, class: 'island-best' }, chart);
    svg('title', {}, path, 'island ' + key + ': best so far ' + fmtX(s[s.length - 1][1]));
  }
  const overall = steps.get('all');
  if (overall.length) {
    const path = svg('path', { d: stepPath(overall), fill: 'none', stroke: '#24292f', 'stroke-width': 2.2,
                               class: 'best' }, chart);
    svg('title', {}, path, 'best so far: ' + fmtX(overall[overall.length - 1][1]));
  }

  let points = 0;
  evaluations.forEach((e, k) => {
    const head = '#' + seqs[k] + ' · island ' + (e.island | 0) + ' · ' + (e.proposer || '?') +
                 (e.iteration !== undefined ? ' (iteration ' + e.iteration + ')' : '');
    if (!positive(e.speedup)) {
      const tick = svg('line', { x1: x(seqs[k]), x2: x(seqs[k]), y1: bottom + 4, y2: bottom + 14, class: 'miss',
                                 stroke: STATUS_COLOURS[e.status] || '#6e7781', 'stroke-width': 1.5 }, chart);
      svg('title', {}, tick, head + '\n' + (e.status || '?') + ': ' + (e.verdict || '') + '\n\n' +
          scheduleText(e.schedule));
      return;
    }
    const colour = islandColour(e.island), correct = e.status === 'correct';
    const dot = svg('circle', { cx: x(seqs[k]), cy: y(e.speedup), r: 4, class: 'eval', 'data-seq': seqs[k],
                                fill: correct ? colour : '#fff', stroke: correct ? '#fff' : colour,
                                'stroke-width': correct ? 0.8 : 1.5 }, chart);
    svg('title', {}, dot, head + '\n' + fmtX(e.speedup) +
        (num(e.median_ms) !== null ? ', ' + fmtMs(e.median_ms) : '') +
        (correct ? '' : ' (' + (e.status || '?') + ': ' + (e.verdict || '') + ')') + '\n\n' + scheduleText(e.schedule));
    points++;
  });
  document.body.dataset.points = String(points);
}

function drawGrids() {
  const box = document.getElementById('grids'), islands = list(data.islands).filter(i => i && typeof i === 'object');
  if (!islands.length) { note(box, 'No archive was recorded.'); return; }
  const index = v => Math.max(0, Math.floor(Number(v) || 0));
  const cellsOf = island => list(island.cells).filter(c => c && Array.isArray(c.cell) && c.cell.length);
  const binsOf = f => list(f && f.edges).length + 1;
  let cols = binsOf(features[0]), rows = features.length > 1 ? binsOf(features[1]) : 1;
  const speeds = [];
  for (const island of islands) {
    for (const c of cellsOf(island)) {
      cols = Math.max(cols, index(c.cell[0]) + 1);
      rows = Math.max(rows, index(c.cell[1]) + 1);
      if (positive(c.speedup)) speeds.push(c.speedup);
    }
  }
  let lo = speeds.length ? Math.min(...speeds) : 1, hi = speeds.length ? Math.max(...speeds) : 2;
  if (!(hi > lo * 1.001)) hi = lo * 1.001;
  const share = v => Math.log(v / lo) / Math.log(hi / lo);
  drawGridLegend(lo, hi);

  const colLabels = [...Array(cols)].map((_, i) => binLabel(features[0], i));
  const rowLabels = [...Array(rows)].map((_, i) => binLabel(features[1], i));
  const tilt = Math.max(...colLabels.map(s => s.length)) > 6;
  const cw = 46, ch = 28, left = 30 + 7 * Math.max(...rowLabels.map(s => s.length)), top = 6;
  const W = left + cols * cw + 10, H = top + rows * ch + (tilt ? 64 : 44);
  const name = k => (features[k] && features[k].name) || 'feature ' + (k + 1);

  for (const island of islands) {
    const cells = cellsOf(island), number = island.island | 0;
    const figure = html('div', { class: 'island' }, box);
    const best = Math.max(0, ...cells.map(c => num(c.speedup) || 0));
    const migrants = cells.filter(c => c.migrant).length;
    const heading = html('h3', {}, figure, 'Island ' + number + ' ');
    html('span', {}, heading, cells.length + ' cells, best ' + (best ? fmtX(best) : '—') +
                              (migrants ? ', ' + migrants + ' migrant' + (migrants > 1 ? 's' : '') : ''));
    const grid = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, class: 'grid',
                              'data-island': number }, figure);
    const cx = c => left + c * cw, cy = r => top + (rows - 1 - r) * ch;  // bin 0 of feature 2 at the bottom
    const taken = new Set(cells.map(c => index(c.cell[0]) + ',' + index(c.cell[1])));
    for (let c = 0; c < cols; c++)
      for (let r = 0; r < rows; r++)
        if (!taken.has(c + ',' + r))
          svg('rect', { x: cx(c) + 1, y: cy(r) + 1, width: cw - 2, height: ch - 2, rx: 2, class: 'empty',
                        fill: '#f6f8fa', stroke: '#eaeef2' }, grid);
    for (const c of cells) {
      const col = index(c.cell[0]), row = index(c.cell[1]), t = positive(c.speedup) ? share(c.speedup) : 0;
      const attrs = { x: cx(col) + 1, y: cy(row) + 1, width: cw - 2, height: ch - 2, rx: 2, class: 'cell',
                      fill: positive(c.speedup) ? ramp(t) : '#d0d7de' };
      if (c.migrant) Object.assign(attrs, { stroke: '#24292f', 'stroke-width': 1.5, 'stroke-dasharray': '3 2' });
      const rect = svg('rect', attrs, grid);
      svg('title', {}, rect, name(0) + ' ' + colLabels[col] + ', ' + name(1) + ' ' + rowLabels[row] + '\n' +
          fmtX(c.speedup) + (c.migrant ? ' (migrant)' : '') + ' · ' + shortId(c.id) + '\n\n' +
          scheduleText(c.schedule));
      svg('text', { x: cx(col) + cw / 2, y: cy(row) + ch / 2 + 4, 'text-anchor': 'middle', 'font-size': 10,
                    'pointer-events': 'none', style: 'fill:' + (t > 0.55 ? '#fff' : '#1f2328') }, grid,
          num(c.speedup) !== null ? c.speedup.toFixed(c.speedup >= 10 ? 1 : 2) : '?');
    }
    for (let r = 0; r < rows; r++)
      svg('text', { x: left - 6, y: cy(r) + ch / 2 + 4, 'text-anchor': 'end', class: 'tick' }, grid, rowLabels[r]);
    const base = top + rows * ch + 14;
    for (let c = 0; c < cols; c++) {
      const attrs = { x: cx(c) + cw / 2, y: base, 'text-anchor': tilt ? 'end' : 'middle', class: 'tick' };
      if (tilt) attrs.transform = 'rotate(-35 ' + (cx(c) + cw / 2) + ' ' + base + ')';
      svg('text', attrs, grid, colLabels[c]);
    }
    svg('text', { x: left + cols * cw / 2, y: H - 6, 'text-anchor': 'middle', class: 'axis-title' }, grid, name(0));
    if (features.length > 1)
      svg('text', { transform: 'translate(12 ' + (top + rows * ch / 2) + ') rotate(-90)', 'text-anchor': 'middle',
                    class: 'axis-title' }, grid, name(1));
  }
}

// One colour scale for every island, so that equal colours mean equal speedups across grids.
function drawGridLegend(lo, hi) {
  const box = document.getElementById('grid-legend');
  const legend = svg('svg', { width: 620, height: 40, viewBox: '0 0 620 40' }, box);
  const gradient = svg('linearGradient', { id: 'ramp' }, svg('defs', {}, legend));
  RAMP.forEach((c, i) => svg('stop', { offset: (i / (RAMP.length - 1)).toFixed(3), 'stop-color': c }, gradient));
  svg('text', { x: 0, y: 20, class: 'tick' }, legend, 'speedup');
  svg('rect', { x: 56, y: 9, width: 220, height: 14, fill: 'url(#ramp)' }, legend);
  for (const [v, t] of [[lo, 0], [Math.sqrt(lo * hi), 0.5], [hi, 1]])
    svg('text', { x: 56 + 220 * t, y: 36, 'text-anchor': 'middle', class: 'tick' }, legend, fmtX(v));
  svg('rect', { x: 310, y: 9, width: 22, height: 14, rx: 2, fill: '#f6f8fa', stroke: '#eaeef2' }, legend);
  svg('text', { x: 338, y: 20, class: 'tick' }, legend, 'empty cell');
  svg('rect', { x: 420, y: 9, width: 22, height: 14, rx: 2, fill: ramp(0.5), stroke: '#24292f',
                'stroke-dasharray': '3 2' }, legend);
  svg('text', { x: 448, y: 20, class: 'tick' }, legend, 'migrant from another island');
}

function drawLineage() {
  const box = document.getElementById('lineage'), steps = list(data.lineage).filter(s => s && typeof s === 'object');
  if (!steps.length) { note(box, 'No lineage: the run found no correct candidate.'); return; }
  const chain = html('ol', { class: 'chain' }, box);
  steps.forEach((s, k) => {
    const item = html('li', { class: 'step' }, chain), head = html('div', { class: 'head' }, item);
    html('span', { class: 'speed' }, head, fmtX(s.speedup));
    const prev = k ? num(steps[k - 1].speedup) : null;
    const gain = num(s.gain) !== null ? s.gain : prev && positive(s.speedup) ? s.speedup / prev : null;
    html('span', { class: 'gain' + (gain !== null && gain < 1 ? ' loss' : '') }, head,
         gain !== null ? '×' + gain.toFixed(2) : '');
    html('span', {}, head, s.proposer || (k ? '?' : 'naive'));
    html('code', { class: 'muted', title: s.id || '' }, head, shortId(s.id));
    const added = list(s.added), removed = list(s.removed);
    if (!k && !added.length && !removed.length) {
      note(item, 'the naive kernel: no schedule').style.margin = '0';
    } else {
      const diff = html('pre', { class: 'diff' }, item);
      for (const line of removed) html('div', { class: 'del' }, diff, '- ' + line);
      for (const line of added) html('div', { class: 'add' }, diff, '+ ' + line);
      if (!added.length && !removed.length) html('div', { class: 'muted' }, diff, '(no change to the schedule)');
    }
    if (s.schedule) {
      const details = html('details', {}, item);
      html('summary', {}, details, 'whole schedule');
      html('pre', {}, details, String(s.schedule));
    }
  });
}

function table(parent, headings) {
  const t = html('table', {}, parent), row = html('tr', {}, html('thead', {}, t));
  for (const [text, cls] of headings) html('th', cls ? { class: cls } : {}, row, text);
  return html('tbody', {}, t);
}

function drawRetimed() {
  const box = document.getElementById('retimed'), rows = list(data.retimed).filter(r => r && typeof r === 'object');
  if (!rows.length) { note(box, 'No candidates were re-timed.'); return; }
  note(box, 'The best candidates timed again at the end of the run; spread is the coefficient of variation.');
  const body = table(box, [['#', 'num'], ['candidate'], ['when found', 'num'], ['re-timed', 'num'],
                           ['spread', 'num'], ['median', 'num']]);
  rows.forEach((r, k) => {
    const row = html('tr', { class: 'retimed' }, body);
    html('td', { class: 'num' }, row, String(k + 1));
    html('code', { title: r.id || '' }, html('td', {}, row), shortId(r.id));
    html('td', { class: 'num' }, row, fmtX(r.speedup));
    html('td', { class: 'num' }, row, fmtX(r.retimed_speedup));
    html('td', { class: 'num' }, row, num(r.retimed_cv) !== null ? '± ' + fmtPct(r.retimed_cv) : '—');
    html('td', { class: 'num' }, row, fmtMs(r.median_ms));
  });
}

function drawFailures() {
  const box = document.getElementById('failures'), rows = list(data.failures).filter(r => r && typeof r === 'object');
  if (!rows.length) { note(box, 'No failures.'); return; }
  const most = Math.max(1, ...rows.map(r => num(r.count) || 0));
  const body = table(box, [['verdict'], ['count', 'num'], [''], ['example']]);
  for (const r of rows) {
    const row = html('tr', { class: 'failure' }, body), colour = STATUS_COLOURS[r.category] || '#6e7781';
    const cat = html('td', {}, row);
    html('span', { class: 'swatch', style: 'background:' + colour }, cat);
    cat.appendChild(document.createTextNode(String(r.category || '?')));
    html('td', { class: 'num' }, row, String(num(r.count) !== null ? r.count : '—'));
    const width = Math.round(120 * (num(r.count) || 0) / most);
    html('span', { class: 'bar', style: 'background:' + colour + ';width:' + width + 'px' }, html('td', {}, row));
    html('code', {}, html('td', { class: 'example' }, row), r.example ? String(r.example) : '');
  }
}

// Each part draws on its own, so that a fault in one still leaves the others (and the error) on the page.
document.body.dataset.points = '0';
for (const [name, draw] of [['header', drawHeader], ['progress', drawProgress], ['grids', drawGrids],
                            ['lineage', drawLineage], ['retimed', drawRetimed], ['failures', drawFailures]]) {
  try { draw(); } catch (e) { reportError(name + ': ' + ((e && e.stack) || e)); }
}
</script>
</body>
</html>
)html";

// The data goes inside a <script> element, which ends at the first "</script" whatever the JSON
// means there, and which "<!--" followed by "<script" would stop ending at all. Both can only
// occur inside JSON strings, where "\/" and "\u003c" read back as the same characters.
std::string embed(const nlohmann::json &data) {
  const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 64);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "</") == 0) {
      out += "<\\/";
      ++i;
    } else if (text.compare(i, 4, "<!--") == 0) {
      out += "\\u003c";
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::string render_report(const nlohmann::json &data) {
  std::string page = kPage;
  const std::string marker = "@DATA@";
  page.replace(page.find(marker), marker.size(), embed(data));
  return page;
}

}  // namespace ks
