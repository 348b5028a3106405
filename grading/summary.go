package grading

// Sample is the outcome of one rollout: one task × one chain.
type Sample struct {
	TaskID string `json:"task_id"`
	// Score is the metric score in [0, 1]; ignored when Failed.
	Score float64 `json:"score"`
	// Correct decides pass@k and the Correct count; the caller sets it (for example
	// Score >= 1, or a verifier's is_correct). Ignored when Failed.
	Correct bool `json:"correct"`
	// Failed marks a rollout that errored before it could be scored.
	Failed bool `json:"failed"`
	// Signals are named extra scores (for example verifier signals).
	Signals map[string]float64 `json:"signals,omitempty"`
}

// Summary aggregates samples.
type Summary struct {
	Samples int `json:"samples"`
	Tasks   int `json:"tasks"`
	Failed  int `json:"failed"`
	Correct int `json:"correct"`
	// MeanScore is the mean Score over all samples, failed ones counted as
	// 0 (the original excluded them and overstated the score).
	MeanScore float64 `json:"mean_score"`
	// SuccessRate is the fraction of samples that did not fail, whatever
	// their score. There is no "accuracy": the fraction of correct
	// samples is pass@1 when every task has as many samples, and equals
	// MeanScore for a 0/1 metric, so it would only repeat one of them.
	SuccessRate float64 `json:"success_rate"`
	// PassAtK[k-1] is the mean unbiased pass@k over tasks, for k from 1 to
	// the smallest number of samples any task has.
	PassAtK []float64 `json:"pass_at_k"`
	// SignalMeans is, per signal name, the mean over the samples that carry
	// that signal (failed samples included when they carry it).
	SignalMeans map[string]float64 `json:"signal_means,omitempty"`
}

// Summarize aggregates samples. Tasks are told apart by TaskID; a failed
// sample counts as incorrect with score 0 and still counts towards its
// task's number of samples for pass@k.
func Summarize(samples []Sample) Summary {
	s := Summary{Samples: len(samples)}
	if len(samples) == 0 {
		return s
	}
	counts := map[string]*TaskCount{}
	var order []string
	sigSum := map[string]float64{}
	sigN := map[string]int{}
	total := 0.0
	for _, smp := range samples {
		tc := counts[smp.TaskID]
		if tc == nil {
			tc = &TaskCount{}
			counts[smp.TaskID] = tc
			order = append(order, smp.TaskID)
		}
		tc.N++
		for name, v := range smp.Signals {
			sigSum[name] += v
			sigN[name]++
		}
		if smp.Failed {
			s.Failed++
			continue
		}
		total += smp.Score
		if smp.Correct {
			s.Correct++
			tc.C++
		}
	}
	n := float64(len(samples))
	s.Tasks = len(order)
	s.MeanScore = total / n
	s.SuccessRate = float64(len(samples)-s.Failed) / n

	tasks := make([]TaskCount, 0, len(order))
	minN := len(samples)
	for _, id := range order {
		tasks = append(tasks, *counts[id])
		minN = min(minN, counts[id].N)
	}
	for k := 1; k <= minN; k++ {
		p, _ := MeanPassAtK(tasks, k) // k <= every N, so no error
		s.PassAtK = append(s.PassAtK, p)
	}
	if len(sigN) > 0 {
		s.SignalMeans = make(map[string]float64, len(sigN))
		for name, c := range sigN {
			s.SignalMeans[name] = sigSum[name] / float64(c)
		}
	}
	return s
}
