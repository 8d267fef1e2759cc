//go:build !unix

package agent

import "io/fs"

// checkCacheDir has no ownership check outside Unix: Windows ACLs are not
// modes (docs/replay.md, "Action cache").
func checkCacheDir(string, fs.FileInfo) error { return nil }
