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

  function drawAll() {
    var dates = D.time.map(function (t) { return new Date(1000 * t); });
    var wide = { buy_and_hold: { strokeWidth: 2.2 } };
    /* a log scale by default: the oracle's equity can dwarf every other */
    draw('chart-equity', dates, D.equity, {
      ylabel: 'equity', series: wide, logscale: true, labelsKMB: true
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
    /* a moving average over ~1/150 of the chart, else the positions blur into a band;
     * the roller box (lower left) sets it, 1 for the raw values */
    draw('chart-exposure', dates, D.exposure, {
      ylabel: 'exposure', valueRange: [-1.1, 1.1], showRoller: true,
      rollPeriod: Math.max(1, Math.round(dates.length / 150))
    });
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
