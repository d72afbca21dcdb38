package permission

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
)

// git diff and git grep without revisions read only the files git tracks (the index and the
// work tree), so a rule covering a file git does not track — an untracked .env — does not
// make them ask. keel reads the index itself (running git would run what the repository
// configures). Anything it does not read exactly (a split or sparse index, SHA-256, a damaged
// file) makes it fall back to treating the whole repository as read.

// maxIndexBytes caps the index file keel reads.
const maxIndexBytes = 64 << 20

// trackedPaths returns the paths (relative, slash-separated) the index of the work tree at
// root lists; ok is false when keel cannot read it exactly.
func trackedPaths(root string) (paths []string, ok bool) {
	gitdir := filepath.Join(root, ".git")
	if data, err := os.ReadFile(gitdir); err == nil {
		line, found := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
		if !found {
			return nil, false
		}
		gitdir = strings.TrimSpace(line)
		if !filepath.IsAbs(gitdir) {
			gitdir = filepath.Join(root, gitdir)
		}
	}
	if cfg, err := os.ReadFile(filepath.Join(gitdir, "config")); err == nil && bytes.Contains(bytes.ToLower(cfg), []byte("sha256")) {
		return nil, false
	}
	fi, err := os.Stat(filepath.Join(gitdir, "index"))
	if err != nil || fi.Size() > maxIndexBytes {
		return nil, os.IsNotExist(err) // no index: nothing tracked
	}
	data, err := os.ReadFile(filepath.Join(gitdir, "index"))
	if err != nil {
		return nil, false
	}
	return parseIndex(data)
}

// parseIndex reads a version 2, 3 or 4 index with SHA-1 names.
func parseIndex(data []byte) ([]string, bool) {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, false
	}
	version := binary.BigEndian.Uint32(data[4:8])
	count := binary.BigEndian.Uint32(data[8:12])
	if version < 2 || version > 4 || uint64(count) > uint64(len(data)) {
		return nil, false
	}
	const fixed = 62 // stat data, mode, ids, size, SHA-1, flags
	off := 12
	var (
		paths []string
		prev  string
	)
	for range count {
		if off+fixed > len(data) {
			return nil, false
		}
		mode := binary.BigEndian.Uint32(data[off+24 : off+28])
		flags := binary.BigEndian.Uint16(data[off+60 : off+62])
		start := off
		off += fixed
		if flags&0x4000 != 0 {
			if version < 3 || off+2 > len(data) {
				return nil, false
			}
			off += 2
		}
		if mode&0o170000 == 0o040000 {
			return nil, false // a sparse directory entry: its files are not listed
		}
		var name string
		if version == 4 {
			strip, n := binary.Uvarint(data[off:])
			if n <= 0 || strip > uint64(len(prev)) {
				return nil, false
			}
			off += n
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return nil, false
			}
			name = prev[:len(prev)-int(strip)] + string(data[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return nil, false
			}
			name = string(data[off : off+end])
			// Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
			off = start + (off+end-start+8)/8*8
		}
		paths = append(paths, name)
		prev = name
	}
	// A split index keeps its entries in another file.
	for off+8 <= len(data)-20 {
		sig := string(data[off : off+4])
		size := int(binary.BigEndian.Uint32(data[off+4 : off+8]))
		if sig == "link" || sig == "sdir" {
			return nil, false
		}
		off += 8 + size
	}
	return paths, true
}
