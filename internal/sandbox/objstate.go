package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/gitexec"
)

// What keel keeps below its directory (sandbox/objects) to hide masked files' blobs from git
// inside the sandbox ([Sandbox.HideObjects]): copies of packs without them, the stand-ins of
// the blobs, and which blobs it hid in each object store. Read-only inside, as all of keel's
// directory is; each copy and store of stand-ins made whole under a temporary name, then
// renamed into place, so that another keel process never binds one half made.

// standIns is an object store below state holding, for each hidden blob, an empty loose
// object no one can read, and an alternates file naming it after the stores objects names
// already. Bound over objects/info/alternates, it has git find each hidden blob — a tree
// holding one is written, so commits work — and fail to read it.
func standIns(state, objects string, hidden []string) (string, error) {
	sum := sha256.Sum256([]byte(objects + "\x00" + strings.Join(hidden, ",")))
	dir := filepath.Join(state, "alt-"+hex.EncodeToString(sum[:])[:40])
	var b strings.Builder
	if old, err := os.ReadFile(filepath.Join(objects, "info", "alternates")); err == nil {
		for line := range strings.SplitSeq(string(old), "\n") {
			switch {
			case line == "" || strings.HasPrefix(line, "#"):
			case strings.HasPrefix(line, `"`):
				return "", errors.New("its objects/info/alternates names a store in quotes, which keel does not read")
			case filepath.IsAbs(line):
				b.WriteString(line + "\n")
			default:
				b.WriteString(filepath.Join(objects, line) + "\n")
			}
		}
	}
	b.WriteString(dir + "\n")
	file := filepath.Join(dir, "alternates")
	if cur, err := os.ReadFile(file); err == nil && string(cur) == b.String() {
		now := time.Now()
		_ = os.Chtimes(dir, now, now) // in use: kept by pruneObjectState
		return file, nil
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return "", fmt.Errorf("make keel's directory for the filtered packs: %w", err)
	}
	tmp, err := os.MkdirTemp(state, ".tmp-")
	if err != nil {
		return "", fmt.Errorf("make keel's directory for the filtered packs: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, id := range hidden {
		if err := os.MkdirAll(filepath.Join(tmp, id[:2]), 0o755); err != nil {
			return "", fmt.Errorf("make the stand-ins of hidden blobs: %w", err)
		}
		if err := os.WriteFile(filepath.Join(tmp, id[:2], id[2:]), nil, 0); err != nil {
			return "", fmt.Errorf("make the stand-ins of hidden blobs: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "alternates"), []byte(b.String()), 0o444); err != nil {
		return "", fmt.Errorf("make the stand-ins of hidden blobs: %w", err)
	}
	os.RemoveAll(dir) // another set of alternates before: made again whole
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("keep the stand-ins of hidden blobs: %w", err)
	}
	return file, nil
}

// rememberHidden is ids with the blobs hidden before in the object store objects, by this
// keel or another, which it keeps below state: a command can make a blob unreachable (its
// ref deleted, its reflog expired, history made shallow), and git would then not find it,
// but it stays in the packs, and so hidden.
func rememberHidden(state, objects string, ids []string) ([]string, error) {
	sum := sha256.Sum256([]byte(objects))
	file := filepath.Join(state, "hidden-"+hex.EncodeToString(sum[:])[:40])
	all := map[string]bool{}
	for _, id := range ids {
		all[id] = true
	}
	before, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the blobs hidden before: %w", err)
	}
	for id := range strings.FieldsSeq(string(before)) {
		if _, err := hex.DecodeString(id); err == nil && (len(id) == 40 || len(id) == 64) && (len(ids) == 0 || len(id) == len(ids[0])) {
			all[id] = true
		}
	}
	out := slices.Sorted(maps.Keys(all))
	if len(out) == 0 {
		return nil, nil
	}
	if text := strings.Join(out, "\n") + "\n"; text != string(before) {
		if err := os.MkdirAll(state, 0o700); err != nil {
			return nil, fmt.Errorf("make keel's directory for the filtered packs: %w", err)
		}
		if err := writeAtomic(file, []byte(text)); err != nil {
			return nil, fmt.Errorf("keep the blobs hidden: %w", err)
		}
	}
	return out, nil
}

// writeAtomic writes data to path under another name first, then renames it into place.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// packsHolding are the pack indexes in objects/pack that hold one of ids, each with those it
// holds; found marks the ids held by any.
func packsHolding(objects string, ids []string) (map[string][]string, map[string]bool, error) {
	idxs, _ := filepath.Glob(filepath.Join(objects, "pack", "pack-*.idx"))
	packs, found := map[string][]string{}, map[string]bool{}
	for _, idx := range idxs {
		names, err := readPackIndex(idx, len(ids[0])/2)
		if err != nil {
			return nil, nil, fmt.Errorf("keel could not read %s: %v", idx, err)
		}
		for _, id := range ids {
			if _, ok := slices.BinarySearch(names, id); ok {
				packs[idx] = append(packs[idx], id)
				found[id] = true
			}
		}
	}
	return packs, found, nil
}

// readPackIndex reads the object names of a version 2 pack index, in hex and sorted (as the
// index keeps them), for objects named with n bytes.
func readPackIndex(path string, n int) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	const head = 8 + 256*4
	if len(b) < head || !bytes.Equal(b[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return nil, errors.New("not a version 2 pack index")
	}
	count := int(b[head-4])<<24 | int(b[head-3])<<16 | int(b[head-2])<<8 | int(b[head-1])
	if count < 0 || len(b) < head+count*n {
		return nil, errors.New("a pack index shorter than its object count")
	}
	names := make([]string, count)
	for i := range names {
		names[i] = hex.EncodeToString(b[head+i*n : head+(i+1)*n])
	}
	return names, nil
}

// filteredPack is the copy of the pack of idx without the blobs hidden, below state: made by
// git pack-objects from the pack's other objects, unless a copy of the same pack without the
// same blobs is there already. It returns the copy's index.
func filteredPack(ctx context.Context, state, gitDir, tree, idx string, hidden []string) (string, error) {
	n := len(hidden[0]) / 2
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\x00%s", readTrailer(idx, 2*n), strings.Join(hidden, ","))
	name := filepath.Join(state, "pack-"+hex.EncodeToString(sum.Sum(nil))[:40])
	if _, err := os.Stat(name + ".idx"); err == nil {
		now := time.Now()
		_ = os.Chtimes(name+".idx", now, now) // in use: kept by pruneObjectState
		return name + ".idx", nil
	}
	names, err := readPackIndex(idx, n)
	if err != nil {
		return "", fmt.Errorf("keel could not read %s: %v", idx, err)
	}
	var in bytes.Buffer
	for _, id := range names {
		if _, ok := slices.BinarySearch(hidden, id); !ok {
			in.WriteString(id + "\n")
		}
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return "", fmt.Errorf("make keel's directory for the filtered packs: %w", err)
	}
	pruneObjectState(state)
	tmp, err := os.MkdirTemp(state, ".tmp-")
	if err != nil {
		return "", fmt.Errorf("make keel's directory for the filtered packs: %w", err)
	}
	defer os.RemoveAll(tmp)
	cmd, err := gitexec.Runner{}.Command(ctx, tree, "--git-dir="+gitDir, "pack-objects", "-q", "--delta-base-offset", filepath.Join(tmp, "p"))
	if err != nil {
		return "", err
	}
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git pack-objects could not copy %s without the blobs: %v: %s", idx, err, strings.TrimSpace(stderr.String()))
	}
	made := filepath.Join(tmp, "p-"+strings.TrimSpace(string(out)))
	kept, err := readPackIndex(made+".idx", n)
	if err != nil {
		return "", fmt.Errorf("read the filtered copy of %s: %v", idx, err)
	}
	for _, id := range hidden {
		if _, ok := slices.BinarySearch(kept, id); ok {
			return "", fmt.Errorf("the filtered copy of %s still holds %s", idx, id)
		}
	}
	// The index last: its presence says the copy is whole.
	if err := os.Rename(made+".pack", name+".pack"); err != nil {
		return "", fmt.Errorf("keep the filtered copy of %s: %w", idx, err)
	}
	if err := os.Rename(made+".idx", name+".idx"); err != nil {
		return "", fmt.Errorf("keep the filtered copy of %s: %w", idx, err)
	}
	return name + ".idx", nil
}

// pruneObjectState removes the pack copies below state that no command used for
// objStateKeep (their index's time, which each use renews), and scraps of copies never made
// whole.
func pruneObjectState(state string) {
	entries, err := os.ReadDir(state)
	if err != nil {
		return
	}
	old := time.Now().Add(-objStateKeep)
	for _, e := range entries {
		p := filepath.Join(state, e.Name())
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(old) {
			continue
		}
		switch {
		case strings.HasPrefix(e.Name(), ".tmp-"), strings.HasPrefix(e.Name(), "alt-"):
			os.RemoveAll(p)
		case strings.HasSuffix(e.Name(), ".idx"):
			os.Remove(p)
			os.Remove(strings.TrimSuffix(p, ".idx") + ".pack")
		}
	}
}
