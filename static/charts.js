/* schedview's charts, drawn by uPlot (vendored in static/vendor/uplot, MIT licence beside it).

   Two kinds of figure:
   - <figure data-chart="NAME"> inside <section data-series-url="...">: the overview's
     charts over time. The section's range buttons (data-range) pick the span; the
     series are fetched as JSON (web/health_series.py) and fetched again every
     REFRESH_MS, so the charts stay live.
   - <figure data-chart-data="JSON">: a chart whose data the server rendered into the
     page (the snapshot page); drawn again whenever htmx swaps the section in (its
     websocket pushes).
   Each drawn figure says how many points it holds in data-points (tests read it).
   A line that counts transitions (forgets, expiries...) links the point under the cursor to
   the Events page's window of that point, below the chart: a burst's events, one click away. */
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

  function isoTime(epoch) { return new Date(epoch * 1000).toISOString(); }

  // Below a chart over time: for the point under the cursor (the last one pointed at, so
  // the links stay while the pointer moves to them), a link per line with events behind it.
  function eventLinks(figure, lines, events) {
    let list = figure.querySelector(".chart-events");
    if (!list) {
      list = document.createElement("p");
      list.className = "chart-events hint";
      figure.appendChild(list);
    }
    return function (u) {
      const i = u.cursor.idx;
      if (i === null || i === undefined) { return; }
      const links = [];
      lines.forEach(function (line) {
        if (line.events && line.values[i]) {
          const a = document.createElement("a");
          a.href = events.url + "?" + line.events + "&since=" +
            encodeURIComponent(isoTime(events.starts[i])) + "&until=" +
            encodeURIComponent(isoTime(u.data[0][i]));
          a.textContent = line.label;
          links.push(a);
        }
      });
      list.replaceChildren();
      if (links.length) {
        list.append("Events behind this point (" +
          new Date(events.starts[i] * 1000).toLocaleTimeString() + " to " +
          new Date(u.data[0][i] * 1000).toLocaleTimeString() + "): ");
        links.forEach(function (a, n) { list.append(n ? ", " : "", a); });
      }
    };
  }

  function draw(figure, times, lines, unit, span, stepped, events) {
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
    if (events) {
      options.hooks = { setCursor: [eventLinks(figure, lines, events)] };
    }
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
              draw(figure, series.times, chart.lines, chart.unit, [series.start, series.end],
                false, { url: section.dataset.eventsUrl, starts: series.starts });
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
