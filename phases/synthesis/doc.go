// Package synthesis is the built-in "synthesis" workflow: AgentFlow's
// Synthesis module (trajectory sampling, path selection, multi-hop QA
// synthesis) as phase graphs on the engine, exploring with the sandbox's
// tools. Its config is package synthesis's (AgentFlow's keys as they
// are); the selector is synthesis/selector, the QA prompt and checks
// synthesis/qa.
//
// # Runs
//
//	synthesis       init -> load -> spawn -> collect -> report -> done
//	synthesis.lane  next -> next ...        one seed run after another
//	synthesis.seed  start -> step ... -> written -> finish
//
// The synthesis run reads the seeds and the earlier output files, spawns
// lanes, and sums seeds_done.jsonl into summary.json (its result). Each
// lane runs its share of the seeds (dealt round-robin) one after another,
// one synthesis.seed run per seed (its task is the seed's content), so
// seeds start as others finish with no barrier between them.
//
// # The sampler (synthesis.seed)
//
// The tree is the seed run's entries: the root ("0", the seed at depth 0)
// and every node ("0.1", "0.1.0" ...) is a "node" entry appended the step
// its tool call's result comes back, so the tree is persisted as it grows
// and a resumed seed (after a crash or kill -9) goes on from its journal:
// finished calls are not made again, only those in flight at the crash.
// A node of depth d below max_depth gets branching_factor children while
// d < depth_threshold, else one (2+4+8+8+8 = 30 nodes with the defaults).
//
// Each child is proposed by the model (role "explorer", with the node's id
// as operations.MetaBranch and the re-ask's number as MetaAttempt): one user prompt
// with the seed and seed_description, the goal, sampling_tips, the path
// from the root (intent, tool, params, observation cut to
// observation_chars), the actions already taken for the seed (the last
// 40, forbidden) and the tools with their schemas. With proposal_format
// "tools" (default) the tools are offered natively and the model calls
// one (its text is the intent); with "xml" it answers AgentFlow's
// <intent>, <tool_name> and <parameters> tags. Replies are parsed both
// ways either way.
//
// An action's signature is the tool plus its params as canonical JSON
// (keys sorted, compact; strings over 160 characters replaced by length
// and md5), shared by the whole seed. A proposal whose signature is taken
// (by a node, or by another proposal of the same step) is not run: the
// model is asked again with the duplicate named. So are a reply that does
// not parse (params that are not a JSON object are an error, not {}), a
// tool not offered and a failed model call, each with the reason. After
// max_reasks re-asks (default 2) the branch ends: an "ended" entry, and
// the node's Ended ("duplicate", "bad_proposal", "model_error"). A model
// call that failed in a way no retry fixes (operations.Code.Fatal:
// model_error, rate_limited: a refused key, an unknown model) is not
// re-asked: the seed run fails with that code, unwritten (a re-run runs it
// again), its lane starts no further seed, and the synthesis ends failed
// with the code and the model's error once its summary is written.
//
// Each branch runs on its own sandbox session, named after its node and
// forked (operations.SandboxRequest.ForkFrom) from the nearest ancestor's
// session of that resource type: bash and code copy the workspace (files;
// not the shell's cwd or variables), stateless tools (text2sql, rag, doc,
// web) need none, backends that cannot fork start fresh and the
// observation says so. Sibling branches never see each other's actions.
// Sessions live until the seed run ends. After a crash, an in-process
// sandbox has lost its sessions: the branches that go on get fresh ones
// (the sandbox handler notes it in their first observation).
//
// Seed kwargs fill in tool params the model did not set. A failed tool
// call still makes a node, its observation "Error executing TOOL: [CODE]
// MESSAGE" and Failed set (the selector does not count it).
//
// # Selection and QA
//
// When the tree is done, synthesis/selector picks the paths (depth >=
// min_depth; score weighed by selection_weights over depth normalised by
// max_depth, observation richness and tool diversity against the concrete
// tools offered; dedup by shingled Jaccard of the observations above
// path_similarity_threshold; top max_selected_traj). Each selected path
// gets QA attempts (role "synthesizer", synthesis/qa's prompt): a reply
// that does not parse or fails a check (non_empty, no_leakage, verbosity,
// hops >= min_hops, grounded) is retried with the reason, up to
// max_retries attempts; with closed_book on, a pair that passes is also
// asked of closed_book_model without the trajectory (role "closed_book")
// and dropped, with a retry, when that model answers it.
//
// # max_concurrency
//
// The cap on model and tool calls in flight is kept by the workflow's
// shape, not by a semaphore: a seed run sends at most PerSeed calls per
// step (the widest level of a tree, at most max_concurrency; the rest
// wait in its queue), and SeedsInFlight = max_concurrency / PerSeed lanes
// run at once, so together they never have more than max_concurrency in
// flight (8 seeds of 8 at the default shape and max_concurrency 64). The
// engine's per-kind concurrency (configs.Server.Concurrency) still
// applies on top, across all runs.
//
// # Output (output_dir)
//
//   - synthesized_qa.jsonl: QARecord — question, answer, reasoning_steps,
//     trajectory_id, source_id, qa_id, seed, checks_passed, attempts,
//     metadata (seed_description, trajectory_depth, score).
//   - trajectories.jsonl: TrajectoryRecord — each selected path with its
//     score and parts and every node's intent, tool, params, observation.
//   - trees.jsonl: TreeRecord — each seed's whole tree.
//   - seeds_done.jsonl: DoneLine — a finished seed and its counts (nodes,
//     model and tool calls, re-asks, duplicates, tokens, cost, QA kept and
//     rejected by reason, failed checks by name).
//   - summary.json: Summary — the totals, seeds done, skipped and failed.
//
// A seed's lines are written when the seed is finished, one append per
// file (a single write: no torn line after kill -9; an append repeated
// after a crash is skipped by the files handler), then its seeds_done
// line. A re-run with the same output_dir skips the seeds in
// seeds_done.jsonl and first drops, from the other files, the lines of
// seeds that are not there (a seed cut off between its appends) and a
// torn last line; summary.json lists what it repaired. The lines of seeds
// that are not the run's (an earlier run's other seeds file) stay in the
// files, and the summary counts only the run's own seeds.
//
// seed_limits caps each seed's run (the engine's limits): a seed over
// one ends with end_reason limit_*, writes nothing and is listed in the
// summary's failures; a re-run tries it again. limits is the budget of
// the whole synthesis: the workflow declares SharesLimits, so the engine
// does not end the synthesis run on it; Spawn gives each lane an equal
// share (tokens, actions and cost divided, the time limit as a deadline
// from the start), each lane gives each seed run what is left of its share
// (or seed_limits where smaller), and a lane whose share is spent starts no
// more seeds: they are failures with reason budget_spent, summary.json is
// written as usual and carries the limits.
//
// # Caveats
//
//   - Levels grow step by step: a step's calls all finish before the next
//     are sent, so one slow call holds up its seed's level (not other
//     seeds).
//   - The prompts are flock's own wording (AgentFlow's, rewritten); the
//     simulated model (handlers/generate/simulated) answers all three
//     roles offline.
//   - Phases import synthesis, synthesis/selector and synthesis/qa (pure
//     Go, no I/O) besides phases, operations and the standard library.
package synthesis
