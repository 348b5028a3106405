// Package external runs the external and gateway_wait operations: an
// agent program of the user's (a command, e.g. `python3 agent.py`) run
// against a model gateway session, and the session run's wait for the
// program's model calls (see package gateway for the protocol, and
// package phases/externalagent for the workflows).
//
// # external
//
// The op starts (or, after a crash, finds) the session run — a child of
// its run, workflow "external.session", id derived from the op's id plus
// "/gateway" — opens the gateway session under that id with a fresh
// token and the answers its journal already holds, and runs the program:
//
//   - in the run's work directory, under a reaper (package
//     internal/reaper), so that a timeout, a cancel or flock's death
//     (kill -9 included) ends it and everything it started;
//   - isolated as the run's bash is (package isolation: the operator's
//     policy and the run's settings.isolation; under bwrap by default,
//     the server's data directory hidden but for the work directory),
//     always with the network, on which the gateway is;
//   - with an environment built from an allowlist (isolation.Environ:
//     PATH, HOME, the locale, ...), the settings' env, the variables the
//     settings' pass_env names (only those the operator lists in the
//     server setting pass_env: ValidateRun and the op refuse others,
//     never saying whether they are set), then OPENAI_BASE_URL
//     (<root>/gateway/<session>/v1), OPENAI_API_KEY (the session's
//     token), OPENAI_MODEL (the default model), FLOCK_RUN_ID and
//     FLOCK_TASK_FILE; nothing else of the server's environment reaches
//     it;
//   - with the task on stdin and in task_file (default task.txt);
//   - bounded by timeout_s, and by the run's time limit through the op's
//     context.
//
// When it exits, the session closes: calls still queued are refused, and
// the session run ends once its last answers are delivered. The op waits
// for neither the program's descendants (the reaper kills them when the
// program exits, so none holds its output open) nor longer than its calls
// in flight take: a call the program left behind keeps its generate, so
// that an answer paid for is journaled (and replayed should the op run
// again), and that generate is bounded by the model's timeout_s and
// max_retries. So is the op after timeout_s kills the program (e2e
// TestExternalAgentLeavesAGrandchild, TestExternalAgentExitsWithACallInFlight). The answer is
// stdout's last JSON line (a string, {"answer"}, a trajectory or an
// rLLM-shaped episode; gateway.ParseAgentOutput), else answer_file's
// content, else stdout's last non-empty line. The episode is built from
// that and the session's trace (gateway.Enrich) and written to
// episode_file (default episode.json) and, when set, trajectory_file (the
// trajectory, or the episode when the agent named several). The result
// (operations.ExternalResult) carries the answer, exit code, stderr's
// tail, the number of calls and of replayed calls, the session runs, the
// tokens and cost they spent (added to the run's usage: each call is paid
// once, in the session run that made it) and the episode. A non-zero
// exit, a timeout or a session ended by a run limit make it an error
// result. A non-zero exit after a model call of the session failed in a
// way no retry fixes (model_error, rate_limited: a refused key, an unknown
// model) names that failure and carries its code, so the run ends with it
// as react's does and a rollout stops.
//
// # Resume
//
// A crash interrupts the program (the reaper kills it with flock). On
// restart the external op is dispatched again: its session run has
// resumed on its own, and the op reopens the session with the answers
// journaled so far, so the program runs again and every call it repeats
// is answered from the journal without a model call. Should the session
// run have ended before the op's result was journaled, the op starts a
// new one ("/gateway-1", ...) and replays from both.
//
// # gateway_wait
//
// Waits (after a restart, first for the external op to reopen the
// session), hands the answers of the step named in the request to their
// callers (kept in memory since that step's op answered them, or read
// from the journal after a restart), then takes the calls queued since
// and answers them in parallel through the server's generate handler
// (handlers.Deps.Ops), returning each call's request and answer; or
// returns closed once the program has ended. Its result is the calls'
// only journal record (one commit per batch; see package gateway).
//
// # Caveats
//
//   - Without bwrap (the operator's isolation none, or auto where bwrap
//     cannot run) the program runs as the server's user and can read the
//     data directory; flock's own memory and environment stay out of
//     reach (isolation.ProtectSelf).
//   - An interrupted program starts over; only its model calls are
//     replayed, not its other side effects (files it wrote stay).
package external
