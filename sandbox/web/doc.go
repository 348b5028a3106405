// Package web is the sandbox's web API group: web:search and web:visit,
// stateless tools over pluggable HTTP providers, with AgentFlow's data shapes.
//
// # Tools
//
//   - web:search {query★ string or [string]} → {result, inputs}: result is
//     markdown, per query "A Google search for 'q' found N results:" and a
//     numbered list of [title](link), date, source and snippet; several
//     queries are joined with "\n=======\n". A failed query shows its error
//     in its section; the call fails (5000) only when every query failed.
//   - web:visit {urls★ string or [string], goal?} → {result, warning, inputs}:
//     each page's text (markdown from the reader) cut at content_limit
//     characters; warning is "k/n URLs failed: ..." or null; 5000 when every
//     page failed. Only http and https URLs are accepted (else 4000). There
//     is no LLM summary: goal is echoed in the text and inputs.
//
// A parameter of the wrong type is 4004, an empty query 4000, a call past its
// deadline 5006.
//
// # Providers and config (apis.web)
//
// search_provider "serper" POSTs {q, num, gl, hl} as JSON to search_url
// (default https://google.serper.dev/search) with the key in X-API-KEY; gl/hl
// are cn/zh-cn for a query with Han characters, else us/en. reader_provider
// "jina" GETs <reader_url><page url> (default https://r.jina.ai/) with the
// key, when set, as a bearer token. Keys come from serper_api_key and
// jina_api_key (write them as ${SERPER_API_KEY}) or from the environment
// variables SERPER_API_KEY and JINA_API_KEY; without a search key Provision
// fails naming apis.web.serper_api_key. Other settings, whole numbers
// checked at load: max_results (10, at most 100), content_limit (50000),
// timeout_s (30) per request, retries (2, at most 10; network errors, 429
// and 5xx only, after 0.5 s, 1 s, ...), parallel (5, at most 64) requests
// per call, cache_ttl_s (86400; 0 turns the cache off), allow_hosts and
// allow_private (below). A new provider is one
// entry in the searchers or readers map.
//
// # What the tools may reach
//
// Only public addresses, by default (package internal/netguard):
// every connection the backend makes, to the providers and through their
// redirects, is checked as it connects, and refused when the address is
// loopback, private, link-local (169.254.169.254, the cloud metadata
// service), unspecified, multicast or otherwise not public, whatever name
// led there. web:visit also refuses, with 4001 naming the host and why,
// a page URL whose host is or resolves to such an address, before the
// reader sees it (numeric forms such as 2130706433 included); a host that
// does not resolve here is passed on, since the reader resolves it on its
// own network. A search_url or reader_url on a literal non-public address
// or localhost fails start-up naming the setting. The environment's HTTP
// proxy is not used. The config opts in:
//
//   - allow_hosts: host names (as the URL names them), IP addresses or
//     CIDR prefixes to allow, e.g. ["127.0.0.1"] for a reader on the same
//     machine, ["reader.internal", "10.0.5.0/24"];
//   - allow_private: true allows every address (tests, local use).
//
// A blocked provider connection fails that query or page like any other
// provider error; a call whose every query or page failed because of it
// answers 4001.
//
// # Cache
//
// Successful provider answers are kept under the backend's DataDir/cache, one
// JSON file per request named by the SHA-256 of the provider name and the
// request (URL and body; never the key), and served until cache_ttl_s old.
// Failures are never cached. Files are written to a temporary name and
// renamed, so concurrent calls never read half an entry.
//
// # Secrets
//
// Keys are sent only to the configured provider. They are never logged
// (Provision logs whether a reader key is set), never in inputs, data or the
// cache, and any provider answer quoted in an error has them replaced by
// "[redacted]".
package web
