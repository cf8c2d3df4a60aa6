/* schedview's charts, drawn by uPlot (vendored in static/vendor/uplot, MIT licence beside it).

   Two kinds of figure:
   - <figure data-chart="NAME"> inside <section data-series-url="...">: the overview's
     charts over time. The section's range buttons (data-range) pick the span; the
     series are fetched as JSON (web/health_series.py) and fetched again every
     REFRESH_MS, so the charts stay live.
   - <figure data-chart-data="JSON">: a chart whose data the server rendered into the
     page (the snapshot page); drawn again whenever htmx swaps the section in (its
     websocket pushes).
   Each drawn figure says how many points it holds in data-points (tests read it). */
(function () {
  "use strict";
  const PALETTE = ["#2f5fd0", "#a8261d", "#1f7a3f", "#8a5a00", "#6b3fa0"];
  const HEIGHT = 180;
  const REFRESH_MS = 10000;
  const drawn = new Set();

  function forget_detached() {
    for (const plot of drawn) {
      if (!plot.root.isConnected) {
        plot.destroy();
        drawn.delete(plot);
      }
    }
  }

  const ZONE = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" })
    .formatToParts(new Date()).find(function (part) { return part.type === "timeZoneName"; })
    .value;

  function draw(figure, times, lines, unit, span, stepped) {
    if (figure._plot) {
      figure._plot.destroy();
      drawn.delete(figure._plot);
    }
    const width = Math.max(280, figure.clientWidth - 16);
    const options = {
      width: width,
      height: HEIGHT,
      series: [{ label: "time" }].concat(lines.map(function (line, i) {
        const series = { label: line.label, stroke: PALETTE[i % PALETTE.length], width: 2 };
        if (stepped && i === 0) {
          series.paths = uPlot.paths.stepped({ align: 1 });
        }
        return series;
      })),
      // Times in the viewer's local time, the zone named: every page's one time format.
      axes: [{ label: "time (" + ZONE + ")" }, { label: unit, size: 60 }],
      scales: { x: { time: true } },
      legend: { live: true },
    };
    if (span) {
      options.scales.x.range = function () { return span; };
    }
    const data = [times].concat(lines.map(function (line) { return line.values; }));
    const plot = new uPlot(options, data, figure.querySelector(".plot") || figure);
    figure._plot = plot;
    figure.dataset.points = String(times.length);
    drawn.add(plot);
  }

  // --- the overview's charts over time ---------------------------------------------------
  function overTime(section) {
    let range = section.dataset.range;
    let timer = null;

    function load() {
      const url = section.dataset.seriesUrl + "?range=" + encodeURIComponent(range);
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) {
          if (!response.ok) { throw new Error("the series answered " + response.status); }
          return response.json();
        })
        .then(function (series) {
          forget_detached();
          section.querySelectorAll("figure[data-chart]").forEach(function (figure) {
            const chart = series.charts[figure.dataset.chart];
            if (chart) {
              draw(figure, series.times, chart.lines, chart.unit, [series.start, series.end]);
            }
          });
          section.dataset.loaded = series.range;
          const note = section.querySelector(".series-note");
          if (note) {
            note.textContent = series.times.length ? "" : "No samples in this range yet.";
          }
        })
        .catch(function (error) {
          const note = section.querySelector(".series-note");
          if (note) { note.textContent = "The charts could not be loaded: " + error.message; }
        });
    }

    function every() {
      clearInterval(timer);
      timer = setInterval(load, REFRESH_MS);
    }

    section.querySelectorAll("button[data-range]").forEach(function (button) {
      button.addEventListener("click", function () {
        range = button.dataset.range;
        section.querySelectorAll("button[data-range]").forEach(function (other) {
          other.setAttribute("aria-pressed", String(other === button));
        });
        load();
        every();
      });
    });
    load();
    every();
  }

  // --- charts whose data is in the page --------------------------------------------------
  function inPage() {
    forget_detached();
    document.querySelectorAll("figure[data-chart-data]").forEach(function (figure) {
      if (figure._plot) { return; }   // drawn already: a push brings a new figure
      const chart = JSON.parse(figure.dataset.chartData);
      draw(figure, chart.times, chart.lines, chart.unit, null, chart.stepped);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("section[data-series-url]").forEach(overTime);
    inPage();
  });
  // A live push swapped a section in: draw its new figures.
  document.addEventListener("htmx:load", inPage);
  document.addEventListener("htmx:oobAfterSwap", inPage);
})();
