package bash

import "errors"

// ErrBadRequest is returned for a request that is not a bash request or
// lacks its params, or for a run without a work directory.
var ErrBadRequest = errors.New("bad bash request")
