// Package viewer is flock's run viewer in the browser: a single page
// served by flock serve at / (assets at /ui/), embedded in the binary with
// go:embed, so it works offline and needs no CDN.
//
// # Sources are the assets
//
// The viewer is plain HTML, CSS and JavaScript ES modules in assets/
// (index.html, app.js, api.js, dom.js, transcript.js, rollout.js,
// samples.js, synthesis.js, compare.js, graph.js, charts.js, style.css);
// there is no bundler and no build step: the files in the repository are
// the files served, and a fresh clone builds with Go alone. Edit them and
// rebuild the binary. index.html preloads every module, so the browser
// fetches them at once instead of import by import.
//
// # Pages
//
//   - #/ the runs list: top-level runs (GET /runs?top=true), each with its
//     task's first line, end reason, a rollout's mean score and "waiting
//     for you" when it waits on a question; a run's children open under
//     it (three levels); "child runs too" lists every run; filters by
//     status, workflow and parent and a search of the tasks (GET /runs?q=,
//     on the server) kept in the URL fragment; live counts by status (GET
//     /stats/runs, polled every 2 s); cursor paging of 50 runs, the first
//     page refreshed every 3 s; tick two runs to compare them.
//   - #/runs/ID a run: head (task, result fields), operator controls
//     (pause, resume, cancel, fork from a step with an optional message
//     and edited vars, the answers to pending human ops, an intervention
//     replacing the next action), usage against limits, tokens and cost
//     by model (GET /runs/ID/usage, with the child runs' on demand), the
//     vars now or as any step of the timeline left them (rebuilt from the
//     phase events' "set"), child runs as a tree, the workflow's graph
//     (GET /workflows) with the current phase marked and the phases gone
//     through shaded, the phase timeline, the transcript and the operation
//     journal (a command and its output in its row; request and result
//     opened in a row of their own as wide as the table).
//   - A rollout's page adds its samples (rollout.js): summary cards (mean
//     score per scorer, pass@k over k, a score histogram, failures by end
//     reason; from the rollout's summary until every row is read) and a
//     table of every sample (task, chain, question, answer, references,
//     each scorer's score, correct, end reason, tokens, time), sortable by
//     any column, filtered to correct, incorrect, failed or one task,
//     searched, each row opening its agent run. The rows are the "row"
//     entries of the rollout (GET /runs/ID/entries?type=row) and, while it
//     runs, of its lanes. The table is virtualised: only the rows in view
//     are in the DOM, so 10,000 samples sort and scroll like 10. The
//     rollout's entry log (tasks, rows) is folded and read when opened.
//     A sample's agent run shows how it was graded (its row in the lane
//     that ran it) and links back to the rollout.
//   - A synthesis run's page adds its QA pairs (synthesis.js): those kept
//     (question, answer, each hop's fact and evidence, the checks passed)
//     and those rejected (the failed check and why), read from its seed
//     runs' entries, and each seed's trajectory tree drawn on a click: a
//     node per tool call with its tool and the start of its observation,
//     the selected paths marked; a click on a node shows all of it. A seed
//     run's own page draws its tree.
//   - #/compare?a=ID&b=ID two runs side by side (compare.js): two rollouts
//     by task (mean score of each, B − A, correct counts) and by sample
//     (correct → incorrect, incorrect → correct); any other two by their
//     transcripts, one row per step, a fork and its origin sharing the
//     steps up to the fork once. A fork's page links to the comparison
//     with its origin, a rollout's offers the other rollouts.
//
// The transcript renders triframe's entries for people (task, advice,
// options with their ratings, the chosen action, tool outputs folded past
// 12 lines or 1,200 characters, warnings, subagents, tournament rounds,
// conclusions, submissions and scores), shell commands with their stdout
// and stderr (script, parallel-commands), a rollout's tasks and graded
// rows and a synthesis seed's nodes and QA; other entry types show their
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
// test reads to measure first render (docs/benchmarks.md, "Issue 15"), and
// flock:samples-rendered (a rollout's first screen: its cards and first
// rows, after the first page of 100 rows) and flock:samples-all (every row
// read), measured on 10,000 samples (docs/benchmarks.md, "Issue 26").
// A rollout's page reads its rows before the rest of the page asks for
// its ops, children and usage, starts past its task entries (every row
// follows them; the var "rollout" counts them), and lays out its samples
// section alone before the rest of the page.
//
// # Screenshots
//
// The browser tests save screenshots (into $FLOCK_SCREENSHOTS, or a temp
// directory named in the log); docs/img/viewer-*.png are taken from them:
//
//	FLOCK_SCREENSHOTS=/tmp/shots go test ./viewer -run 'TestViewer' -v
package viewer
