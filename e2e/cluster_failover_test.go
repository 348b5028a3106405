package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
)

// tickWorkflow is a workflow file whose runs take settings.steps steps of
// one operation each, of kind settings.kind: a bash command or a python
// snippet that append "begin" and "end" lines (the process ids of the
// shell or interpreter and its ancestors, among them the flock node that
// started it; the time in ns; the run's tag and step) to settings.marks
// around a short sleep, or a generate of settings.model whose prompt names the tag and
// step.
const tickWorkflow = `name: tick
description: one bash, python or generate operation per step, marking where and when it began
settings:
  kind: bash
  steps: 100
  marks: ""
  tag: ""
  model: m
  sleep: 0.2
  parallel: 1
start: tick
phases:
  - name: tick
    ops:
      - kind: bash
        if: settings.kind == "bash"
        for_each: 1..int(settings.parallel)
        params:
          command: >-
            chain() { p=$$; c=; while [ "$p" -gt 1 ]; do c="$c,$p"; p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2); done; echo "$c" | cut -c2-; };
            printf 'begin %s %s %s %s\n' "$(chain)" "$(date +%s%N)" '${settings.tag}' ${step}.${item} >> '${settings.marks}';
            sleep ${settings.sleep};
            printf 'end %s %s %s %s\n' "$(chain)" "$(date +%s%N)" '${settings.tag}' ${step}.${item} >> '${settings.marks}'
      - kind: python
        if: settings.kind == "python"
        for_each: 1..int(settings.parallel)
        params:
          code: |-
            import os, time
            def chain():
                p, out = os.getpid(), []
                while p > 1:
                    out.append(str(p))
                    with open('/proc/%d/stat' % p) as f:
                        p = int(f.read().rsplit(')', 1)[1].split()[1])
                return ','.join(out)
            def mark(what):
                with open('${settings.marks}', 'a') as f:
                    f.write('%s %s %d ${settings.tag} ${step}.${item}\n' % (what, chain(), time.time_ns()))
            mark('begin')
            time.sleep(${settings.sleep})
            mark('end')
      - kind: generate
        if: settings.kind == "generate"
        for_each: 1..int(settings.parallel)
        params:
          model: ${settings.model}
          messages:
            - {role: user, content: "tick ${settings.tag} ${step}.${item}"}
    transitions:
      - if: step >= settings.steps
        end: {reason: done}
      - next: tick
`

// opMark is one operation's begin or end, as a marker line or a model
// call recorded it.
type opMark struct {
	what string // "begin" or "end"
	node string // the node's name
	at   time.Time
	tag  string
	step string // "STEP.N": the step and the op's number in it
}

// nodeModel is an OpenAI-compatible endpoint that records each call with
// the node that made it (each node's OPENAI_BASE_URL is <URL>/<node>/v1)
// and answers after a short while.
type nodeModel struct {
	*httptest.Server
	mu    sync.Mutex
	calls []opMark // guarded by mu
}

var tickPrompt = regexp.MustCompile(`tick (\S+) (\S+)`)

func newNodeModel(t testing.TB) *nodeModel {
	t.Helper()
	m := &nodeModel{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		node, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		var body struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mk := opMark{what: "begin", node: node, at: at}
		if len(body.Messages) > 0 {
			if sm := tickPrompt.FindStringSubmatch(body.Messages[0].Content); sm != nil {
				mk.tag, mk.step = sm[1], sm[2]
			}
		}
		m.mu.Lock()
		m.calls = append(m.calls, mk)
		m.mu.Unlock()
		time.Sleep(100 * time.Millisecond) // a model takes its time
		answer(w, 200, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop",
			"message":{"role":"assistant","content":"tock"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)
	}))
	t.Cleanup(m.Close)
	return m
}

// marks returns the recorded model calls.
func (m *nodeModel) marks() []opMark {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]opMark(nil), m.calls...)
}

// readMarks parses a marker file of the tick workflow, naming the node
// whose process started each operation.
func (c *tickCluster) readMarks(path string) []opMark {
	t := c.t
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []opMark
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			t.Fatalf("%s: bad marker line %q", path, sc.Text())
		}
		ns, err := strconv.ParseInt(fs[2], 10, 64)
		if err != nil {
			t.Fatalf("%s: bad time in %q", path, sc.Text())
		}
		mk := opMark{what: fs[0], at: time.Unix(0, ns), tag: fs[3], step: fs[4]}
		c.mu.Lock()
		for _, pid := range strings.Split(fs[1], ",") {
			if n, ok := c.pids[pid]; ok {
				mk.node = n
			}
		}
		c.mu.Unlock()
		if mk.node == "" {
			t.Fatalf("%s: no process of %s is a node", path, fs[1])
		}
		out = append(out, mk)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// tickCluster is three `flock serve --cluster` nodes with the tick
// workflow, their model calls going to one recording endpoint.
type tickCluster struct {
	t      testing.TB
	nodes  []clusterNode
	routes string
	procs  []*proc
	model  *nodeModel
	marks  string
	nats   string // --nats URLs; empty: embedded NATS

	mu   sync.Mutex
	pids map[string]string // node name by process id (of every start); guarded by mu
}

// startTickCluster starts three nodes with embedded NATS and waits until
// every one passes /health.
func startTickCluster(t testing.TB) *tickCluster {
	t.Helper()
	return startTickClusterOn(t, "")
}

// startTickClusterOn starts three nodes, with embedded NATS if natsURLs
// is empty, else as clients of the NATS cluster there (--nats), and waits
// until every one passes /health.
func startTickClusterOn(t testing.TB, natsURLs string) *tickCluster {
	t.Helper()
	c := &tickCluster{t: t, model: newNodeModel(t), marks: t.TempDir(), pids: map[string]string{}, nats: natsURLs}
	wf := t.TempDir()
	if err := os.WriteFile(filepath.Join(wf, "tick.yaml"), []byte(tickWorkflow), 0o644); err != nil {
		t.Fatal(err)
	}
	// The three operations of a step all start at once, and then wait
	// for their turn inside their handler: the run's shell session, its
	// Python interpreter, the model's one call at a time. Woken from a
	// pause, a node starts the next one as soon as the one before it
	// ends, with no commit of the run in between: only the lease check
	// (handlers.Env.MayStart) stops it. (With one operation of each kind
	// at a time per node, they waited in the executor, where the fenced
	// commit of the result before them stopped the run first, and the
	// test passed, 4 times in 5, without the check.) The commands run
	// unisolated: a marker names the node by the chain of its command's
	// ancestor pids, which bwrap's own PID namespace would hide.
	conf := filepath.Join(t.TempDir(), "server.json") // not among the workflows
	if err := os.WriteFile(conf, []byte(`{"concurrency": {"bash": 3, "python": 3, "generate": 3}, "models": {"m": {"max_concurrency": 1}}, "isolation": "none"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c.nodes, c.routes = newClusterNodes(t, 3)
	for i := range c.nodes {
		n := &c.nodes[i]
		n.extra = []string{"--workflows", wf, "--config", conf, "--log-level", "debug"}
		n.env = []string{"OPENAI_BASE_URL=" + c.model.URL + "/" + n.name + "/v1", "OPENAI_API_KEY=e2e-model-key"}
	}
	c.procs = make([]*proc, len(c.nodes))
	t.Cleanup(c.keepLogs)
	for i := range c.nodes {
		c.startNode(i)
	}
	waitAllHealthy(t, c.procs, 60*time.Second)
	return c
}

// keepLogs writes every node's output into $FLOCK_E2E_LOGS/TEST-NODE.log
// if the test failed and that variable names a directory.
func (c *tickCluster) keepLogs() {
	dir := os.Getenv("FLOCK_E2E_LOGS")
	if dir == "" || !c.t.Failed() {
		return
	}
	name := strings.NewReplacer("/", "_").Replace(c.t.Name())
	for i, p := range c.procs {
		if p == nil {
			continue
		}
		path := filepath.Join(dir, name+"-"+c.nodes[i].name+".log")
		if err := os.WriteFile(path, p.out.Bytes(), 0o644); err != nil {
			c.t.Log(err)
		}
		c.t.Logf("%s's output: %s", c.nodes[i].name, path)
	}
}

// startNode starts (or restarts) node i's process.
func (c *tickCluster) startNode(i int) *proc {
	n := c.nodes[i]
	if c.nats != "" {
		n.args = natsArgs(n, c.nats)
	}
	p := startClusterProc(c.t, n, c.routes)
	c.mu.Lock()
	c.pids[strconv.Itoa(p.cmd.Process.Pid)] = c.nodes[i].name
	c.mu.Unlock()
	c.procs[i] = p
	return p
}

// start starts a tick run of kind with tag on node i: steps steps of
// parallel operations each.
func (c *tickCluster) start(i int, kind, tag string, steps, parallel int) string {
	return c.procs[i].start("tick", map[string]any{"kind": kind, "tag": tag, "steps": steps, "parallel": parallel,
		"marks": filepath.Join(c.marks, tag)})
}

// opMarks returns every recorded begin and end of run tag's operations.
func (c *tickCluster) opMarks(tag string) []opMark {
	out := c.readMarks(filepath.Join(c.marks, tag))
	for _, mk := range c.model.marks() {
		if mk.tag == tag {
			out = append(out, mk)
		}
	}
	return out
}

// driver returns the node that drives run id, read from node i.
func (c *tickCluster) driver(i int, id string) string {
	return c.procs[i].run(id).Driver
}

// TestClusterPausedNodeStartsNothing stops a node that drives bash,
// python and generate runs with SIGSTOP for longer than AckWait, until
// the other nodes have taken every one of its runs over, then continues
// it with SIGCONT: no operation of a run it lost begins on it after that
// (marker lines and model calls record which node began each operation,
// and when), its log says that it let the runs go, and no node's log
// claims that a run "resumes on the next start" (issue 28.1, 28.6). The
// runs' heads name the node that drives them, and a survivor's answer
// changes from the paused node to another.
func TestClusterPausedNodeStartsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	c := startTickCluster(t)
	// Runs of every kind until one node drives one of each.
	kinds := []string{"bash", "python", "generate"}
	var ids, tags []string
	victim := ""
	held := map[string]map[string]string{} // node -> kind -> run id
	for k := 0; victim == "" && k < 30; k++ {
		kind := kinds[k%3]
		tag := fmt.Sprintf("%s%d", kind, k)
		id := c.start(k%3, kind, tag, 400, 3)
		ids, tags = append(ids, id), append(tags, tag)
		var d string
		testkit.WaitFor(t, "run "+id+" driven", func() bool {
			d = c.driver(0, id)
			return d != ""
		})
		if held[d] == nil {
			held[d] = map[string]string{}
		}
		if _, ok := held[d][kind]; !ok {
			held[d][kind] = id
		}
		if len(held[d]) == len(kinds) {
			victim = d
		}
	}
	if victim == "" {
		t.Fatalf("no node drives a run of each kind: %v", held)
	}
	vi, si := -1, -1
	for i, n := range c.nodes {
		if n.name == victim {
			vi = i
		} else if si < 0 {
			si = i
		}
	}
	moved := held[victim]
	// Every run of the victim has begun operations there.
	testkit.CheckFor(t, 30*time.Second, func() error {
		for kind, id := range moved {
			n := 0
			for _, mk := range c.opMarks(tagOf(ids, tags, id)) {
				if mk.node == victim && mk.what == "begin" {
					n++
				}
			}
			if n < 2 {
				return fmt.Errorf("%s run %s: %d operations begun on %s", kind, id, n, victim)
			}
		}
		return nil
	})
	p := c.procs[vi]
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	t.Logf("SIGSTOP %s, which drives %v", victim, moved)
	testkit.CheckFor(t, 90*time.Second, func() error {
		for _, id := range moved {
			h := c.procs[si].run(id)
			if h.Driver == victim || h.Driver == "" {
				return fmt.Errorf("run %s still driven by %q", id, h.Driver)
			}
			// The head says since when: the node took the run up after
			// the victim stopped.
			if h.DrivenSince == nil || h.DrivenSince.Before(stopped) {
				return fmt.Errorf("run %s driven by %s since %v, before the stop at %v", id, h.Driver, h.DrivenSince, stopped)
			}
		}
		return nil
	})
	// An operation whose process the node started just before SIGSTOP
	// writes its begin marker while the node is stopped (its processes
	// are not): what the revived node starts, it starts after SIGCONT.
	continued := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGCONT %s after %v: its runs moved", victim, continued.Sub(stopped).Round(time.Millisecond))
	// Let the moved runs make progress elsewhere for a while (the paused
	// node acted within milliseconds of SIGCONT when it did).
	progress := map[string]uint64{}
	for _, id := range moved {
		progress[id] = c.procs[si].run(id).Step
	}
	testkit.CheckFor(t, 60*time.Second, func() error {
		for _, id := range moved {
			if n := c.procs[si].run(id).Step; n < progress[id]+5 {
				return fmt.Errorf("run %s at step %d, want %d", id, n, progress[id]+5)
			}
		}
		return nil
	})
	for kind, id := range moved {
		tag := tagOf(ids, tags, id)
		// The revived node may take a run up again, by the book (it
		// let the run go and claimed it anew, its take-up written in
		// the head): what it begins from then on is its own.
		var retaken time.Time
		if h := c.procs[si].run(id); h.Driver == victim && h.DrivenSince != nil && h.DrivenSince.After(continued) {
			retaken = *h.DrivenSince
			t.Logf("%s run %s taken up by %s again %v after SIGCONT", kind, id, victim, retaken.Sub(continued).Round(time.Millisecond))
		}
		for _, mk := range c.opMarks(tag) {
			if mk.node == victim && mk.what == "begin" && mk.at.After(continued) && (retaken.IsZero() || mk.at.Before(retaken)) {
				t.Errorf("%s run %s (moved off %s): op %s began on %s %v after SIGCONT",
					kind, id, victim, mk.step, victim, mk.at.Sub(continued).Round(time.Millisecond))
			}
		}
	}
	for _, id := range ids {
		if h := c.procs[si].run(id); h.Status == "running" {
			if _, err := c.procs[si].c.Cancel(t.Context(), id); err != nil {
				t.Logf("cancel %s: %v", id, err)
			}
		}
	}
	for i, q := range c.procs {
		if out := q.out.String(); strings.Contains(out, "resumes on the next start") {
			t.Errorf("%s's log claims a run resumes on the next start:\n%s", c.nodes[i].name, out)
		}
	}
	if out := p.out.String(); !strings.Contains(out, "lets it go") {
		t.Errorf("%s's log does not say it let its runs go:\n%s", victim, out)
	}
}

// tagOf returns the tag of run id.
func tagOf(ids, tags []string, id string) string {
	for i := range ids {
		if ids[i] == id {
			return tags[i]
		}
	}
	return ""
}
