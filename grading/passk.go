package grading

import "fmt"

// PassAtK returns the unbiased pass@k estimate for one task with n samples
// of which c are correct (Chen et al. 2021, "Evaluating Large Language
// Models Trained on Code"): the probability that at least one of k samples
// drawn without replacement from the n is correct,
//
//	pass@k = 1 - C(n-c, k) / C(n, k)
//
// computed as 1 - prod_{i=n-c+1..n} (1 - k/i), which needs no binomials and
// stays exact for large n. It requires 0 <= c <= n and 1 <= k <= n;
// anything else is ErrInvalidPassAtK.
func PassAtK(n, c, k int) (float64, error) {
	if n < 1 || c < 0 || c > n || k < 1 || k > n {
		return 0, fmt.Errorf("%w: n=%d c=%d k=%d", ErrInvalidPassAtK, n, c, k)
	}
	if n-c < k {
		return 1, nil
	}
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - float64(k)/float64(i)
	}
	return 1 - prod, nil
}

// TaskCount is the number of samples N of one task and how many, C, were
// correct.
type TaskCount struct {
	N int `json:"n"`
	C int `json:"c"`
}

// MeanPassAtK returns the mean of PassAtK over tasks, each task weighted
// equally. Every task needs at least k samples; the mean of no tasks is 0.
func MeanPassAtK(tasks []TaskCount, k int) (float64, error) {
	if len(tasks) == 0 {
		return 0, nil
	}
	sum := 0.0
	for _, t := range tasks {
		p, err := PassAtK(t.N, t.C, k)
		if err != nil {
			return 0, err
		}
		sum += p
	}
	return sum / float64(len(tasks)), nil
}
