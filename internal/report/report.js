// Draws a run report's charts from the data inlined in the page (charts.js does the rest).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var run = data.run, base = data.base || null;
  var colors = {
    rps: "#2563eb", base: "#9aa5b1", p50: "#16a34a", p95: "#d97706", p99: "#dc2626",
    vus: "#7c3aed", cpu: "#0891b2"
  };
  var classColors = ["#dc2626", "#ea580c", "#ca8a04", "#9333ea", "#0d9488", "#db2777", "#4b5563", "#2563eb"];

  // The seconds of both runs on one axis: a run shorter than the other has no value after its end.
  var last = run.second.length;
  if (base) last = Math.max(last, base.second.length);
  var xs = [];
  for (var i = 1; i <= last; i++) xs.push(i);
  function col(values) {
    var out = new Array(last);
    for (var i = 0; i < last; i++) out[i] = i < values.length ? values[i] : null;
    return out;
  }

  // The steady state the stability figure covers, shaded behind the requests/s.
  var steadyBand = {
    hooks: {
      drawClear: [function (u) {
        if (!data.steady) return;
        // The steady state covers the run's seconds from_s to to_s - 1 (from 0): on the chart,
        // whose x is the second counted from 1, from from_s + 1 to to_s.
        var x0 = u.valToPos(data.steady[0] + 1, "x", true), x1 = u.valToPos(data.steady[1], "x", true);
        u.ctx.save();
        u.ctx.fillStyle = "rgba(37, 99, 235, 0.07)";
        u.ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
        u.ctx.restore();
      }]
    }
  };

  function line(label, color, extra) {
    var s = { label: label, stroke: color, width: 2, points: { show: false } };
    for (var k in extra) s[k] = extra[k];
    return s;
  }

  function ms(u, v) { return v == null ? "-" : v.toFixed(v < 10 ? 2 : 1) + " ms"; }

  function draw(id, series, columns, opts) {
    var el = document.getElementById(id);
    var o = {
      width: BarrageCharts.width(), height: 240,
      scales: { x: { time: false } },
      series: [{ label: "second" }].concat(series),
      axes: [{ label: "seconds since start" }, { size: 60 }],
      legend: { live: true },
      plugins: []
    };
    for (var k in opts) o[k] = opts[k];
    return BarrageCharts.add(new uPlot(o, [xs].concat(columns), el), el, series.map(function (s) { return s.stroke; }), 240);
  }

  if (xs.length === 0) {
    var empty = document.createElement("p");
    empty.className = "none";
    empty.textContent = "The run has no seconds to chart.";
    document.getElementById("chart-rps").appendChild(empty);
    BarrageCharts.done();
    return;
  }

  var rpsSeries = [line("requests/s", colors.rps, { value: function (u, v) { return v == null ? "-" : v.toFixed(1); } })];
  var rpsCols = [col(run.rps)];
  if (base) {
    rpsSeries.push(line("base requests/s", colors.base, { dash: [6, 4] }));
    rpsCols.push(col(base.rps));
  }
  draw("chart-rps", rpsSeries, rpsCols, { plugins: [steadyBand] });

  var latSeries = [line("p50", colors.p50, { value: ms }), line("p95", colors.p95, { value: ms }), line("p99", colors.p99, { value: ms })];
  var latCols = [col(run.p50), col(run.p95), col(run.p99)];
  if (base) {
    latSeries.push(line("base p95", colors.base, { dash: [6, 4], value: ms }));
    latCols.push(col(base.p95));
  }
  draw("chart-latency", latSeries, latCols, {});

  var classes = Object.keys(run.errors).sort();
  if (classes.length === 0) {
    var none = document.createElement("p");
    none.className = "none";
    none.textContent = "No request failed.";
    document.getElementById("chart-errors").appendChild(none);
  } else {
    draw("chart-errors", classes.map(function (c, i) { return line(c, classColors[i % classColors.length]); }),
      classes.map(function (c) { return col(run.errors[c]); }), {});
  }

  draw("chart-vus",
    [line("active VUs", colors.vus, { scale: "vus" }),
     line("generator CPU %", colors.cpu, { scale: "cpu", value: function (u, v) { return v == null ? "-" : v.toFixed(0) + "%"; } })],
    [col(run.vus), col(run.cpu)],
    {
      scales: { x: { time: false }, cpu: { range: [0, 100] } },
      axes: [{ label: "seconds since start" }, { scale: "vus", size: 60 },
             { scale: "cpu", side: 1, grid: { show: false }, values: function (u, vs) { return vs.map(function (v) { return v + "%"; }); } }]
    });

  // The target's own metrics, a chart per monitor and unit, on the run's time axis.
  var monitorColors = ["#0f766e", "#be185d", "#4338ca", "#b45309", "#15803d", "#9f1239", "#1d4ed8", "#a16207"];
  var holder = document.getElementById("monitor-charts");
  (data.monitors || []).forEach(function (m, k) {
    var div = document.createElement("div");
    div.className = "chart";
    div.id = "chart-monitor-" + k;
    var h = document.createElement("h3");
    h.textContent = m.title;
    div.appendChild(h);
    holder.appendChild(div);
    draw(div.id, m.labels.map(function (l, i) { return line(l, monitorColors[i % monitorColors.length]); }),
      m.values.map(col), {});
  });

  BarrageCharts.done();
})();
