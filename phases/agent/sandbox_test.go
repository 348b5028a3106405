package agent

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/flockrun/flock/operations"
)

func TestSandboxToolNames(t *testing.T) {
	for name, want := range map[string]string{"text2sql:execute": "text2sql-execute", "mcp:fs.read_file": "mcp-fs_read_file", "bash:run": "bash-run"} {
		if got := ModelName(name); got != want {
			t.Errorf("ModelName(%q) = %q, want %q", name, got, want)
		}
	}
	m, err := SandboxNames([]string{"bash", "text2sql:execute", "rag:search", "submit"})
	if err != nil || len(m) != 2 || m["text2sql-execute"] != "text2sql:execute" || m["rag-search"] != "rag:search" {
		t.Fatalf("SandboxNames = %v, %v", m, err)
	}
	if _, err := SandboxNames([]string{"mcp:a.b", "mcp:a_b"}); err == nil || !strings.Contains(err.Error(), "mcp-a_b") {
		t.Fatalf("colliding names: %v, want an error naming the model name", err)
	}
	if IsSandboxTool(":x") || IsSandboxTool("x:") || IsSandboxTool("bash") || !IsSandboxTool("a:b") {
		t.Fatal("IsSandboxTool")
	}
	if _, err := SandboxCall("rag:search", "[1]", 0); err == nil {
		t.Fatal("SandboxCall accepted an array")
	}
	req, err := SandboxCall("rag:search", ` {"query": "x"} `, 5)
	if err != nil || string(operations.Sandbox.Params(req).Params) != `{"query":"x"}` || operations.Sandbox.Params(req).TimeoutS != 5 {
		t.Fatalf("SandboxCall = %+v, %v", operations.Sandbox.Params(req), err)
	}
}

// TestResultImages: a sandbox result carrying a base64 PNG (vm:screenshot)
// is rendered with a placeholder in place of the image and yields the
// image for the message; other results, and failures, carry none.
func TestResultImages(t *testing.T) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(buf.Bytes())
	data, _ := json.Marshal(map[string]any{"image": b64, "size": []int{4, 3}, "session": "vm_w_001", "accessibility_tree": []any{}})
	shot := operations.Result{Kind: operations.KindSandbox, Data: &operations.SandboxResult{Code: 0, Message: "success", Data: data,
		Meta: json.RawMessage(`{"tool":"vm:screenshot"}`)}}
	text := FormatResult(shot, 1000)
	want := `{"accessibility_tree":[],"image":"[PNG image 4x3, 1 KB]","session":"vm_w_001","size":[4,3]}`
	if text != want {
		t.Fatalf("FormatResult = %s, want %s", text, want)
	}
	imgs := ResultImages(shot)
	if len(imgs) != 1 || imgs[0].Data != b64 || imgs[0].MediaType != "image/png" || imgs[0].Source != "vm:screenshot" ||
		!strings.HasPrefix(imgs[0].DataURL(), "data:image/png;base64,iVBORw0KGgo") {
		t.Fatalf("ResultImages = %+v", imgs)
	}
	for _, r := range []operations.Result{
		{Kind: operations.KindSandbox, Data: &operations.SandboxResult{Code: 0, Data: json.RawMessage(`{"image":"not a png"}`)}},
		{Kind: operations.KindSandbox, Data: &operations.SandboxResult{Code: 4000, Data: data}},
		{Kind: operations.KindSandbox, Data: &operations.SandboxResult{Code: 0, Data: json.RawMessage(`[1,2]`)}},
		{Kind: operations.KindBash, Data: &operations.BashResult{Stdout: b64}},
	} {
		if imgs := ResultImages(r); imgs != nil {
			t.Errorf("ResultImages(%+v) = %+v, want none", r, imgs)
		}
	}
	if got := FormatResult(operations.Result{Kind: operations.KindSandbox, Data: &operations.SandboxResult{Code: 0, Data: json.RawMessage(`{"image":"not a png"}`)}}, 100); got != `{"image":"not a png"}` {
		t.Fatalf("non-PNG data changed: %s", got)
	}
}
