// Package viewer is flock's run viewer in the browser: a single page
// served by flock serve at / (assets at /ui/), embedded in the binary with
// go:embed, so it works offline and needs no CDN.
//
// # Sources are the assets
//
// The viewer is plain HTML, CSS and JavaScript ES modules in assets/
// (index.html, app.js, api.js, dom.js, transcript.js, style.css); there is
// no bundler and no build step: the files in the repository are the files
// served, and a fresh clone builds with Go alone. Edit them and rebuild
// the binary.
//
// # Pages
//
//   - #/ the runs list: filters by status, workflow and parent (kept in
//     the URL fragment), live counts by status (GET /stats/runs, polled
//     every 2 s; the server counts at most once a second), cursor paging
//     of 50 runs (GET /runs?after=), the first page refreshed every 3 s.
//   - #/runs/ID a run: head, operator controls (pause, resume, cancel,
//     fork from a step with an optional message and edited vars, the
//     answers to pending human ops, an intervention replacing the next
//     action), usage against limits, child runs as a tree (three levels),
//     the phase timeline with the duration of each step, the transcript
//     and the operation journal (request, result, attempts, time queued
//     and running).
//
// The transcript renders triframe's entries for people (task, advice,
// options with their ratings, the chosen action, tool outputs folded past
// 12 lines or 1,200 characters, warnings, subagents, tournament rounds,
// conclusions, submissions and scores); other entry types show their
// summary and their JSON. Text is always set with textContent: model
// output is never parsed as HTML.
//
// # Live updates
//
// A run page follows GET /runs/ID/events through a fetch-based
// Server-Sent Events reader (EventSource cannot send the Authorization
// header). After a dropped connection it reconnects with Last-Event-ID
// set to the last event it saw, so no stored event is lost or repeated.
// Each event schedules one refresh (at most every 300 ms) of the head,
// the new entries (after the last seq shown), the ops not yet done and
// the pending human ops.
//
// # Auth
//
// When the server has a token, the API answers 401 and the viewer shows a
// login form. The token is kept in the tab's sessionStorage and sent as
// "Authorization: Bearer" on every call, the event stream included; it
// never appears in a URL and no cookie is set, so the server's CSRF rules
// (package server: Host, Origin and Content-Type checks) need no
// exception: a page of another origin cannot make the browser
// authenticate. The page and its assets need no token (they hold no
// data), and carry a Content-Security-Policy that allows only the
// server's own origin and forbids framing.
//
// # Performance
//
// The first 500 entries are rendered at once and the rest page by page
// (1,000 a request) after first paint; long outputs and op requests are
// built only when opened; past 300 entries, entries off screen skip
// layout and paint (CSS content-visibility). The app sets performance marks
// flock:runs-rendered and flock:transcript-rendered, which the browser
// test reads to measure first render (docs/benchmarks.md, "Issue 15").
package viewer
