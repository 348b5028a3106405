package grading

import "errors"

// Scoring.
var (
	// ErrUnknownMetric is returned by Lookup and Score for a name that is not
	// one of Names() or a documented alias.
	ErrUnknownMetric = errors.New("unknown metric")
	// ErrNeedsJudge is returned by Lookup and Score for "llm_judgement": that
	// metric needs a model call, so callers build the prompt with Judge and
	// parse the reply with ParseJudgeReply.
	ErrNeedsJudge = errors.New("metric needs an llm judge")
	// ErrNoReference is returned by Score when the reference list is empty.
	ErrNoReference = errors.New("no reference answer")
	// ErrNotNumeric is returned by numeric_match when the reference contains
	// no number, so the metric cannot apply.
	ErrNotNumeric = errors.New("reference is not numeric")
	// ErrInvalidJudgeReply is returned by ParseJudgeReply when the reply holds
	// no verdict object, a malformed one, or verdicts that disagree.
	ErrInvalidJudgeReply = errors.New("invalid judge reply")
)

// Aggregation and training data.
var (
	// ErrInvalidPassAtK is returned for pass@k arguments outside
	// 0 <= c <= n, 1 <= k <= n.
	ErrInvalidPassAtK = errors.New("invalid pass@k arguments")
	// ErrUnknownEstimator is returned for an advantage estimator other than
	// "grpo" or "rloo".
	ErrUnknownEstimator = errors.New("unknown advantage estimator")
	// ErrUnknownRewardMode is returned for a segment reward mode other than
	// last_only, broadcast, uniform or geometric.
	ErrUnknownRewardMode = errors.New("unknown segment reward mode")
	// ErrInvalidGamma is returned for a geometric discount outside (0, 1].
	ErrInvalidGamma = errors.New("invalid geometric discount")
	// ErrInvalidEpisode is returned by Episode.Validate and DecodeEpisode for
	// an episode that breaks the data model's invariants.
	ErrInvalidEpisode = errors.New("invalid episode")
	// ErrUnsupportedSchema is returned by DecodeEpisode for an episode written
	// by a newer schema version than this package knows.
	ErrUnsupportedSchema = errors.New("unsupported episode schema version")
	// ErrInvalidVerifierOutput is returned by ParseVerifierOutput for output
	// that is empty, not JSON, or lacks a finite reward.
	ErrInvalidVerifierOutput = errors.New("invalid verifier output")
)
