package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
)

// holdModel is an OpenAI-compatible endpoint playing the example agent's
// model (a calculator call for "What is A?", then the tool's output as the
// answer) that holds every second call (the one after the tool) open
// until released. It counts the calls it answered and those dropped
// unanswered (the caller went away), by question and turn, and checks the
// bearer key when key is set.
type holdModel struct {
	key     string
	release chan struct{}

	mu       sync.Mutex
	answered map[string]int // "question|turn" -> answers sent
	held     int            // second calls waiting now
	dropped  int
	badKey   int
}

func newHoldModel(key string) *holdModel {
	return &holdModel{key: key, release: make(chan struct{}), answered: map[string]int{}}
}

func (m *holdModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if m.key != "" && r.Header.Get("Authorization") != "Bearer "+m.key {
		m.mu.Lock()
		m.badKey++
		m.mu.Unlock()
		http.Error(w, `{"error": {"message": "bad key"}}`, http.StatusUnauthorized)
		return
	}
	req, ok := decodeChat(body)
	if !ok || len(req.Messages) < 2 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	question := req.Messages[1].Content
	turn := "1"
	if req.Messages[len(req.Messages)-1].Role != "user" {
		turn = "2"
		m.mu.Lock()
		m.held++
		m.mu.Unlock()
		select {
		case <-m.release:
			m.mu.Lock()
			m.held--
			m.mu.Unlock()
		case <-r.Context().Done():
			m.mu.Lock()
			m.held--
			m.dropped++
			m.mu.Unlock()
			return
		}
	}
	m.mu.Lock()
	m.answered[question+"|"+turn]++
	m.mu.Unlock()
	writeArithReply(w, req, "chatcmpl-"+turn)
}

// snapshot returns the held count and a copy of the answers.
func (m *holdModel) snapshot() (int, map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for k, v := range m.answered {
		out[k] = v
	}
	return m.held, out
}

// killWhenHeld waits until n second calls are held at the model, then
// kills the command's process group with SIGKILL and lets the model
// answer from then on.
func killWhenHeld(t *testing.T, m *holdModel, n int, pid int, out fmt.Stringer) map[string]int {
	t.Helper()
	testkit.WaitWithin(t, 60*time.Second, fmt.Sprintf("%d second calls held at the model", n), func() bool {
		held, _ := m.snapshot()
		return held >= n
	})
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitWithin(t, 30*time.Second, "the held calls to be dropped", func() bool {
		held, _ := m.snapshot()
		return held == 0
	})
	_, before := m.snapshot()
	close(m.release)
	return before
}

// TestRolloutKill9ResumesSameRun kills `flock rollout` (SIGKILL of its
// process group) while four external Python agents each hold their second
// model call open at a fake provider, and runs the same command again: it
// resumes the same rollout run instead of starting another; every call the
// provider answered before the kill is answered from the journal (the
// provider answers each once); each interrupted agent's episode holds its
// two calls, the replayed one first.
func TestRolloutKill9ResumesSameRun(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	py := needPython3(t)
	model := newHoldModel("sk-fake-key-for-tests")
	fake := httptest.NewServer(model)
	defer fake.Close()
	t.Setenv("FLOCK_FAKE_MODEL_KEY", "sk-fake-key-for-tests")

	dir := t.TempDir()
	tasks := map[string]string{"a": "2+3", "b": "4*5", "c": "9-1", "d": "6*7"}
	var bench strings.Builder
	for id, expr := range tasks {
		fmt.Fprintf(&bench, `{"id": %q, "question": "What is %s?", "answer": %q}`+"\n", id, expr, evalSimple(expr))
	}
	cfg := map[string]any{
		"data_path": "bench.jsonl", "output_dir": "out", "num_chains": 1, "max_concurrency": 4, "episodes": true,
		"benchmark_name": "arith",
		"agent": map[string]any{"workflow": "external", "settings": map[string]any{
			"command": []string{py, exampleAgent(t)}, "model": "fake"}},
		"models": map[string]any{"fake": map[string]any{"base_url": fake.URL + "/v1", "api_key_env": "FLOCK_FAKE_MODEL_KEY", "max_retries": 0}},
	}
	raw, _ := json.Marshal(cfg)
	testkit.WriteFiles(t, dir, map[string]string{"bench.jsonl": bench.String(), "rollout.json": string(raw)})
	data := filepath.Join(dir, "data")
	args := []string{"rollout", "--config", filepath.Join(dir, "rollout.json"), "--data", data}

	cmd, out := startFlock(t, args...)
	before := killWhenHeld(t, model, 4, cmd.Process.Pid, out)
	_ = cmd.Wait()
	first := runIDPattern.FindString(out.String())
	if len(before) != 4 {
		t.Fatalf("answered before the kill: %v\n%s", before, out)
	}

	code, stdout, errs := flock(t, args...)
	if code != 0 {
		t.Fatalf("the same command: exit %d\n%s\n%s", code, stdout, errs)
	}
	if !strings.Contains(stdout, "rollout "+first+": resuming the unfinished rollout of this command") || !strings.Contains(stdout, "correct       4 of 4 graded") {
		t.Fatalf("the same command did not resume %s:\n%s\n%s", first, stdout, errs)
	}
	_, after := model.snapshot()
	for q, n := range after {
		if n != 1 {
			t.Errorf("the provider answered %q %d times, want once", q, n)
		}
	}
	if len(after) != 8 {
		t.Errorf("the provider answered %v, want each task's two calls", after)
	}
	// Each episode holds both calls in order: the replayed first call (the
	// question), then the new second one (after the tool's output).
	eps, _ := filepath.Glob(filepath.Join(dir, "out", "episodes_arith_*.jsonl"))
	if len(eps) != 1 {
		t.Fatalf("episodes files %v", eps)
	}
	f, err := os.Open(eps[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n := 0
	for sc.Scan() {
		var ep struct {
			ID           string
			Trajectories []struct {
				Steps []struct {
					ChatCompletions []struct{ Role, Content string } `json:"chat_completions"`
				}
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &ep); err != nil || len(ep.Trajectories) != 1 {
			t.Fatalf("episode %s: %v", sc.Text(), err)
		}
		steps := ep.Trajectories[0].Steps
		if len(steps) != 2 || steps[0].ChatCompletions[len(steps[0].ChatCompletions)-2].Role != "user" ||
			steps[1].ChatCompletions[len(steps[1].ChatCompletions)-2].Role != "tool" {
			t.Fatalf("episode %s: steps %+v", ep.ID, steps)
		}
		n++
	}
	if n != 4 {
		t.Fatalf("%d episodes, want 4", n)
	}
}

// TestExternalRunKill9ResumesSameRun: the same for `flock run --workflow
// external`: killed while its agent's second call is held, the same
// command resumes the run, the first call is answered from the journal
// (the second, in flight at the kill, may be sent again by the resumed
// session before the agent asks again: the provider answers it once).
func TestExternalRunKill9ResumesSameRun(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	py := needPython3(t)
	model := newHoldModel("sk-fake-key-for-tests")
	fake := httptest.NewServer(model)
	defer fake.Close()
	t.Setenv("FLOCK_FAKE_MODEL_KEY", "sk-fake-key-for-tests")
	dir := t.TempDir()
	raw, _ := json.Marshal(map[string]any{"command": []string{py, exampleAgent(t)}, "model": "fake",
		"models": map[string]any{"fake": map[string]any{"base_url": fake.URL + "/v1", "api_key_env": "FLOCK_FAKE_MODEL_KEY", "max_retries": 0}}})
	testkit.WriteFiles(t, dir, map[string]string{"external.json": string(raw)})
	args := []string{"run", "--workflow", "external", "--settings", filepath.Join(dir, "external.json"), "--task", "What is 6*7?", "--data", filepath.Join(dir, "data")}

	cmd, out := startFlock(t, args...)
	killWhenHeld(t, model, 1, cmd.Process.Pid, out)
	_ = cmd.Wait()
	id := runIDPattern.FindString(out.String())
	code, stdout, errs := flock(t, args...)
	if code != 0 || !strings.Contains(stdout, "run "+id+": resuming the unfinished run of this command") ||
		!strings.Contains(stdout, `"answer":"42"`) || !strings.Contains(stdout, `"calls":2`) {
		t.Fatalf("the same command: exit %d\n%s\n%s", code, stdout, errs)
	}
	if _, answered := model.snapshot(); answered["What is 6*7?|1"] != 1 || answered["What is 6*7?|2"] != 1 {
		t.Fatalf("the provider answered %v, want each call once", answered)
	}
}
