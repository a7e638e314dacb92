/* tear_sheet.js — draws the tear sheet's charts with dygraphs from the page's data
 * (the JSON block fh-data that src/report/tear_sheet.c writes), then records on the body
 * how many charts rendered (data-charts-rendered="n/expected": a chart counts when it
 * holds rows and one of its canvases has a painted pixel), the errors seen (data-errors,
 * a JSON list) and the page's height (data-height), for tests/cli/test_report_browser.c.
 * Embedded in the binary at build time. */
(function () {
  'use strict';
  var errors = window.fhErrors || [];
  var charts = [];
  var D = null;
  try {
    D = JSON.parse(document.getElementById('fh-data').textContent);
  } catch (e) {
    errors.push('the page data does not parse: ' + e);
  }

  function policyColour(name) {
    for (var i = 0; D && i < D.policies.length; i++)
      if (D.policies[i].name === name) return D.policies[i].colour;
    return '#333333';
  }

  /* rows [x, series...] for dygraphs; null is a gap */
  function rows(xs, names, series) {
    return xs.map(function (x, i) {
      return [x].concat(names.map(function (n) { return series[n][i]; }));
    });
  }

  function pct(digits) {
    return function (v) { return (100 * v).toFixed(digits) + '%'; };
  }

  /* three significant digits: training quantities span 1e-14 (KL) to 1e3 */
  function sig3(v) {
    if (v === 0 || (Math.abs(v) >= 1e-3 && Math.abs(v) < 1e6)) return String(+v.toPrecision(3));
    return v.toExponential(2);
  }

  /* 12.3k, 4.5M: an equity axis's labels */
  function kmb(v) {
    var a = Math.abs(v);
    if (a >= 1e9) return +(v / 1e9).toPrecision(3) + 'B';
    if (a >= 1e6) return +(v / 1e6).toPrecision(3) + 'M';
    if (a >= 1e3) return +(v / 1e3).toPrecision(3) + 'k';
    return String(+v.toPrecision(3));
  }

  /* Linear ticks at 1, 2 or 5 times a power of ten, about one per `every` pixels. */
  function linearTicks(a, b, pixels, every) {
    var raw = (b - a) / Math.max(1, Math.floor(pixels / every));
    if (!(raw > 0)) return [{ v: a, label: kmb(a) }];
    var mag = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / mag;
    var step = mag * (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10), ticks = [];
    for (var v = Math.ceil(a / step) * step; v <= b + step * 1e-9; v += step)
      ticks.push({ v: v, label: kmb(v) });
    return ticks;
  }

  /* The equity axis's ticks. dygraphs' own log ticker keeps only ticks at 1..9 times a
   * power of ten and, within a decade, can leave no label above the first (issue 36:
   * no tick above 10k): on a log axis, 1-2-5 ticks thinned to the pixel spacing when
   * the range spans a decade, else linear ones (still placed on the log axis). */
  function equityTicker(a, b, pixels, opts, dygraph, vals) {
    var every = opts('pixelsPerLabel') || 30;
    if (!dygraph.getOption('logscale') || !(a > 0) || b / a < 10)
      return linearTicks(a, b, pixels, every);
    var ticks = [], last = -Infinity;
    for (var e = Math.floor(Math.log10(a)); e <= Math.ceil(Math.log10(b)); e++)
      [1, 2, 5].forEach(function (m) {
        var v = m * Math.pow(10, e);
        if (v < a || v > b) return;
        var px = Math.log(v / a) / Math.log(b / a) * pixels;
        if (px - last < every) return;
        ticks.push({ v: v, label: kmb(v) });
        last = px;
      });
    return ticks;
  }

  /* One chart into <div id=id>, its legend into <div id=legend-...>. */
  function draw(id, xs, series, options) {
    try {
      var names = Object.keys(series);
      var opts = {
        labels: ['x'].concat(names),
        labelsUTC: true,
        legend: 'always',
        labelsDiv: document.getElementById('legend-' + id.replace(/^chart-/, '')),
        labelsSeparateLines: false,
        colors: names.map(policyColour),
        strokeWidth: 1.2,
        gridLineColor: '#e4e4e4',
        axisLabelFontSize: 12,
        highlightCircleSize: 3
      };
      for (var k in options) opts[k] = options[k];
      charts.push({ id: id, graph: new Dygraph(document.getElementById(id), rows(xs, names, series), opts) });
    } catch (e) {
      errors.push(id + ': ' + e);
    }
  }

  /* The close price (a line) and the greedy policy's trades (marks only). */
  function drawPrice(dates, price) {
    var marks = {
      'long entry': { colour: '#2ca02c', shape: 'up' },
      'short entry': { colour: '#d62728', shape: 'down' },
      'exit': { colour: '#333333', shape: 'dot' },
      'profit take': { colour: '#17becf', shape: 'dot' },
      'stop loss': { colour: '#ff7f0e', shape: 'dot' },
      'time limit': { colour: '#9467bd', shape: 'dot' }
    };
    var names = Object.keys(price), series = { close: { strokeWidth: 1.0 } };
    names.forEach(function (n) {
      var m = marks[n];
      if (!m) return;
      series[n] = { strokeWidth: 0, drawPoints: true, pointSize: m.shape === 'dot' ? 2.5 : 3.5,
                    drawPointCallback: m.shape === 'dot' ? undefined : triangle(m.shape === 'up') };
    });
    draw('chart-price', dates, price, {
      ylabel: 'close', series: series, connectSeparatedPoints: false,
      colors: names.map(function (n) { return marks[n] ? marks[n].colour : '#555555'; }),
      axes: { y: { valueFormatter: kmb, axisLabelFormatter: kmb, axisLabelWidth: 56 } }
    });
  }

  function triangle(up) {
    return function (g, name, ctx, cx, cy, colour, radius) {
      var r = radius + 1.5, d = up ? 1 : -1;
      ctx.beginPath();
      ctx.fillStyle = colour;
      ctx.moveTo(cx, cy - d * r);
      ctx.lineTo(cx - r, cy + d * r);
      ctx.lineTo(cx + r, cy + d * r);
      ctx.closePath();
      ctx.fill();
    };
  }

  function drawAll() {
    var dates = D.time.map(function (t) { return new Date(1000 * t); });
    var wide = { buy_and_hold: { strokeWidth: 2.2 } };
    /* a log scale by default: the oracle's equity can dwarf every other */
    draw('chart-equity', dates, D.equity, {
      ylabel: 'equity', series: wide, logscale: true,
      axes: { y: { ticker: equityTicker, valueFormatter: kmb, axisLabelWidth: 56 } }
    });
    var box = document.getElementById('fh-log');
    if (box)
      box.addEventListener('change', function () {
        charts[0].graph.updateOptions({ logscale: box.checked });
      });
    draw('chart-drawdown', dates, D.drawdown, {
      ylabel: 'drawdown', series: wide,
      axes: { y: { valueFormatter: pct(2), axisLabelFormatter: pct(0) } }
    });
    draw('chart-sharpe', dates, D.rolling_sharpe, {
      ylabel: 'Sharpe (' + D.sharpe_window + ' bars)', series: wide
    });
    draw('chart-volatility', dates, D.rolling_volatility, {
      ylabel: 'volatility (' + D.sharpe_window + ' bars)', series: wide,
      axes: { y: { valueFormatter: pct(1), axisLabelFormatter: pct(0) } }
    });
    /* a moving average over ~1/150 of the chart, else the positions blur into a band;
     * the number box above the chart (not dygraphs' roller, which sits inside the plot)
     * sets it, 1 for the raw values */
    var roll = Math.max(1, Math.round(dates.length / 150));
    draw('chart-exposure', dates, D.exposure, {
      ylabel: 'exposure', valueRange: [-1.1, 1.1], rollPeriod: roll
    });
    var rollBox = document.getElementById('fh-roll');
    var exposureChart = charts[charts.length - 1];
    if (rollBox) {
      rollBox.value = String(roll);
      rollBox.addEventListener('change', function () {
        var k = Math.max(1, Math.round(+rollBox.value || 1));
        exposureChart.graph.updateOptions({ rollPeriod: k });
      });
    }
    if (D.price) drawPrice(dates, D.price);
    var h = D.histogram;
    draw('chart-distribution', h.edges, h.share, {
      xlabel: 'return per bar', ylabel: 'share of steps', stepPlot: true, fillGraph: true,
      fillAlpha: 0.25, labelsUTC: false,
      axes: {
        x: { valueFormatter: pct(3), axisLabelFormatter: pct(2) },
        y: { valueFormatter: pct(1), axisLabelFormatter: pct(0) }
      }
    });
    var tr = D.training;
    Object.keys(tr.series).forEach(function (name) {
      var one = {};
      one[name] = tr.series[name];
      draw('chart-train-' + name, tr.iteration, one, {
        xlabel: 'iteration', colors: ['#1f77b4'], labelsUTC: false,
        drawPoints: tr.iteration.length < 60, pointSize: 2,
        axes: { y: { valueFormatter: sig3, axisLabelFormatter: sig3, axisLabelWidth: 64 } }
      });
    });
  }

  /* a painted pixel in one of the chart's canvases */
  function painted(div) {
    var canvases = div.querySelectorAll('canvas');
    for (var i = 0; i < canvases.length; i++) {
      var c = canvases[i];
      if (c.width === 0 || c.height === 0) continue;
      var px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      for (var k = 3; k < px.length; k += 4)
        if (px[k] !== 0) return true;
    }
    return false;
  }

  function report() {
    var divs = document.querySelectorAll('div.chart');
    var ok = 0;
    for (var i = 0; i < divs.length; i++) {
      var entry = charts.filter(function (c) { return c.id === divs[i].id; })[0];
      var good = !!entry && entry.graph.numRows() > 0 && painted(divs[i]);
      divs[i].setAttribute('data-rendered', good ? '1' : '0');
      if (good) ok++;
    }
    var body = document.body;
    body.setAttribute('data-charts-rendered', ok + '/' + divs.length);
    body.setAttribute('data-errors', JSON.stringify(errors));
    body.setAttribute('data-height', String(document.documentElement.scrollHeight));
    var v = document.getElementById('fh-dygraphs-version');
    if (v && window.Dygraph) v.textContent = Dygraph.VERSION;
  }

  try {
    if (D) drawAll();
  } catch (e) {
    errors.push(String(e));
  }
  report();
})();
