// ctxlab's chart module: the few KB anywidget loads for a `ChartWidget` (ctxlab/_view/widgets/chart.py
// says why). It initialises at once, so anywidget's 2 s module deadline is always met, then
// imports plotly's own widget bundle (plotly.js and plotly's FigureWidget frontend, ~5 MB) from
// the shared `PlotlyBundle` model's state: no network, once per page for all charts. Figure
// messages that arrive meanwhile are queued and handed to plotly's FigureModel in order before
// any view draws.

const PY2JS = [
  "_py2js_addTraces", "_py2js_deleteTraces", "_py2js_moveTraces", "_py2js_restyle",
  "_py2js_relayout", "_py2js_update", "_py2js_animate", "_py2js_removeLayoutProps",
  "_py2js_removeTraceProps",
];
const MODEL_PREFIX = "IPY_MODEL_";
const BUNDLE_WAIT_MS = 120000; // how long a chart waits for the bundle's model to exist

// plotly's bundle, imported once per page and plotly version: {key: Promise<module>}
const bundles = (globalThis.__ctxlabPlotlyBundles ??= new Map());

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function bundleModel(model, signal) {
  const id = String(model.get("_bundle") || "").replace(MODEL_PREFIX, "");
  if (!id) throw new Error("ChartWidget has no PlotlyBundle");
  // On a page restoring many widgets at once, the bundle's model may be registered after this
  // chart's: poll the widget manager until it is there.
  const deadline = Date.now() + BUNDLE_WAIT_MS;
  for (;;) {
    signal?.throwIfAborted();
    try {
      return await model.widget_manager.get_model(id);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(100);
    }
  }
}

function importBundle(key, bytes) {
  const url = URL.createObjectURL(new Blob([bytes], { type: "text/javascript" }));
  return import(/* webpackIgnore: true */ url).finally(() => URL.revokeObjectURL(url));
}

// The `PlotlyBundle` model holds the bundle: it starts the import as soon as it exists (when
// `ctxlab.widgets` is imported in a kernel), before charts are made, so plotly's one long
// evaluation seldom overlaps another model's 2 s module deadline.
function preload(holder) {
  const key = holder.get("key");
  if (!bundles.has(key)) {
    const entry = importBundle(key, holder.get("bundle"));
    entry.catch(() => bundles.delete(key));
    bundles.set(key, entry);
  }
}

function loadPlotly(model, signal) {
  const key = model.get("_bundle_key");
  let entry = bundles.get(key);
  if (!entry) {
    entry = bundleModel(model, signal).then((holder) => importBundle(key, holder.get("bundle")));
    entry.catch(() => bundles.delete(key)); // a later chart tries again
    bundles.set(key, entry);
  }
  return entry;
}

// A model for plotly's FigureModel: the real one, except that `replay` hands it a queued message
// (the value a `_py2js_*` trait had when it changed) as if it had just arrived.
function replayable(model) {
  const handlers = [];
  const replaying = new Map();
  return {
    get: (name) => (replaying.has(name) ? replaying.get(name) : model.get(name)),
    set: (name, value) => model.set(name, value),
    save_changes: () => model.save_changes(),
    send: (...args) => model.send(...args),
    on(event, callback) {
      handlers.push([event, callback]);
      model.on(event, callback);
    },
    off: (event, callback) => model.off(event, callback),
    widget_manager: model.widget_manager,
    replay(name, value) {
      replaying.set(name, value);
      try {
        for (const [event, callback] of handlers) if (event === `change:${name}`) callback();
      } finally {
        replaying.delete(name);
      }
    },
  };
}

export default () => {
  let ready = null;
  return {
    initialize({ model, signal }) {
      if (model.get("bundle") !== undefined) {
        // the shared PlotlyBundle model itself: start the import, return at once
        setTimeout(() => preload(model), 0);
        return;
      }
      const queue = [];
      const listeners = PY2JS.map((name) => [
        `change:${name}`,
        () => queue.push([name, model.get(name)]),
      ]);
      for (const [event, listener] of listeners) model.on(event, listener);
      ready = loadPlotly(model, signal).then((mod) => {
        for (const [event, listener] of listeners) model.off(event, listener);
        const figure = replayable(model);
        const widget = typeof mod.default === "function" ? mod.default() : mod.default;
        widget.initialize({ model: figure });
        for (const [name, value] of queue) figure.replay(name, value);
        queue.length = 0;
        return { widget, figure };
      });
      ready.catch((err) => console.error("[ctxlab] chart: plotly did not load", err));
      // returns at once: plotly loads after anywidget's deadline has been met
    },
    async render({ el, signal }) {
      const waiting = document.createElement("div");
      waiting.className = "ctx-chart-loading";
      waiting.textContent = "loading plotly.js…";
      el.appendChild(waiting);
      let loaded;
      try {
        loaded = await ready;
      } catch (err) {
        waiting.textContent = `chart unavailable: plotly.js did not load (${err})`;
        return;
      }
      waiting.remove();
      if (signal?.aborted) return;
      return loaded.widget.render({ model: loaded.figure, el });
    },
  };
};
