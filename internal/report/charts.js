// What a report's pages share: the charts' width, their redrawing for print, and, once drawn,
// each chart's data-ink attribute (how many of its pixels carry one of its series' colours) and
// the page's data-charts (how many drew): the reports' browser tests read them.
var BarrageCharts = (function () {
  "use strict";
  var charts = [];

  function width() {
    return Math.max(320, Math.min(document.body.clientWidth - 48, 1092));
  }

  function hex(c) {
    return [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16)];
  }

  // ink counts the pixels of a chart's canvas that are one of its series' colours.
  function ink(c) {
    var cv = c.el.querySelector("canvas");
    if (!cv) return 0;
    var px = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
    var wants = c.colors.map(hex), n = 0;
    for (var i = 0; i < px.length; i += 4) {
      if (px[i + 3] <= 200) continue;
      for (var j = 0; j < wants.length; j++) {
        var w = wants[j];
        if (Math.abs(px[i] - w[0]) < 8 && Math.abs(px[i + 1] - w[1]) < 8 && Math.abs(px[i + 2] - w[2]) < 8) { n++; break; }
      }
    }
    return n;
  }

  // Printed pages are narrower than a screen: draw for the page, then back.
  window.addEventListener("beforeprint", function () {
    charts.forEach(function (c) { c.u.setSize({ width: 680, height: c.height - 20 }); });
  });
  window.addEventListener("afterprint", function () {
    charts.forEach(function (c) { c.u.setSize({ width: width(), height: c.height }); });
  });

  return {
    width: width,
    // add keeps u, drawn in el with its series in colors (#rrggbb), height pixels high.
    add: function (u, el, colors, height) {
      charts.push({ u: u, el: el, colors: colors, height: height });
      return u;
    },
    // done marks the charts once uPlot has drawn them (on the next microtask).
    done: function () {
      setTimeout(function () {
        charts.forEach(function (c) { c.el.setAttribute("data-ink", String(ink(c))); });
        document.documentElement.setAttribute("data-charts", String(charts.length));
      }, 0);
    }
  };
})();
