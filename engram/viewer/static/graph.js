// The graph view: fetch a bounded neighbourhood from /graph.json and draw it with
// Cytoscape.js (force-directed "cose" layout). Labels are set as text by Cytoscape,
// never parsed as HTML. Two sorts of edge, drawn apart: wikilinks typed in notes (thin,
// blue, unlabelled) and typed synapses (grey, labelled with their kind); `contradicts`
// synapses are drawn red and dashed: warnings.
(function () {
  "use strict";
  var box = document.getElementById("graph");
  var status = document.getElementById("graph-status");
  if (!box || typeof cytoscape !== "function") { return; }
  var palette = {
    observation: "#6c8ebf", fact: "#4f9a6b", pattern: "#b07cc6", procedure: "#d79b00",
    hypothesis: "#999999", decision: "#c0504d", need: "#2aa198", skill: "#5b6abf"
  };
  // Cytoscape injects a <style> element unless one with this id exists; the strict CSP
  // would block it, and viewer.css already gives the container its position.
  if (!document.getElementById("__________cytoscape_stylesheet")) {
    var marker = document.createElement("meta");
    marker.id = "__________cytoscape_stylesheet";
    document.head.appendChild(marker);
  }
  fetch(box.dataset.source, { credentials: "same-origin", headers: { "Accept": "application/json" } })
    .then(function (r) {
      if (!r.ok) { return r.text().then(function (t) { throw new Error(t); }); }
      return r.json();
    })
    .then(function (data) {
      var nodes = data.nodes.length, edges = data.edges.length;
      var warnings = data.edges.filter(function (e) { return e.data.warning; }).length;
      var links = data.edges.filter(function (e) { return e.data.wikilink; }).length;
      status.textContent = nodes + " item(s), " + links + " wikilink(s), " + (edges - links) + " synapse(s)" +
        (warnings ? ", " + warnings + " contradiction(s)" : "") +
        (data.truncated ? " — cut at the limit; focus on an item to see its neighbourhood" : "");
      box.dataset.nodes = String(nodes);
      box.dataset.edges = String(edges);
      box.dataset.wikilinks = String(links);
      box.dataset.synapses = String(edges - links);
      box.dataset.warnings = String(warnings);
      var cy = cytoscape({
        container: box,
        elements: data.nodes.concat(data.edges),
        maxZoom: 2.5, minZoom: 0.05,
        style: [
          { selector: "node", style: {
            "label": "data(label)", "font-size": 11, "text-wrap": "ellipsis", "text-max-width": 140,
            "width": "mapData(importance, 0, 1, 12, 40)", "height": "mapData(importance, 0, 1, 12, 40)",
            "background-color": function (n) { return palette[n.data("kind")] || "#888"; },
            "color": "#222", "text-valign": "bottom", "text-margin-y": 3 } },
          { selector: "node[?focus]", style: { "border-width": 4, "border-color": "#111" } },
          { selector: "node[status != 'active']", style: { "opacity": 0.55 } },
          { selector: "edge", style: {
            "width": "mapData(weight, 0, 1, 1, 4)", "line-color": "#9aa5b1", "curve-style": "bezier",
            "target-arrow-shape": "triangle", "target-arrow-color": "#9aa5b1", "arrow-scale": 0.8,
            "label": "data(kind)", "font-size": 8, "color": "#667", "text-rotation": "autorotate" } },
          { selector: "edge[kind = 'similar_to'], edge[kind = 'contradicts']", style: { "target-arrow-shape": "none" } },
          { selector: "edge[?wikilink]", style: {
            "width": 1.2, "line-color": "#3b82c4", "target-arrow-color": "#3b82c4", "target-arrow-shape": "vee",
            "arrow-scale": 0.7, "label": "", "opacity": 0.8 } },
          { selector: "edge[?warning]", style: {
            "line-color": "#d62728", "line-style": "dashed", "width": 3, "color": "#d62728", "label": "⚠ contradicts" } }
        ],
        layout: {
          name: "cose", animate: false, randomize: true, padding: 30, nodeRepulsion: 400000,
          idealEdgeLength: 110, edgeElasticity: 100, nodeOverlap: 20, gravity: 60,
          componentSpacing: 120, numIter: 1500
        }
      });
      if (cy.zoom() > 1.6) { cy.zoom(1.6); cy.center(); }  // a few nodes: do not blow them up
      cy.on("tap", "node", function (evt) {
        var params = new URLSearchParams(window.location.search);
        params.set("focus", evt.target.id());
        window.location.search = params.toString();
      });
      cy.on("dbltap", "node", function (evt) { window.location.href = "/item/" + encodeURIComponent(evt.target.id()); });
      box.dataset.ready = "1";
    })
    .catch(function (err) { status.textContent = "Could not load the graph: " + err.message; });
}());
