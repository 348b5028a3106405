package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/flockrun/flock/phases"
)

// Version describes this build.
func Version() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("flock %s %s %s/%s phases-api %s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH, phases.APIVersion)
}
