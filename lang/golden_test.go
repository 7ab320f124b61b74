package lang

import "flag"

// update rewrites golden files and golden sections of conformance files
// instead of comparing with them: go test ./lang -update.
var update = flag.Bool("update", false, "rewrite golden files instead of comparing with them")
