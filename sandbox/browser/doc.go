// Package browser is the sandbox's browser resource: a stateful backend
// whose session is one headless chromium (Debian's /usr/bin/chromium) driven
// with github.com/chromedp/chromedp, with AgentFlow's browser result shapes.
//
// # Tools (all need a browser session; without one, a temporary session)
//
//   - browser:navigate {url★} → {url, title, status, blocked?}: loads the
//     page and waits for its load event; status is the HTTP status of the
//     document; blocked lists the destinations refused meanwhile (below).
//   - browser:click {selector★} → {clicked, url, title}: clicks the first
//     element matching the CSS selector (waiting for it to be visible), then
//     waits for the load of a navigation the click started within 300 ms.
//   - browser:type {selector★, text★} → {typed, length, selector}: key
//     events into the element, after its current text; "\n" is Enter.
//   - browser:extract {selector?} → {text, html, selector, truncated}: the
//     visible text and outer HTML of the element (default "body"), each cut
//     at content_limit characters.
//   - browser:screenshot {full_page?} → {image_path, size: [w, h], bytes,
//     image?}: a PNG written to <workspace>/screenshots/shot-NNN.png; image
//     is the PNG in base64 when it is at most inline_image_max_bytes.
//
// A selector that matches nothing within action_timeout_s is 4000, as is a
// refused URL or input; a refused destination is 4001; a call past its
// deadline is 5006; a browser that is gone (crashed, cleaned up) is 4007;
// other browser errors (a refused connection, net::ERR_...) are 5000; when
// the per-session proxy could not connect to an allowed destination (a
// refused connection, a name that does not resolve, no network), the
// message says so after chromium's net::ERR_TUNNEL_CONNECTION_FAILED.
//
// # What the browser may reach
//
// navigate accepts http and https URLs and about:blank only. file: URLs are
// refused, including files of the session's own workspace: the agent has no
// way to make the browser read a local file (chromium itself blocks http
// pages from loading file: resources or navigating to them). Typing into an
// <input type=file> is refused too, since chromedp would set the typed path
// as the upload.
//
// By default the browser reaches public addresses only (server-side
// request forgery protection, package internal/netguard): every
// request of the tab, the page, its redirects, images, frames, scripts'
// fetches and XHRs, WebSockets and the links it follows, goes through a
// per-session HTTP proxy on loopback (--proxy-server, with
// --proxy-bypass-list=<-loopback> so that loopback is not bypassed, and
// WebRTC kept off non-proxied UDP). The proxy resolves the host itself and
// refuses, as it connects, loopback, private, link-local (169.254.169.254,
// the cloud metadata service), unspecified, multicast and other non-public
// addresses, by whatever name or numeric form they were reached; flock's
// own API is therefore out of reach too. A navigation whose document (or a
// redirect's target) was refused fails with 4001 naming the host and why;
// refused subresources of a page that loaded are listed in navigate's
// "blocked" (as "host (reason)"). The config opts in with allow_hosts
// (host names, IP addresses or CIDR prefixes) and allow_private: true
// (every address; tests and local use).
//
// # Processes
//
// Initialize starts one chromium per session with --headless --no-sandbox
// --disable-gpu --disable-background-networking --disable-component-update
// --no-first-run --disable-sync and a fresh --user-data-dir at
// <workspace>/.chromium-profile. Cleanup (destroy, expiry, disconnect) and
// Shutdown close it gracefully, kill the process, then SIGKILL every process
// still started with that profile (zygote, renderers, utilities) until none
// is left, and remove the profile. The kernel kills the main chromium if
// flock dies (Pdeathsig).
//
// # Config (resources.browser.config)
//
// chromium_path (default /usr/bin/chromium, else chromium or chromium-browser
// on PATH; Provision fails naming this path when none is found),
// action_timeout_s (15), start_timeout_s (30), width and height of the
// viewport (1280x800), content_limit (50000), inline_image_max_bytes (65536;
// 0 never inlines), allow_hosts (a list) and allow_private (false).
//
// Tests skip with a message when chromium is absent; scripts/test.sh
// installs it with apt-get when it runs as root.
package browser
