/* phaseprof report: tabs, tooltips and the zoomable timeline. No libraries. */
(function () {
  'use strict';
  var tip = document.createElement('div');
  tip.className = 'tip';
  document.body.appendChild(tip);
  function showTip(e, text) {
    tip.textContent = text;
    tip.style.display = 'block';
    var x = e.clientX + 14, y = e.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 8) x = e.clientX - tip.offsetWidth - 10;
    if (y + tip.offsetHeight > window.innerHeight - 8) y = e.clientY - tip.offsetHeight - 10;
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
  function hideTip() { tip.style.display = 'none'; }

  function fmt(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(a >= 1e10 ? 1 : 2) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(a >= 1e8 ? 0 : a >= 1e7 ? 1 : 2) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(1) + ' us';
    return Math.round(ns) + ' ns';
  }

  /* ---- tabs ---- */
  var tabs = document.querySelectorAll('button.tab');
  function activate(id) {
    var panel = document.getElementById(id);
    if (!panel) return;
    for (var i = 0; i < tabs.length; i++)
      tabs[i].classList.toggle('active', tabs[i].getAttribute('data-tab') === id);
    var panels = document.querySelectorAll('.panel');
    for (var j = 0; j < panels.length; j++) panels[j].classList.toggle('active', panels[j] === panel);
    var tls = panel.querySelectorAll('.timeline');
    for (var k = 0; k < tls.length; k++) initTimeline(tls[k]);
    if (history.replaceState) history.replaceState(null, '', '#' + id);
  }
  for (var i = 0; i < tabs.length; i++)
    tabs[i].addEventListener('click', function () { activate(this.getAttribute('data-tab')); window.scrollTo(0, 0); });
  var links = document.querySelectorAll('a[data-goto]');
  for (var l = 0; l < links.length; l++)
    links[l].addEventListener('click', function (e) { e.preventDefault(); activate(this.getAttribute('data-goto')); window.scrollTo(0, 0); });

  /* ---- timeline ---- */
  var PHASE = ['#9aa5b8', '#5b8def', '#8e6fd8', '#3fa7a0', '#c77dba', '#4f9d5d', '#74a6d8', '#e08a3c',
    '#b9a23b', '#d9674e', '#6b8e23', '#a0522d', '#5f7fbf', '#9b59b6', '#e6b422', '#d35454',
    '#2e86c1', '#16a085', '#7f8c8d', '#c0392b', '#95a5a6', '#34495e'];
  var GPU = ['#76b041', '#e67e22', '#9b59b6'];
  function hashColour(s) {
    var h = 0;
    for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
    return 'hsl(' + (((h % 360) + 360) % 360) + ',48%,' + (58 + ((h >>> 8) & 7)) + '%)';
  }
  var ROW = 14, LABEL = 190, AXIS = 22;

  function initTimeline(el) {
    if (el._tl) return;
    var src = document.getElementById(el.getAttribute('data-src'));
    if (!src) return;
    var data = JSON.parse(src.textContent);
    var tracks = data.tracks, names = data.names;
    /* decode: delta starts → absolute; keep flat typed arrays per track */
    var y = AXIS;
    for (var t = 0; t < tracks.length; t++) {
      var tr = tracks[t], d = tr.d, n = d.length / 5, st = new Float64Array(n), du = new Float64Array(n);
      var nm = new Int32Array(n), dp = new Uint16Array(n), cc = new Uint8Array(n), acc = 0, maxd = 0;
      for (var i = 0; i < n; i++) {
        acc += d[i * 5]; st[i] = acc; du[i] = d[i * 5 + 1]; nm[i] = d[i * 5 + 2]; dp[i] = d[i * 5 + 3]; cc[i] = d[i * 5 + 4];
        if (du[i] > maxd) maxd = du[i];
      }
      tr.st = st; tr.du = du; tr.nm = nm; tr.dp = dp; tr.cc = cc; tr.maxd = maxd; tr.y = y;
      tr.d = null;
      y += tr.rows * ROW + 6;
    }
    var height = y + 4;
    /* open on the recorded activity, not on the idle lead-in before it */
    var first = data.t_end;
    for (var f = 0; f < tracks.length; f++) if (tracks[f].st.length && tracks[f].st[0] < first) first = tracks[f].st[0];
    var last = 0;
    for (var f2 = 0; f2 < tracks.length; f2++) {
      var tf = tracks[f2];
      for (var q2 = 0; q2 < tf.st.length; q2++) if (tf.st[q2] + tf.du[q2] > last) last = tf.st[q2] + tf.du[q2];
    }
    if (!(last > first)) { first = 0; last = Math.max(data.t_end, 1); }
    var pad = (last - first) * 0.02;
    var home0 = Math.max(0, first - pad), home1 = Math.min(Math.max(data.t_end, 1), last + pad);
    var tl = { el: el, data: data, t0: home0, t1: home1, height: height };
    el._tl = tl;
    var svg = el.querySelector('svg');
    svg.setAttribute('height', height);
    tl.svg = svg;
    tl.range = el.querySelector('.range');
    var opCol = {};
    function colour(c, name) {
      var cat = c >> 5, kind = c & 31;
      if (c === 255) return '#aab3c2';
      if (cat === 0) return PHASE[kind % PHASE.length];
      if (cat === 3) return GPU[kind % 3];
      if (cat === 2) return '#5d6d7e';
      var k = 'c' + name;   /* op colours hash the name: cache them */
      return opCol[k] || (opCol[k] = hashColour(names[name] || ''));
    }
    function render() {
      var w = svg.clientWidth || el.clientWidth || 1000;
      var pw = w - LABEL, t0 = tl.t0, t1 = tl.t1, k = pw / (t1 - t0);
      var out = [];
      /* time axis */
      var span = t1 - t0, step = Math.pow(10, Math.floor(Math.log(span / 6) / Math.LN10));
      if (span / step > 12) step *= 5; else if (span / step > 6) step *= 2;
      for (var tt = Math.ceil(t0 / step) * step; tt <= t1; tt += step) {
        var x = LABEL + (tt - t0) * k;
        out.push('<line x1="' + x + '" x2="' + x + '" y1="' + (AXIS - 4) + '" y2="' + height + '" stroke="#eceff4"/>' +
          '<text x="' + (x + 3) + '" y="13" font-size="10" fill="#5f6b7d">' + fmt(tt) + '</text>');
      }
      /* Level of detail: items narrower than minPx pixels merge into blocks.
       * The denser the window, the wider minPx, so shapes stay ~bounded by
       * the pixel width times the rows whatever the zoom. */
      var inWin = 0;
      for (var q = 0; q < tracks.length; q++) {
        var tq = tracks[q], a = lowerBound(tq.st, t0 - tq.maxd), z = lowerBound(tq.st, t1 + 1);
        tq.lo = a; inWin += z - a;
      }
      var minPx = Math.min(6, Math.max(1.5, inWin / pw / 3));
      var drawn = 0;
      for (var t = 0; t < tracks.length; t++) {
        var tr = tracks[t], n = tr.st.length;
        out.push('<rect x="0" y="' + (tr.y - 2) + '" width="' + w + '" height="' + (tr.rows * ROW + 4) + '" fill="' + (t % 2 ? '#fafbfc' : '#ffffff') + '"/>');
        out.push('<text x="6" y="' + (tr.y + 10) + '" font-size="11" fill="' + (tr.g ? '#3d7a1f' : '#1d2330') + '">' + esc(tr.n) + '</text>');
        /* first item that can overlap the window: starts ≥ t0 - longest item */
        var lo = tr.lo;
        var pend = [];   /* per row: sub-pixel items merged into one block */
        for (var i = lo; i < n; i++) {
          var s = tr.st[i];
          if (s > t1) break;
          var e = s + tr.du[i];
          if (e < t0) continue;
          var x0 = LABEL + Math.max(s - t0, 0) * k, x1 = LABEL + Math.min(e - t0, span) * k, row = tr.dp[i];
          if (x1 - x0 < minPx || tr.nm[i] < 0) {
            var p = pend[row];
            if (p && x0 <= p.x1 + 1) { if (x1 > p.x1) p.x1 = x1; p.n += tr.nm[i] < 0 ? -tr.nm[i] : 1; p.ns += tr.du[i]; continue; }
            if (p) { out.push(block(tr, row, p)); drawn++; }
            pend[row] = { x0: x0, x1: x1, n: tr.nm[i] < 0 ? -tr.nm[i] : 1, ns: tr.du[i], c: tr.cc[i], nm: tr.nm[i] };
            continue;
          }
          out.push('<rect x="' + x0.toFixed(1) + '" y="' + (tr.y + row * ROW) + '" width="' + (x1 - x0).toFixed(1) +
            '" height="' + (ROW - 2) + '" fill="' + colour(tr.cc[i], tr.nm[i]) + '" data-t="' + t + '" data-i="' + i + '"/>');
          if (x1 - x0 > 40) {
            out.push('<text x="' + (x0 + 3).toFixed(1) + '" y="' + (tr.y + row * ROW + 10) + '" font-size="10" fill="#fff" pointer-events="none">' +
              esc(clip(names[tr.nm[i]] || '', (x1 - x0 - 6) / 6)) + '</text>');
          }
          drawn++;
        }
        for (var r in pend) { out.push(block(tr, +r, pend[r])); drawn++; }
      }
      /* marks (pp_mark): a dashed line over every track */
      var mk = data.marks || [];
      for (var j = 0; j < mk.length; j += 2) {
        if (mk[j] < t0 || mk[j] > t1) continue;
        var mx = (LABEL + (mk[j] - t0) * k).toFixed(1);
        out.push('<line x1="' + mx + '" x2="' + mx + '" y1="' + AXIS + '" y2="' + height + '" stroke="#c0392b" stroke-opacity="0.45" stroke-dasharray="3 3" pointer-events="none"/>' +
          '<path d="M' + (mx - 5) + ' ' + (AXIS - 8) + 'h10l-5 7z" fill="#c0392b" data-mk="' + j + '"/>');
      }
      tl.g.innerHTML = out.join('');
      tl.drawn = drawn;
      svg.setAttribute('data-drawn', drawn);
      tl.range.textContent = fmt(t0) + ' – ' + fmt(t1) + ' (' + fmt(t1 - t0) + ' shown, ' + drawn + ' shapes)';
    }
    function block(tr, row, p) {
      var w = Math.max(p.x1 - p.x0, 1);
      return '<rect x="' + p.x0.toFixed(1) + '" y="' + (tr.y + row * ROW) + '" width="' + w.toFixed(1) + '" height="' + (ROW - 2) +
        '" fill="' + (p.nm < 0 ? '#aab3c2' : colour(p.c, p.nm)) + '" opacity="0.75" data-m="' + p.n + '" data-ns="' + p.ns + '"/>';
    }
    svg.innerHTML = '<g></g>';
    tl.g = svg.firstChild;
    function zoom(f, cx) {
      var w = svg.clientWidth - LABEL, span = tl.t1 - tl.t0;
      var at = tl.t0 + Math.max(0, Math.min(1, (cx - LABEL) / w)) * span;
      var ns = Math.max(span * f, 1000);
      ns = Math.min(ns, data.t_end);
      tl.t0 = Math.max(0, at - (at - tl.t0) * ns / span);
      tl.t1 = tl.t0 + ns;
      if (tl.t1 > data.t_end) { tl.t1 = data.t_end; tl.t0 = Math.max(0, tl.t1 - ns); }
      render();
    }
    var pendingZoom = null;
    svg.addEventListener('wheel', function (e) {
      e.preventDefault();
      var r = svg.getBoundingClientRect(), f = e.deltaY > 0 ? 1.25 : 0.8;
      /* coalesce a burst of wheel events into one render per frame */
      if (pendingZoom) { pendingZoom.f *= f; return; }
      pendingZoom = { f: f, x: e.clientX - r.left };
      requestAnimationFrame(function () { var z = pendingZoom; pendingZoom = null; zoom(z.f, z.x); });
    }, { passive: false });
    var drag = null;
    svg.addEventListener('mousedown', function (e) { drag = { x: e.clientX, t0: tl.t0, t1: tl.t1 }; svg.classList.add('drag'); });
    window.addEventListener('mouseup', function () { drag = null; svg.classList.remove('drag'); });
    svg.addEventListener('mousemove', function (e) {
      if (drag) {
        var w = svg.clientWidth - LABEL, dt = (e.clientX - drag.x) / w * (drag.t1 - drag.t0);
        var span = drag.t1 - drag.t0;
        tl.t0 = Math.min(Math.max(0, drag.t0 - dt), Math.max(0, data.t_end - span));
        tl.t1 = tl.t0 + span;
        render();
        return;
      }
      var tg = e.target;
      if (tg.hasAttribute && tg.hasAttribute('data-i')) {
        var tr = tracks[+tg.getAttribute('data-t')], i = +tg.getAttribute('data-i');
        var c = tr.cc[i], what = ['phase', 'op', 'CUDA API', 'GPU'][c >> 5] || '';
        if ((c >> 5) === 0 && data.kinds) what = data.kinds[c & 31] || what;
        showTip(e, (names[tr.nm[i]] || '') + '\n' + what + ' · ' + fmt(tr.du[i]) + '\nstart ' + fmt(tr.st[i]) + ' · ' + tr.n);
      } else if (tg.hasAttribute && tg.hasAttribute('data-mk')) {
        var mj = +tg.getAttribute('data-mk');
        showTip(e, 'mark: ' + data.marks[mj + 1] + '\nat ' + fmt(data.marks[mj]));
      } else if (tg.hasAttribute && tg.hasAttribute('data-m')) {
        showTip(e, tg.getAttribute('data-m') + ' short items merged (' + fmt(+tg.getAttribute('data-ns')) + ' in total)\nzoom in to see them');
      } else hideTip();
    });
    svg.addEventListener('mouseleave', hideTip);
    svg.addEventListener('dblclick', function () { tl.t0 = home0; tl.t1 = home1; render(); });
    var btns = el.querySelectorAll('button[data-z]');
    for (var b = 0; b < btns.length; b++)
      btns[b].addEventListener('click', function () {
        var z = this.getAttribute('data-z');
        if (z === 'reset') { tl.t0 = home0; tl.t1 = home1; render(); }
        else zoom(z === 'in' ? 0.5 : 2, LABEL + (svg.clientWidth - LABEL) / 2);
      });
    window.addEventListener('resize', function () { if (el.offsetParent) render(); });
    render();
  }
  function lowerBound(a, v) {
    var lo = 0, hi = a.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (a[mid] < v) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function esc(s) { return String(s).replace(/[&<>"]/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]; }); }
  function clip(s, n) { n = Math.floor(n); return s.length <= n ? s : (n > 1 ? s.slice(0, n - 1) + '…' : ''); }

  /* server-rendered charts keep their <title> tooltips; mirror them in the styled tip */
  document.addEventListener('mouseover', function (e) {
    var t = e.target;
    if (t.closest && t.closest('.timeline')) return;
    var ti = t.querySelector && t.getAttribute && t.getAttribute('data-tip');
    if (ti) showTip(e, ti);
  });
  document.addEventListener('mouseout', function (e) {
    if (e.target.getAttribute && e.target.getAttribute('data-tip')) hideTip();
  });

  var first = (location.hash || '').slice(1);
  activate(document.getElementById(first) ? first : 'overview');
})();
