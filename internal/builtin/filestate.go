package builtin

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"

	"github.com/keel-dev/keel/internal/tool"
)

func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// checkFresh refuses to change an existing file the agent has not read, or that changed since
// it was read. The content hash decides: a file touched but not changed is still fresh.
func checkFresh(env *tool.Env, t target, data []byte) (tool.Result, bool) {
	var (
		rec tool.FileRead
		ok  bool
	)
	if env.Files != nil {
		rec, ok = env.Files.Lookup(t.real)
	}
	if !ok {
		return tool.Errorf("%s has not been read in this session. Read it first, then write to it.", t.abs), false
	}
	if rec.Hash != hashOf(data) {
		return tool.Errorf("%s changed since it was last read (by the user, a formatter or a command). Read it again before writing to it.", t.abs), false
	}
	return tool.Result{}, true
}

// recordWrite makes what the agent just wrote the file's known content, so it can edit the
// file again without re-reading it. info may be nil (a file an editor holds but has not saved).
func recordWrite(env *tool.Env, t target, data []byte, info fs.FileInfo) {
	if env.Files == nil {
		return
	}
	rec := tool.FileRead{Hash: hashOf(data)}
	if info != nil {
		rec.ModTime, rec.Size = info.ModTime(), info.Size()
	}
	env.Files.Record(t.real, rec)
}
