// SPDX-License-Identifier: LGPL-2.1-or-later
// twoflow proxy page: the videos (GET /videos), an HLS player (hls.js where
// the browser has no native HLS) and the sessions' status (GET /status,
// once a second) with a plot of the rates per flow.
'use strict';

const video = document.getElementById('player');
const state = { hls: null, name: null, audioCodec: null, videoCodec: null,
  history: {}, errors: [] };

function mbps(v) { return (v / 1e6).toFixed(2) + ' Mbit/s'; }

async function loadVideos() {
  const ul = document.getElementById('videos');
  try {
    const r = await fetch('/videos');
    const j = await r.json();
    ul.innerHTML = '';
    state.unsupported = j.unsupported || {};
    for (const name of j.videos.sort()) {
      const li = document.createElement('li');
      const why = state.unsupported[name];
      li.textContent = name;
      li.dataset.name = name;
      li.onclick = () => play(name);
      if (why) {
        // the server's catalog: this file cannot play, and why
        li.classList.add('unsupported');
        li.title = why;
        const note = document.createElement('span');
        note.className = 'why';
        note.textContent = ' — cannot play: ' + why;
        li.appendChild(note);
      }
      li.classList.toggle('on', name === state.name);
      ul.appendChild(li);
    }
    // the server's catalog is still looking at some: ask again
    if ((j.checking || []).length)
      setTimeout(loadVideos, 1000);
  } catch (e) {
    ul.innerHTML = '<li>server unreachable</li>';
  }
}

function showWhy(name, why) {
  state.why = why;
  document.getElementById('why').textContent = why ?
    'Cannot play ' + name + ': ' + why : '';
}

// hls.js 1.5 ends the MediaSource (BUFFER_EOS, endOfStream) only when the
// segment it buffered last was listed in a playlist with EXT-X-ENDLIST. The
// proxy's last segment is fetched while the playlist is still EVENT (it is
// sent as it grows) and the ENDLIST comes as that segment completes: hls.js
// kept the EVENT playlist's fragment, never ended the stream, and Chromium
// stopped ~0.07 s before the end (bufferStalledError; clip3s-mp3.mp4 showed
// 72 of 75 frames). Once the complete playlist's last segment is buffered,
// the stream ends here.
function endOfStreamOnLastSegment(hls) {
  let endSN = null, lastBuffered = null, ended = false;
  const check = () => {
    if (!ended && endSN !== null && lastBuffered === endSN) {
      ended = true;
      hls.trigger(Hls.Events.BUFFER_EOS, {});
    }
  };
  hls.on(Hls.Events.BUFFER_EOS, () => { ended = true; });
  hls.on(Hls.Events.LEVEL_UPDATED, (ev, data) => {
    endSN = data.details.live ? null : data.details.endSN;
    check();
  });
  hls.on(Hls.Events.FRAG_BUFFERED, (ev, data) => {
    if (data.frag.type !== 'main') return;
    lastBuffered = data.frag.sn;
    // a seek back buffers again: hls.js ends the stream itself then
    if (data.frag.sn !== endSN) ended = false;
    check();
  });
}

// hls.js 1.5 hands a progressive segment to its demuxer in pieces of at
// least 128 KB (its MIN_CHUNK_SIZE, the fetch loader's highWaterMark): the
// proxy's first segment arrives at about the video's rate, so the first
// frame waited for 128 KB of it (0.8 s for mpeg2-mp2-ps.mpg as H.264). Its
// fragment loader here is hls.js's own (the fetch loader of progressive
// mode) handing on every piece as it comes.
function EagerFragmentLoader(config) {
  const loader = new config.loader(config);
  const load = loader.load.bind(loader);
  loader.load = (context, cfg, callbacks) => load(context,
    Number.isFinite(cfg.highWaterMark) ? { ...cfg, highWaterMark: 0 } : cfg,
    callbacks);
  return loader;
}

function play(name) {
  const src = '/hls/' + encodeURIComponent(name) + '/index.m3u8';
  state.name = name;
  state.audioCodec = state.videoCodec = null;
  // start-up time: from this request to the first frame shown (and the
  // stalls after it: playback waiting for data)
  state.t0 = performance.now();
  state.firstFrame = null;
  state.stalls = 0;
  if (video.requestVideoFrameCallback)
    video.requestVideoFrameCallback((now) => {
      if (state.name === name && state.firstFrame === null)
        state.firstFrame = (now - state.t0) / 1000;
    });
  showWhy(name, null);
  document.getElementById('now').textContent = 'Player: ' + name;
  for (const li of document.querySelectorAll('#videos li'))
    li.classList.toggle('on', li.dataset.name === name);
  if (state.hls) { state.hls.destroy(); state.hls = null; }
  const why = (state.unsupported || {})[name];
  if (why) {
    // the server said so already: no player, the reason
    video.removeAttribute('src');
    showWhy(name, why);
    return;
  }
  if (window.Hls && Hls.isSupported()) {
    // from the beginning: the playlist is an EVENT playlist while the
    // session runs (hls.js would start at its live edge), VOD once complete;
    // progressive: the proxy streams the segment being written as it grows,
    // and hls.js plays its frames as they arrive (not once it is complete)
    // (a blocking playlist reload waits up to a segment: 10 s and more)
    const hls = new Hls({ manifestLoadingTimeOut: 40000,
      levelLoadingTimeOut: 30000, startPosition: 0, progressive: true,
      fLoader: EagerFragmentLoader });
    hls.on(Hls.Events.BUFFER_CODECS, (ev, data) => {
      if (data.audio) state.audioCodec = data.audio.codec || data.audio.container;
      if (data.video) state.videoCodec = data.video.codec || data.video.container;
    });
    hls.on(Hls.Events.ERROR, (ev, data) => {
      state.errors.push(data.details);
      // a fatal error says why, in the proxy's own words (the body of its
      // answer, which hls.js does not keep) when it gave any
      if (data.fatal && data.type !== Hls.ErrorTypes.MEDIA_ERROR)
        fetch(src).then((r) => r.ok ? '' : r.text())
          .catch(() => '')
          .then((t) => showWhy(name, t.trim() || data.details));
      if (data.fatal && data.type === Hls.ErrorTypes.MEDIA_ERROR)
        hls.recoverMediaError();
    });
    endOfStreamOnLastSegment(hls);
    hls.loadSource(src);
    hls.attachMedia(video);
    state.hls = hls;
  } else {
    video.src = src;
  }
  video.play().catch((e) => state.errors.push(String(e)));
}

// what a test reads (also shown under the player)
video.addEventListener('waiting', () => {
  if (state.firstFrame !== null && state.firstFrame !== undefined)
    state.stalls = (state.stalls || 0) + 1;
});

window.twoflowReport = function () {
  return {
    video: state.name,
    currentTime: video.currentTime,
    paused: video.paused,
    ended: video.ended, duration: video.duration,
    width: video.videoWidth, height: video.videoHeight,
    audioCodec: state.audioCodec, videoCodec: state.videoCodec,
    audioDecodedBytes: video.webkitAudioDecodedByteCount || 0,
    videoDecodedBytes: video.webkitVideoDecodedByteCount || 0,
    decodedFrames: video.webkitDecodedFrameCount || 0,
    audioTracks: video.audioTracks ? video.audioTracks.length : null,
    errors: state.errors.slice(-5),
    // s from play() and from the page's navigation to the first frame
    firstFrameS: state.firstFrame,
    firstFramePageS: state.firstFrame === null || state.firstFrame === undefined
      ? null : state.firstFrame + state.t0 / 1000,
    stalls: state.stalls || 0,
    why: state.why || null,
    unsupported: state.unsupported || {},
    marked: Array.from(document.querySelectorAll('#videos li.unsupported'))
      .map((li) => li.dataset.name),
  };
};

function updatePlayInfo() {
  const r = window.twoflowReport();
  document.getElementById('playinfo').textContent = r.video ?
    `t = ${r.currentTime.toFixed(1)} s, ${r.width}×${r.height}, video ` +
    `${r.videoCodec || '?'}, audio ${r.audioCodec || 'none'}` : '';
}

function plot() {
  const c = document.getElementById('plot'), g = c.getContext('2d');
  const W = c.width, H = c.height, L = 50, B = 20, span = 60;
  g.clearRect(0, 0, W, H);
  const now = Date.now() / 1000;
  let max = 1e5;
  for (const h of Object.values(state.history))
    for (const p of h.points) max = Math.max(max, p[1], p[2]);
  max *= 1.1;
  g.strokeStyle = '#ccc'; g.fillStyle = '#555'; g.font = '11px sans-serif';
  for (let i = 0; i <= 4; i++) {
    const y = H - B - (H - B - 8) * i / 4;
    g.beginPath(); g.moveTo(L, y); g.lineTo(W, y); g.stroke();
    g.fillText((max * i / 4 / 1e6).toFixed(max < 4e6 ? 2 : 1), 4, y + 4);
  }
  g.fillText('Mbit/s', 4, H - 4);
  g.fillText('last ' + span + ' s', W - 70, H - 4);
  const colours = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];
  let k = 0, ly = 14;
  for (const [id, h] of Object.entries(state.history)) {
    const col = colours[k++ % colours.length];
    for (const [idx, dash] of [[1, []], [2, [5, 3]]]) {
      g.strokeStyle = col; g.setLineDash(dash); g.lineWidth = 2;
      g.beginPath();
      h.points.forEach((p, i) => {
        const x = L + (W - L) * (1 - (now - p[0]) / span);
        const y = H - B - (H - B - 8) * p[idx] / max;
        if (i) g.lineTo(x, y); else g.moveTo(x, y);
      });
      g.stroke();
    }
    g.setLineDash([]); g.fillStyle = col;
    g.fillText(`#${id} ${h.video} (solid: essential, dashed: enhanced)`, L + 6, ly);
    ly += 13;
  }
}

async function poll() {
  try {
    const r = await fetch('/status');
    const s = await r.json();
    document.getElementById('health').textContent = 'proxy up';
    const now = Date.now() / 1000;
    const tb = document.querySelector('#sessions tbody');
    tb.innerHTML = '';
    const live = new Set();
    for (const x of s.sessions) {
      live.add(String(x.session));
      const h = state.history[x.session] ||
        (state.history[x.session] = { video: x.video, points: [] });
      h.points.push([now, x.essential_rate, x.enhanced_rate]);
      while (h.points.length && now - h.points[0][0] > 60) h.points.shift();
      const m = x.merge || {}, u = x.rudpsrc || {};
      const tr = document.createElement('tr');
      for (const v of [x.session, x.kind, x.video, mbps(x.essential_rate),
        mbps(x.enhanced_rate), m['output-frames'] ?? '', m.E_f ?? '',
        m.E_g ?? '', u.lost ?? ''])
        tr.insertCell().textContent = v;
      tb.appendChild(tr);
    }
    for (const id of Object.keys(state.history))
      if (!live.has(id)) {
        const h = state.history[id];
        if (!h.points.length || now - h.points[h.points.length - 1][0] > 60)
          delete state.history[id];
      }
    const a = s.admission || {};
    document.getElementById('admission').textContent =
      `mode ${a.mode}, ${a.sessions} session(s), reserved ${mbps(a.reserved || 0)}` +
      (a.capacity ? ` of ${mbps(a.capacity)}` : '') +
      `; ${a.admitted || 0} admitted, ${a.rejected || 0} rejected`;
    const db = document.querySelector('#decisions tbody');
    db.innerHTML = '';
    for (const d of s.decisions.slice().reverse()) {
      const tr = document.createElement('tr');
      for (const v of [new Date(d.time).toLocaleTimeString(), d.video,
        d.decision, mbps(d.peak_rate), d.sessions, d.reason || ''])
        tr.insertCell().textContent = v;
      tr.className = d.decision;
      db.appendChild(tr);
    }
  } catch (e) {
    document.getElementById('health').textContent = 'proxy unreachable';
  }
  plot();
  updatePlayInfo();
}

const listed = loadVideos();
poll();
setInterval(poll, 1000);
const want = new URLSearchParams(location.search).get('play');
if (want) {
  video.muted = new URLSearchParams(location.search).has('muted');
  // after the list: the catalog may already say why it cannot play
  listed.finally(() => play(want));
}
