// Package grading scores answers and aggregates rollouts: answer metrics,
// pass@k, the episode and trajectory types exported as training data, group
// advantages, segment reward assignment and verifier output. Everything here
// is a pure function of its arguments: no I/O, clock or randomness.
//
// # Normalisation
//
// Text metrics compare answers after Normalize, the SQuAD rule: lowercase,
// delete punctuation (ASCII punctuation and symbols, Unicode punctuation),
// drop the words "a", "an" and "the", and collapse whitespace. Two
// departures keep numbers apart that SQuAD merges: a '.' between digits
// stays ("3.5" is not "35") and a minus sign before a digit at the start of
// a word stays ("-5" is not "5"). Commas inside numbers go, so "1,234"
// equals "1234".
//
// # Metrics
//
// Each metric maps (prediction, reference) to a score in [0, 1] and is
// registered by name (Lookup, Names, Score):
//
//   - exact_match: 1 if the normalised answers are equal.
//   - f1: SQuAD token F1 over normalised words (multiset overlap); when
//     either side is empty, 1 if both are and 0 otherwise.
//   - contains_answer: 1 if the normalised reference occurs in the
//     normalised prediction as whole words ("1" is not in "10"); an empty
//     reference is contained only in an empty prediction.
//   - numeric_match: the main number of the prediction (the first number
//     of the last \boxed{}, "####" or "answer is/answer:/final answer" span,
//     else the last number) against that of the reference, within 1e-6
//     absolute or 1% relative to the reference (DefaultTolerance).
//     Thousands separators, scientific notation, signs, fractions, mixed
//     numbers, LaTeX \frac and percentages (which also match as fractions)
//     are understood; see ExtractNumbers. A reference without a number is
//     ErrNotNumeric.
//   - similarity: normalised Levenshtein similarity of the normalised
//     strings, 1 - distance/longer length, in runes.
//   - llm_judgement: not a function of the two strings. Judge.Messages
//     builds the prompt and ParseJudgeReply reads the verdict, a JSON object
//     {"correct": bool, "reasoning": string}, bare, fenced or inside text.
//     A reply without a clear verdict is ErrInvalidJudgeReply, never a
//     guess.
//
// With several acceptable references, Score takes the best score over them.
// "f1_score", the original evaluator's name, is accepted for "f1".
//
// # Aggregation
//
// PassAtK is the unbiased estimator of Chen et al. (2021),
// 1 - C(n-c, k)/C(n, k), computed as a product. Summarize turns samples
// (task × chain) into a Summary: mean score with failed samples counted as 0,
// success rate (samples that did not fail), accuracy, pass@k for k = 1 up to
// the smallest number of samples of any task, averaged over tasks, and the
// mean of each signal over the samples that carry it.
//
// # Episodes and advantages
//
// Episode, Trajectory and Step are rLLM's training-data shape with JSON tags,
// versioned by EpisodeSchemaVersion (DecodeEpisode migrates and validates).
// GroupEpisodes builds rLLM TrajectoryGroups (trajectories inline, metadata
// aligned) for the caller's chosen episodes, steps or not.
// GroupTrajectories groups trajectories by "task_id:trajectory_name";
// GRPOAdvantages and RLOOAdvantages compute advantages within a group, with
// a group of one or of equal rewards getting 0. GRPO divides by the sample
// standard deviation (n-1) plus epsilon, as torch.std does in verl and rLLM.
//
// A trajectory whose context was folded has several segments (Step.Segment).
// SegmentRewards splits the trajectory reward across them: last_only (the
// default), broadcast, uniform, or geometric (weights gamma^(n-1-k),
// normalised to sum to the reward, so earlier segments get less).
//
// # Verifiers
//
// A per-task verifier writes {"reward": x, "is_correct": b, "signals": {...}};
// ParseVerifierOutput reads it, also accepting rLLM's {"rewards": {...}} and a
// bare number, and rejects anything else with ErrInvalidVerifierOutput.
//
// # Caveats
//
//   - Normalisation does no Unicode normalisation (NFKC) or accent folding:
//     "café" and "cafe" differ.
//   - numeric_match's default 1% relative tolerance accepts 101 for 100;
//     benchmarks with exact integer answers should use Tolerance{Abs: 1e-6}.
//     The main-number rule does not understand negation ("the answer is not
//     5, it is 7" yields 5) or numbers written as words.
//   - similarity is surface similarity, not meaning; use llm_judgement for
//     semantic equivalence.
//   - Fixing the original's misfires changes scores: failed tasks now lower
//     the mean, articles and punctuation are ignored, and contains_answer no
//     longer matches inside words.
package grading
