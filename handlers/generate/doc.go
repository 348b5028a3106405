// Package generate runs the generate operation: chat completions from an
// OpenAI-compatible endpoint, from a built-in deterministic policy
// (simulated) or from a file of canned replies (scripted).
//
// # Models
//
// A request's model name is looked up in the run's settings (models map).
// A declared model uses its provider; base_url defaults to $OPENAI_BASE_URL,
// then https://api.openai.com/v1; api_key_env defaults to OPENAI_API_KEY.
// An undeclared "simulated" is the simulated provider; any other undeclared
// name is an openai model with those environment defaults. In simulated mode
// (Options.Mode) every openai model is answered by the simulated provider;
// scripted models keep their script. Handler.CheckSettings reports a live
// model whose key variable is unset, naming the variable (never a key).
//
// # OpenAI-compatible endpoints
//
// Requests go through go-openai's CreateChatCompletion with one cached
// client per (base URL, key variable). Messages, tools (parameters passed
// through as raw JSON Schema), tool_choice ("auto", "none", "required" or a
// tool name), n, temperature, stop, reasoning_effort, logprobs and
// top_logprobs map one to one. max_tokens is sent as max_completion_tokens
// to api.openai.com and for reasoning-model names (o1, o3, o4, gpt-5...), as
// max_tokens elsewhere (vLLM, Ollama, llama.cpp). Message.Reasoning is not
// sent back. Replies keep content (a refusal when content is empty), tool
// calls with their raw argument text (even invalid JSON), finish_reason,
// reasoning (reasoning_content, or vLLM/OpenRouter "reasoning"), logprobs and
// vLLM token_ids (and the prompt's prompt_token_ids). When the endpoint reports no usage it is estimated
// (chars/4). Cost is prompt*input_price/1e6 + completion*output_price/1e6.
//
// # The Responses API
//
// A model declared with "api": "responses" is called with OpenAI's
// Responses API (POST {base_url}/responses, go-openai's CreateResponse)
// instead of chat completions, for an endpoint that has it: the same
// request, with the messages as input items (an assistant's tool calls as
// function_call items, tool messages as function_call_output, images as
// input_image parts), inline function tools, a reasoning effort with
// summary "auto" (so the reasoning is journaled), logprobs through
// include "message.output_text.logprobs" and top_logprobs, stop sequences
// and extra fields as they are, and store false. The answer's message
// text, reasoning summaries (or reasoning text), function calls, output
// text logprobs and usage become the generate's one output; an answer
// incomplete for max_output_tokens finishes with "length". The API has no
// n: n > 1 is made of parallel calls, as for endpoints that ignore n. The
// retries, limits and errors are those of chat completions. The journal
// holds the same generate either way.
//
// # Token ids and logprobs
//
// vLLM and SGLang return the prompt's and the completion's token ids only
// when a request asks (return_token_ids: true), and logprobs only with
// logprobs / top_logprobs. A model declared with "token_ids": true,
// "logprobs": true or "top_logprobs": K asks for them on every call through
// it (the run's generates and, through the generate op, an external
// agent's gateway calls); a request's own TokenIDs, Logprobs and
// TopLogprobs ask for that call. The result keeps them as returned:
// GenerateResult.PromptTokenIDs, Output.TokenIDs and Output.Logprobs, one
// logprob per completion token.
//
// GenerateRequest.Extra carries request fields flock does not interpret
// (seed, top_p, top_k, response_format, chat_template_kwargs, ...): they
// are added to the request body as they are. A key flock writes itself
// (operations.ReservedGenerateFields) fails the op, naming it
// (ErrBadRequest).
//
// # Images
//
// A message's Images (a screenshot a sandbox tool returned, attached by
// the agents; its text already holds a "[PNG image WxH, N KB]"
// placeholder) are sent only to a model declared with "vision": true: a
// user message's images become image_url content parts (data: URLs) after
// its text; the images of tool messages go in one user message ("The image
// returned by vm:screenshot (call ID):" and the parts) after the last tool
// message answering that assistant turn, since the wire takes images in
// user messages only and nothing may come between tool calls and their
// answers. Only the latest 3 images of a request are sent; older ones
// leave a note. A model without vision gets "[1 image not shown: this
// model takes text only]" appended to the message instead. An image is
// estimated at 1100 prompt tokens when the endpoint reports no usage.
//
// When n > 1 and the endpoint returns fewer choices, the missing ones are
// requested as parallel single calls; outputs and usage are merged. If one
// of them fails (after its retries) the whole generate fails.
//
// # Retries, limits, secrets
//
// Each HTTP attempt is bounded by the model's timeout_s (through the
// context) and retried, up to max_retries times, on what may get better:
// 408, 429, 5xx, the per-request timeout and a connection reset or a body
// cut short, waiting the endpoint's Retry-After / retry-after-ms when
// given, else a jittered exponential backoff (Options.BackoffBase doubling
// up to BackoffMax). What cannot get better fails at once, after one
// request: a host that does not resolve, a refused connection, a TLS
// failure, 401 and 403 (the key), 404 (the model or the path), 400 and the
// other 4xx, a 429 saying the quota is spent, requests go-openai rejects
// client-side and malformed 2xx replies (invalid JSON, HTML, no choices).
// The final error is one line naming the model, the endpoint host, the
// cause and the attempt count (`model "gpt-4o-mini" at api.openai.com:
// HTTP 401 (the endpoint refused the API key in $OPENAI_API_KEY) (after 1
// attempt, not retried): Incorrect API key provided`; a key written in the
// config file of flock rollout or flock synthesize is "the API key given in
// the config file"). The op's context ending stops everything at once.
//
// # Failure codes
//
// A failed result carries operations.Result.Code, set here where the
// failure is known: model_error for what cannot get better (above, a
// missing key, an unknown provider, an endpoint's Retry-After beyond the
// bound below), rate_limited for a rate limit the run cannot outwait (a
// 429 whose Retry-After is beyond the bound, 429s through every retry, a
// spent quota, a requests_per_minute token too far away), timeout and
// unavailable for transient failures that lasted through the retries.
// Agents end their run on the first two (operations.Code.Fatal) and go on
// after the others.
//
// # Bounded, visible waits
//
// Every wait of a generate is bounded by the model's max_retry_wait_s
// (default 60 s) and by the run's remaining time (limits.seconds minus the
// seconds used, read from Env.Usage when the op starts; no bound when the
// run has no time limit):
//
//   - A backoff is capped at max_retry_wait_s.
//   - A Retry-After longer than the bound fails the op at once (not
//     retried), with an error naming the model, the wait asked and the
//     setting that forbids it ("the endpoint asked to wait 3600 s, more
//     than models.gpt-4o-mini.max_retry_wait_s (60 s) allows"). Waiting
//     less than the endpoint asked would only draw another 429, and
//     waiting longer is what the setting forbids; raise max_retry_wait_s
//     to honour longer waits.
//   - A backoff that would end after the run's time limit fails the op at
//     once too, naming limits.seconds, rather than sleeping until the run
//     is stopped.
//   - A requests_per_minute token further away than the bound fails the op
//     at once (the token is not booked), naming the limit and the bound.
//
// These errors unwrap to ErrWaitTooLong. While an op waits for a retry (or
// for a rate-limit token, when that wait is a second or more) it calls
// Env.Waiting with the reason and the wait's end, for example "rate
// limited by gpt-4o-mini (HTTP 429), retrying", "gpt-4o-mini failed (HTTP
// 503), retrying" or "queued by the server's
// models.gpt-4o-mini.requests_per_minute (500) for gpt-4o-mini, sending",
// and ends the wait with a zero time, so the run head shows why and until
// when the run is held. Waits for a max_concurrency slot are bounded by the
// op's context only (their end is not known in advance).
//
// # Rate and concurrency limits
//
// Limits that protect a shared endpoint belong to the operator:
// Options.ModelLimits (the server settings' models map, keyed by model name
// or base URL) creates one limiter per entry, shared by all runs, that no
// run can raise. A key matches a generate's model by the name sent to the
// endpoint (models.NAME.name, default the map key; the run's own alias
// does not count) first, counted per base URL; failing that, a key equal
// to the model's base_url (trailing slashes ignored) applies, as one budget
// shared by every model at that URL. A model that matches no key has no
// shared limit.
//
// A run's own requests_per_minute and max_concurrency (models.NAME in its
// settings) create a limiter private to that run and that model entry,
// nested inside the shared one: a call takes the run's token and slot
// first, then the shared ones. So a run asking for 5 when the server says
// 2 still gets 2, and a run asking for 1 gets 1 for its own calls without
// slowing any other run. Run limiters are dropped by CloseRun.
//
// Every attempt (retries and n-emulation calls included) takes one token
// of each requests_per_minute bucket (burst: one second's worth, at least
// 1) and holds one slot of each max_concurrency while in flight.
//
// API keys are read from the environment at call time and never appear in
// results, errors or logs: error and log text is scrubbed of the key.
//
// # Simulated provider
//
// A deterministic policy with no network, in package
// handlers/generate/simulated: the reply depends only on the run's task
// (handlers.Env.Task), the role metadata its phase set in Meta
// (operations.MetaRole and the other labels of operations/meta.go) and the
// request's structure, never on time, randomness or the prompt's wording.
// Usage is estimated at chars/4. See that package for what each role
// answers.
//
// # Replay
//
// A run whose settings name a recorded run in replay_from takes each
// generate's reply from that run's journal when it holds a done generate
// with the same request key: the SHA-256 of the request's JSON (model
// name, messages, tools, parameters; meta left out) with each run's work
// directory and id replaced by placeholders, since prompts name them. The
// k-th request of the run with a key takes the k-th recorded reply with
// it (the last once they are used up); the count is rebuilt from the
// run's own journal after a restart. A hit is the recorded result with
// "replay": "hit" and charges no tokens or cost; a request the recorded
// run never made goes to the model as usual and is marked "miss". Usage
// counts replay_hits and replay_misses (operations.RunUsage). The
// recorded run must exist when the run starts.
//
// # Scripted provider
//
// Replies come from a JSONL file (models.NAME.script). The server opens it
// through Options.Open like any file a run reads: a relative path is
// relative to the run's work directory (checked at its first generate), an
// absolute one must lie beneath a read root (checked at run start); see
// package files. Blank lines and lines starting with # are skipped; unknown
// keys are an error. A bad line is reported by file and line number and
// what is wrong, never by quoting it. Each line is
//
//	{"content": "...", "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}],
//	 "reasoning": "...", "finish_reason": "...", "usage": {"prompt_tokens": 10, "completion_tokens": 5},
//	 "error": "...", "code": "model_error", "match": "substring", "n": 1}
//
// all fields optional. Arguments may be an object (sent compacted) or a
// string (sent as is, even invalid JSON). A line with "error" makes the
// generate fail with that message, and "code" gives the failure its code
// (model_error, rate_limited, timeout, unavailable), so a script can play
// an endpoint that fails for good or for a while. Lines are consumed in order per (run ID,
// model name): each output takes the first unused line that has no "match"
// or whose match occurs in the last user or tool message, which lets a test
// script parallel calls. A line with "n": k stands for k identical outputs
// of an n > 1 request. When no line fits, the generate fails with
// "scripted model X: script exhausted after N replies". Cursors live in
// memory; when Options.Journal is set (the server sets it), a run's cursor
// is rebuilt after a restart by replaying the generate requests its journal
// holds as done, so a resumed run continues its script instead of starting
// over. Without a journal, CloseRun or a changed file resets a cursor.
package generate
