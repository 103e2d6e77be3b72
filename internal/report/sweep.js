// Draws a sweep report's charts from the data inlined in the page (charts.js does the rest):
// throughput and latency against concurrency, on a log scale of VUs, with the USL fit's curve
// and the knee marked.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var colors = { rps: "#2563eb", fit: "#9aa5b1", p50: "#16a34a", p95: "#d97706", p99: "#dc2626", knee: "rgba(180, 35, 24, 0.6)" };

  // The x values: the levels, and between them the points the fit's curve is drawn through.
  var xs = data.x, at = {};
  data.levels.forEach(function (l, i) { at[l] = i; });
  function measured(values) {
    return xs.map(function (x) { return x in at ? values[at[x]] : null; });
  }

  var knee = {
    hooks: {
      draw: [function (u) {
        if (!data.knee) return;
        var x = u.valToPos(data.knee, "x", true);
        u.ctx.save();
        u.ctx.strokeStyle = colors.knee;
        u.ctx.setLineDash([4, 4]);
        u.ctx.lineWidth = 2;
        u.ctx.beginPath();
        u.ctx.moveTo(x, u.bbox.top);
        u.ctx.lineTo(x, u.bbox.top + u.bbox.height);
        u.ctx.stroke();
        u.ctx.restore();
      }]
    }
  };

  function chart(id, series, columns) {
    var el = document.getElementById(id);
    var u = new uPlot({
      width: BarrageCharts.width(), height: 280,
      scales: { x: { time: false, distr: 3, log: 2 } },
      series: [{ label: "VUs" }].concat(series),
      axes: [{ label: "concurrency (VUs)" }, { size: 60 }],
      plugins: [knee]
    }, [xs].concat(columns), el);
    return BarrageCharts.add(u, el, series.map(function (s) { return s.stroke; }), 280);
  }

  function line(label, color, extra) {
    var s = { label: label, stroke: color, width: 2, spanGaps: true, points: { show: true, size: 7 } };
    for (var k in extra) s[k] = extra[k];
    return s;
  }

  var tput = [line("successful requests/s", colors.rps)], tputCols = [measured(data.rps)];
  if (data.fit) {
    tput.push(line("USL fit", colors.fit, { dash: [6, 4], points: { show: false } }));
    tputCols.push(data.fit);
  }
  chart("chart-throughput", tput, tputCols);
  chart("chart-p95", [line("p95", colors.p95), line("p50", colors.p50), line("p99", colors.p99)],
    [measured(data.p95), measured(data.p50), measured(data.p99)]);

  BarrageCharts.done();
})();
