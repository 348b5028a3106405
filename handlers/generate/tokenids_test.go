package generate

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/operations"
)

// vllmReply answers like vLLM: prompt_token_ids and per-choice token_ids
// only when the request has return_token_ids: true, logprobs (with
// top_logprobs alternatives, bytes included) only when it has logprobs:
// true. The completion is three tokens.
func vllmReply(w http.ResponseWriter, _ int, body map[string]any) {
	resp := textCompletion("Hi there!")
	ch := resp["choices"].([]any)[0].(map[string]any)
	if body["return_token_ids"] == true {
		resp["prompt_token_ids"] = []int{151644, 872, 198, 13048}
		ch["token_ids"] = []int{13048, 1052, 0}
	}
	if body["logprobs"] == true {
		top, _ := body["top_logprobs"].(float64)
		tokens := []string{"Hi", " there", "!"}
		lps := []float64{-0.125, -1.5, -9999.0}
		var content []map[string]any
		for i, tok := range tokens {
			alts := []map[string]any{}
			for k := 0; k < int(top); k++ {
				alts = append(alts, map[string]any{"token": fmt.Sprintf("%s~%d", tok, k), "logprob": lps[i] - float64(k+1), "bytes": []int{104}})
			}
			content = append(content, map[string]any{"token": tok, "logprob": lps[i], "bytes": []byte(tok), "top_logprobs": alts})
		}
		ch["logprobs"] = map[string]any{"content": content}
	}
	writeJSON(w, http.StatusOK, resp)
}

// TestTokenIDsAndLogprobsAsked checks that a model's token_ids, logprobs
// and top_logprobs settings ask a vLLM-style endpoint for them on every
// call, that the result carries them exactly, one-for-one with the
// completion's tokens, and that without the settings (or the request's
// own fields) nothing is asked and nothing comes back.
func TestTokenIDsAndLogprobsAsked(t *testing.T) {
	fs := newFakeServer(t, vllmReply)
	h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})

	plain := mustGen(t, handle(t, h, liveSettings(fs, nil), operations.GenerateRequest{Model: "m", Messages: userMsg("hi")}))
	if b := fs.body(0); b["return_token_ids"] != nil || b["logprobs"] != nil || b["top_logprobs"] != nil {
		t.Fatalf("asked without settings: %v", b)
	}
	if plain.PromptTokenIDs != nil || plain.Outputs[0].TokenIDs != nil || plain.Outputs[0].Logprobs != nil {
		t.Fatalf("token data without asking: %+v", plain)
	}

	asking := liveSettings(fs, func(m *configs.Model) { m.TokenIDs, m.Logprobs, m.TopLogprobs = true, true, 2 })
	got := mustGen(t, handle(t, h, asking, operations.GenerateRequest{Model: "m", Messages: userMsg("hi")}))
	if b := fs.body(1); b["return_token_ids"] != true || b["logprobs"] != true || b["top_logprobs"] != float64(2) {
		t.Fatalf("request body %v", b)
	}
	o := got.Outputs[0]
	if fmt.Sprint(got.PromptTokenIDs) != "[151644 872 198 13048]" || fmt.Sprint(o.TokenIDs) != "[13048 1052 0]" {
		t.Fatalf("token ids %v %v", got.PromptTokenIDs, o.TokenIDs)
	}
	if len(o.Logprobs) != len(o.TokenIDs) {
		t.Fatalf("%d logprobs for %d tokens", len(o.Logprobs), len(o.TokenIDs))
	}
	want := []operations.Logprob{
		{Token: "Hi", Logprob: -0.125, Top: []operations.TopProb{{Token: "Hi~0", Logprob: -1.125}, {Token: "Hi~1", Logprob: -2.125}}},
		{Token: " there", Logprob: -1.5, Top: []operations.TopProb{{Token: " there~0", Logprob: -2.5}, {Token: " there~1", Logprob: -3.5}}},
		{Token: "!", Logprob: -9999, Top: []operations.TopProb{{Token: "!~0", Logprob: -10000}, {Token: "!~1", Logprob: -10001}}},
	}
	if gb, wb := string(mustJSON(o.Logprobs)), string(mustJSON(want)); gb != wb {
		t.Fatalf("logprobs\n got %s\nwant %s", gb, wb)
	}

	// The request's own fields ask too, for a model without the settings;
	// top_logprobs implies logprobs.
	got = mustGen(t, handle(t, h, liveSettings(fs, nil), operations.GenerateRequest{Model: "m", Messages: userMsg("hi"), TokenIDs: true, TopLogprobs: 1}))
	if b := fs.body(2); b["return_token_ids"] != true || b["logprobs"] != true || b["top_logprobs"] != float64(1) {
		t.Fatalf("request body %v", b)
	}
	if len(got.Outputs[0].TokenIDs) != 3 || len(got.Outputs[0].Logprobs) != 3 || len(got.Outputs[0].Logprobs[0].Top) != 1 {
		t.Fatalf("result %+v", got.Outputs[0])
	}
}

// TestExtraFieldsForwarded checks that GenerateRequest.Extra reaches the
// endpoint as top-level fields, as they are, and that a key flock writes
// itself is refused, naming it, without a request.
func TestExtraFieldsForwarded(t *testing.T) {
	fs := newFakeServer(t, vllmReply)
	h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
	s := liveSettings(fs, nil)
	extra := map[string]json.RawMessage{
		"seed": json.RawMessage(`7`), "top_k": json.RawMessage(`20`),
		"chat_template_kwargs": json.RawMessage(`{"enable_thinking":false}`),
	}
	mustGen(t, handle(t, h, s, operations.GenerateRequest{Model: "m", Messages: userMsg("hi"), Extra: extra}))
	b := fs.body(0)
	kw, _ := b["chat_template_kwargs"].(map[string]any)
	if b["seed"] != float64(7) || b["top_k"] != float64(20) || kw["enable_thinking"] != false || b["model"] != "test-model" {
		t.Fatalf("request body %v", b)
	}
	for _, key := range []string{"model", "messages", "stream", "n", "return_token_ids"} {
		r := handle(t, h, s, operations.GenerateRequest{Model: "m", Messages: userMsg("hi"),
			Extra: map[string]json.RawMessage{key: json.RawMessage(`true`)}})
		if !strings.Contains(r.Error, "extra."+key) || operations.Generate.Result(r) != nil {
			t.Fatalf("extra.%s: %+v", key, r)
		}
	}
	r := handle(t, h, s, operations.GenerateRequest{Model: "m", Messages: userMsg("hi"),
		Extra: map[string]json.RawMessage{"seed": json.RawMessage(`{oops`)}})
	if !strings.Contains(r.Error, "extra.seed: not a JSON value") {
		t.Fatalf("bad JSON: %+v", r)
	}
	if n := fs.requests(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	if _, err := requestExtra(&model{}, &operations.GenerateRequest{Extra: map[string]json.RawMessage{"n": json.RawMessage(`2`)}}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("err = %v, want ErrBadRequest", err)
	}
}
