// Package gateway is flock's model gateway (rLLM's AgentFlow gateway): an
// OpenAI-compatible endpoint per session (chat completions and the
// Responses API), through which
// an external agent program — any language, any OpenAI client — calls the
// models declared in flock's settings, while flock journals every call,
// applies its limits and keeps the provider keys.
//
// # Routes
//
//	POST /gateway/{session}/v1/chat/completions   streaming (SSE) and not
//	POST /gateway/{session}/v1/responses          OpenAI's Responses API, streaming (SSE) and not
//	GET  /gateway/{session}/v1/models             the session's models
//
// flock serve mounts them on its API (server.MountGateway) and announces
// its address (SetBaseURL); without an announced address (flock run, or a
// run resumed before the server listens) the gateway serves them on a
// private 127.0.0.1 listener of its own (BaseURL). An agent gets
// OPENAI_BASE_URL=<root>/gateway/<session>/v1 and OPENAI_API_KEY=<the
// session's token>.
//
// Requests take OpenAI's fields model, messages (string or text-part
// content; developer is system), tools, tool_choice, n, temperature,
// max_tokens / max_completion_tokens, stop, reasoning_effort, logprobs,
// top_logprobs, stream and stream_options.include_usage, and vLLM's
// return_token_ids. Every other field (seed, top_p, top_k, user,
// response_format, chat_template_kwargs, any vendor extension) is
// forwarded to the endpoint as it was sent (operations.GenerateRequest
// Extra), journaled with the call and part of its replay key. Refused
// with 400 naming the field, because what they ask for could not be
// journaled or replayed as the agent would see it: functions and
// function_call (the legacy API; use tools), modalities and audio (only
// text replies are journaled), and any stream_options key but
// include_usage (the upstream call is not streamed). A request may name
// any model of the run's settings; any other name gets the session's
// default model (the gateway pins the model, as rLLM's does).
//
// Answers are OpenAI's chat.completion (or chat.completion.chunk events
// ending with [DONE]) plus, when the endpoint returned them, token_ids per
// choice and prompt_token_ids (vLLM's names; streamed, the prompt's in the
// first chunk and the completion's with the content); logprobs only when
// asked. A model whose settings ask for token data on every call
// (models.NAME.token_ids, logprobs, top_logprobs) journals it whatever
// the agent asked.
// The completion id is "chatcmpl-" + the trace id, which the header
// X-Flock-Trace-Id and the "flock" object also carry. A client may send
// X-Flock-Step-Id with its own step id. A streamed answer is the journaled
// reply cut into chunks (role, reasoning, content, each tool call with its
// index, finish, usage): the upstream call itself is not streamed, since
// the reply must be journaled before the agent sees it.
//
// # The Responses API
//
// POST .../v1/responses takes OpenAI's Responses API requests (the
// default of the OpenAI Agents SDK): instructions (a system message),
// input as a string or a list of items — messages (user, system,
// developer, assistant; text parts), reasoning items (their summary is
// the next assistant message's reasoning), function_call and
// function_call_output items (an assistant's tool calls and the tool
// messages answering them) —, function tools, tool_choice,
// temperature, max_output_tokens, reasoning.effort, top_logprobs and the
// include "message.output_text.logprobs", text.format (json_object and
// json_schema become response_format) and previous_response_id: the
// session keeps each response's conversation (its input and output,
// without its instructions, as OpenAI does), and a request naming one
// continues it; an unknown id is 400. Every response of a session can be
// continued, whatever its store; store, metadata, truncation and the
// prompt-cache fields are accepted and ignored; background, conversation
// and prompt are refused; other fields are forwarded as for chat. Input
// images and files, item references and tools other than functions are
// refused with 400 naming the item.
//
// Each request becomes the same generate as the chat completion that
// says the same (the conversation as chat messages), journaled, replayed
// and recorded in the episode the same way: how the agent asked does not
// change what flock journals. The answer is a response object (id
// "resp_" + the trace id, which episodes also match) whose output is a
// reasoning item (when the model reasoned), a message with output_text
// (and its logprobs when asked), and one function_call item per tool
// call (call_id the tool call's id); status "incomplete" when the model
// stopped at its token cap. Streamed, it is the Responses API's events,
// each with its sequence_number: response.created, response.in_progress,
// per item response.output_item.added, its content
// (response.reasoning_summary_part.added/.done with
// response.reasoning_summary_text.delta/.done;
// response.content_part.added/.done with
// response.output_text.delta/.done; or
// response.function_call_arguments.delta/.done) and
// response.output_item.done, then response.completed (or
// response.incomplete) with the whole response. As for chat, the
// stream is cut from the journaled reply.
//
// Errors are OpenAI-shaped {"error": {"message", "type", "param", "code"}}:
// 400 naming the bad field, 401 for a missing or wrong token (also for an
// unknown or ended session), 403 for a request from a web page (an Origin
// header), 415 for a body that is not JSON, 429 when the run reached one
// of its limits (code run_limit_exceeded, naming limits.tokens, .cost or
// .seconds) or the call's generate failed with the failure code
// rate_limited (a rate limit it could not outwait: operations.Code), 502
// when the model failed otherwise. The status comes from the code, never
// from the wording of the error.
//
// # Journaling: a session is a run
//
// A session belongs to an external op (package handlers/external). That
// op starts a child run of workflow "external.session" (package
// phases/externalagent) whose id is derived from the op's and which is the
// session's id. The session run has one phase, wait, which asks for one
// gateway_wait op per step. That op
//
//   - hands the answers of the previous step to their callers (Deliver):
//     they are on disk by then, since the commit of the phase that asked
//     for this op carried them;
//   - blocks until calls are queued (Take);
//   - answers them, in parallel, each as a generate (Meta gateway_call =
//     the call's id) run by the generate handler, with its retries and
//     the per-model rate and concurrency limits;
//   - returns each call's id, request and answer as its result.
//
// So each call is journaled once, request (the prompt) and answer
// together, in the gateway_wait op's result: with its reply, usage, cost,
// token ids and logprobs, counted in the run's usage, visible in GET
// /runs/{id}/ops and the event stream. That result completes its step
// and rides in the commit of the next phase's output: one commit per
// batch of calls, and a lone agent's call costs exactly one. Phases stay
// pure: the calls reach them as the op's result. A reply reaches its
// caller only after that commit, so an agent never sees an answer a crash
// could lose. Calls that arrive while a batch is answered wait for the
// next one; calls that arrive together are answered in parallel in one
// batch. operations.Generates lists the calls an op holds, for the
// journal's readers (replay, the scripted model's cursor).
//
// The session run's limits are the external run's, less what it has used
// when the op starts; the executor ends it when they are spent (after its
// last step's answers are delivered) and every later call is refused with
// 429 naming the limit. The external op's result carries the session
// runs' tokens and cost into the external run's usage.
//
// # Replay after a crash
//
// After a crash the external op runs its program again. Its session run
// resumed on its own; the op opens the session again with the answers its
// journal (and that of any earlier session run of the same op that had
// ended) holds. A call whose request equals a recorded one (the k-th
// identical request of this attempt gets the k-th recorded answer) is
// answered from the journal without a model call, marked replayed: no
// token is paid twice for a finished call. Calls that were being answered
// at the crash were never journaled: the program sends them again and
// they are answered anew (at-least-once, like every op). A gateway_wait
// interrupted by a pause or a stop puts its calls back in the queue, and
// the next one answers them.
//
// # Traces and episodes
//
// Trace lists a session's calls in call order; Enrich turns them and the
// agent's output (ParseAgentOutput: an answer, a trajectory or an
// rLLM-shaped episode) into an rLLM Episode: one Step per call with
// chat_completions, model_response, reasoning, prompt and completion token
// ids and logprobs. Agent steps are matched to calls by id — the trace id,
// the completion id, the response id or X-Flock-Step-Id — never by position (rLLM's
// positional matching breaks on parallel or retried calls); a trajectory
// without steps takes the calls no step claimed.
//
// # Security
//
// A session's token is 24 random bytes (prefix "flk-gw-") held in memory
// only: never in settings, the journal, events or logs; it is compared in
// constant time and dies with the session. The agent never sees a provider
// key: the program's environment is an allowlist that holds none of the
// server's variables but a small base set (isolation.Environ), and the
// program cannot read the server's own environment or memory
// (isolation.ProtectSelf). The
// server's bearer token does not open the gateway (nor is it needed
// there). On flock serve the guard's Host, Origin and Content-Type rules
// apply to these routes as to every route; the gateway itself also
// refuses any request with an Origin header, and its private listener
// answers loopback Host names only.
//
// # Caveats
//
//   - Calls of one batch are delivered together, once the slowest of
//     them is answered and the batch is journaled.
//   - The prompt is journaled in the gateway_wait op's result, which the
//     op codec does not cut into content-addressed chunks as it does
//     generate requests: each call stores its whole prompt once.
//   - Gateway calls are not generate ops: the server's concurrency cap of
//     the generate kind (configs.Server.Concurrency) does not count them;
//     the per-model limits do.
package gateway
