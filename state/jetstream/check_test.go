package jetstream

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// TestCheckNamesALostStream: Check passes on an open store and, once any
// of its streams was deleted under it, fails naming that stream.
func TestCheckNamesALostStream(t *testing.T) {
	servers := []*server.Server{startServer(t)}
	for _, name := range []string{"%s_RUNS_2", "%s_INDEX", "KV_%s_HEADS_1", "KV_%s_LEASES", "OBJ_%s_BLOBS"} {
		t.Run(name, func(t *testing.T) {
			s := openStore(t, servers, Options{})
			ctx := context.Background()
			if err := s.Check(ctx); err != nil {
				t.Fatalf("open store: %v", err)
			}
			stream := fmt.Sprintf(name, strings.ToUpper(s.opts.Prefix))
			if err := s.js.DeleteStream(ctx, stream); err != nil {
				t.Fatal(err)
			}
			err := s.Check(ctx)
			if err == nil || !strings.Contains(err.Error(), stream) {
				t.Fatalf("after deleting %s: %v", stream, err)
			}
		})
	}
}
