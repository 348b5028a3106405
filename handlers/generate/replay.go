package generate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// Replay (run setting replay_from): a generate of the run is answered
// from the journal of the recorded run when that run journaled a
// generate with the same request (same model name, messages, tools and
// parameters: the request key), and by the live model otherwise. The
// k-th generate of the run with a given key takes the k-th recorded reply
// with that key (the last one once they are used up), so a rerun of the
// same phase code replays the recorded run step for step. Hits cost no
// tokens; the result says "replay": "hit" or "miss" and the run's usage
// counts them (replay_hits, replay_misses).

// maxReplaySources bounds the recorded runs whose index is kept.
const maxReplaySources = 16

// requestKey is the replay key of a generate request of the run whose
// work directory is workDir and id runID: the SHA-256 of its JSON
// encoding (meta excluded: labels are not the prompt) with the work
// directory and the run id replaced by placeholders, since prompts name
// them (triframe's "Your working directory is ...") and they differ
// between the recorded run and its rerun.
func requestKey(g *operations.GenerateRequest, workDir, runID string) (string, error) {
	b, err := json.Marshal(g)
	if err != nil {
		return "", err
	}
	for _, r := range []struct{ from, to string }{{workDir, "$WORKDIR"}, {runID, "$RUN"}} {
		if r.from == "" {
			continue
		}
		esc, _ := json.Marshal(r.from)
		b = bytes.ReplaceAll(b, esc[1:len(esc)-1], []byte(r.to))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

// replays holds the indexes of recorded runs and, per replaying run, how
// many replies of each key it has taken.
type replays struct {
	mu      sync.Mutex
	sources map[string]map[string][]*operations.GenerateResult // by recorded run, by key; guarded by mu
	used    map[string]map[string]int                          // by run, by key; guarded by mu
}

func newReplays() *replays {
	return &replays{sources: map[string]map[string][]*operations.GenerateResult{}, used: map[string]map[string]int{}}
}

// scanOps calls fn with every op of run id, in step order.
func scanOps(ctx context.Context, j handlers.Journal, id string, fn func(handlers.JournalOp) error) error {
	for op, err := range j.Ops(ctx, id) {
		if err != nil {
			return err
		}
		if err := fn(op); err != nil {
			return err
		}
	}
	return nil
}

// reply answers g from the recorded run src, if it holds the request:
// ok false is a miss.
func (rp *replays) reply(ctx context.Context, j handlers.Journal, src, runID, workDir, opID string, g *operations.GenerateRequest) (*operations.GenerateResult, bool, error) {
	if j == nil {
		return nil, false, fmt.Errorf("replay_from: this server keeps no journal to replay from")
	}
	key, err := requestKey(g, workDir, runID)
	if err != nil {
		return nil, false, err
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	idx, ok := rp.sources[src]
	if !ok {
		idx = map[string][]*operations.GenerateResult{}
		head, err := j.Run(ctx, src)
		if err != nil {
			return nil, false, fmt.Errorf("replay_from: run %s: %w", src, err)
		}
		srcDir := head.WorkDir
		err = scanOps(ctx, j, src, func(op handlers.JournalOp) error {
			req, res := generateOf(op)
			if res == nil || op.Result.Error != "" {
				return nil
			}
			k, err := requestKey(req, srcDir, src)
			if err != nil {
				return err
			}
			idx[k] = append(idx[k], res)
			return nil
		})
		if err != nil {
			return nil, false, fmt.Errorf("replay_from: read the journal of run %s: %w", src, err)
		}
		if len(rp.sources) >= maxReplaySources {
			for k := range rp.sources {
				delete(rp.sources, k)
				break
			}
		}
		rp.sources[src] = idx
	}
	used, ok := rp.used[runID]
	if !ok {
		// First generate of this run in this process: count the hits its
		// journal holds already (a resumed run, a fork).
		used = map[string]int{}
		err := scanOps(ctx, j, runID, func(op handlers.JournalOp) error {
			req, res := generateOf(op)
			if op.ID == opID || res == nil || res.Replay != operations.ReplayHit {
				return nil
			}
			k, err := requestKey(req, workDir, runID)
			if err != nil {
				return err
			}
			used[k]++
			return nil
		})
		if err != nil {
			return nil, false, fmt.Errorf("replay_from: read the run's own journal: %w", err)
		}
		rp.used[runID] = used
	}
	list := idx[key]
	if len(list) == 0 {
		return nil, false, nil
	}
	i := min(used[key], len(list)-1)
	used[key]++
	out := *list[i]
	out.Outputs = append([]operations.Output(nil), out.Outputs...)
	out.Replay = operations.ReplayHit
	return &out, true, nil
}

// closeRun forgets what run id took.
func (rp *replays) closeRun(id string) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	delete(rp.used, id)
}

// checkReplaySource checks at start that replay_from names a run.
func (h *Handler) checkReplaySource(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	r := h.opts.Journal
	if r == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := r.Run(ctx, id); err != nil {
		return fmt.Errorf("replay_from: run %q: %w", id, err)
	}
	return nil
}

// generateOf returns the request and result of op when it is a generate
// op that is done with a result's data, else nils.
func generateOf(op handlers.JournalOp) (*operations.GenerateRequest, *operations.GenerateResult) {
	req := operations.Generate.Params(op.Request)
	if !op.Done || req == nil || op.Result == nil {
		return nil, nil
	}
	res := operations.Generate.Result(*op.Result)
	if res == nil {
		return nil, nil
	}
	return req, res
}
