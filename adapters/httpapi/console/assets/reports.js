// Reports: draws the page's charts with the vendored uPlot from the data
// the page carries (data-chart on .charts). Without this script the page
// is complete: the day-by-day table holds the same figures, and it is the
// charts' text alternative (each chart has an aria-label saying so).
// No inline scripts or styles: uPlot styles through the CSSOM only.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const holder = document.querySelector(".charts[data-chart]");
  if (!holder || typeof uPlot === "undefined") {
    return;
  }
  let data;
  try {
    data = JSON.parse(holder.dataset.chart);
  } catch (e) {
    return;
  }
  if (!data.days || data.days.length === 0) {
    return;
  }
  // One colour per outcome, in the report's order; checked for contrast
  // against the white card.
  const colours = ["#15803d", "#4d7c0f", "#a16207", "#b91c1c", "#7c3aed", "#1d4ed8", "#6b7280"];
  const outcomesEl = holder.querySelector(".chart-outcomes");
  const fallbackEl = holder.querySelector(".chart-fallback");
  const width = (el) => Math.max(280, el.clientWidth || 600);

  // Stacked bars: series k draws the sum of outcomes 0..n-1-k, so the
  // last drawn (the first outcome) sits at the bottom and each bar shows
  // every outcome's share; the legend shows each outcome's own count.
  const n = data.outcomes.length;
  const stacked = [];
  const raw = [];
  for (let k = 0; k < n; k++) {
    const upto = n - 1 - k;
    stacked.push(data.days.map((_, d) => {
      let sum = 0;
      for (let i = 0; i <= upto; i++) {
        sum += data.outcomes[i].values[d];
      }
      return sum;
    }));
    raw.push(data.outcomes[upto].values);
  }
  const bars = uPlot.paths.bars({ size: [0.7, 40] });
  const day = (u, v) => (v == null ? "" : new Date(v * 1000).toISOString().slice(0, 10));
  const outcomeSeries = [{ value: day }];
  for (let k = 0; k < n; k++) {
    const i = n - 1 - k;
    outcomeSeries.push({
      label: data.outcomes[i].label,
      stroke: colours[i % colours.length],
      fill: colours[i % colours.length],
      paths: bars,
      points: { show: false },
      value: (u, v, si, idx) => (idx == null ? "" : String(raw[si - 1][idx])),
    });
  }
  const charts = [];
  charts.push([outcomesEl, new uPlot({
    width: width(outcomesEl), height: 260,
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
    series: outcomeSeries,
    axes: [{}, {}],
  }, [data.days, ...stacked], outcomesEl)]);

  charts.push([fallbackEl, new uPlot({
    width: width(fallbackEl), height: 200,
    scales: { x: { time: true }, y: { range: [0, 100] } },
    series: [{ value: day }, {
      label: data.fallbackLabel, stroke: "#b91c1c", width: 2,
      value: (u, v) => (v == null ? "" : v.toFixed(1) + " %"),
    }],
    axes: [{}, { label: data.percent }],
  }, [data.days, data.fallbackRate], fallbackEl)]);

  // uPlot draws on canvases it creates: each is an image named by its
  // figure's words (the page's day-by-day table is the text alternative).
  for (const [el] of charts) {
    for (const canvas of el.querySelectorAll("canvas")) {
      canvas.setAttribute("role", "img");
      canvas.setAttribute("aria-label", el.dataset.label);
    }
  }
  let pending = 0;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(() => {
      for (const [el, chart] of charts) {
        chart.setSize({ width: width(el), height: chart.height });
      }
    }, 150);
  });
});
