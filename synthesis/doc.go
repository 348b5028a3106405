// Package synthesis reads what an AgentFlow-style synthesis starts from:
// its config, its seeds and its tools. The workflow itself is package
// phases/synthesis; the shared data is synthesis/trajectory, the path
// selector synthesis/selector and the QA prompt and checks synthesis/qa.
//
// # Config
//
// Parse takes AgentFlow's SynthesisConfig keys as they are (seeds_file,
// output_dir, available_tools, model_name, max_depth, branching_factor,
// depth_threshold, min_depth, max_selected_traj, path_similarity_threshold,
// number_of_seed, seed_description, sampling_tips, synthesis_tips,
// qa_examples, sandbox_server_url; resource_types, resource_init_configs
// and sandbox_auto_start are accepted and have nothing to do) plus flock's
// own (max_concurrency, seed_limits, max_retries, max_reasks, proposal_format,
// closed_book, selection_weights...; see Config). Defaults are AgentFlow's
// dataclass defaults (max_depth 5, branching_factor 2, depth_threshold 3,
// min_depth 2, max_selected_traj 3, path_similarity_threshold 0.7).
//
// Unknown keys are refused, naming each and the closest known key: AgentFlow
// dropped them silently, so a typo ("max_dept") ran with the default. The
// same rule holds for a config given to flock synthesize and for settings
// sent to POST /start_workflow.
//
// "${VAR}" references are expanded by Expand, which flock synthesize runs
// on the file before Parse (AgentFlow expanded none). api_key is never
// expanded: it must be "${VAR}" and names the variable the model handler
// reads the key from, so no key is stored with a run. Settings sent over
// HTTP must be expanded by the client: Parse refuses a "${" left in a value.
//
// flock's common "limits" is refused in a synthesis config, naming
// seed_limits instead: the engine would cap the synthesis run itself, whose
// usage sums its seeds' only as its lanes end, so it would end at the last
// moment without summary.json. seed_limits caps each seed's run.
//
// # Seeds
//
// ParseSeeds reads JSONL {content, kwargs?}, a JSON list (strings or
// objects) or plain text lines, with AgentFlow's source ids
// ("src_0007_1a2b3c4d"). kwargs fill in the params of every tool call the
// model did not set (AgentFlow let them overwrite the model's).
//
// # Tools
//
// ExpandTools resolves available_tools, "resource:*" wildcards included,
// against the sandbox's tool names; an unknown name refuses the run. The
// sandbox operation's handler runs it when a synthesis starts and writes
// the schemas of the concrete tools into the run's sandbox_tools, which
// the sampler offers the model and the selector counts diversity against.
package synthesis
