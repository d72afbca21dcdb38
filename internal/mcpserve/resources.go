package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of the served workspace: files listed, and bytes one read returns.
const (
	maxListed   = 1000
	maxReadSize = 10 << 20
)

// skipDirs are never listed: version control and dependency trees.
var skipDirs = []string{".git", "node_modules", "vendor", ".cache"}

// addResources serves the files under root: the first maxListed (hidden and dependency
// directories skipped) are listed, and any file under root can be read through the
// file:// template; nothing outside root, symlinks included.
func addResources(srv *mcp.Server, root string, logger *slog.Logger) {
	read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return readFile(root, req.Params.URI)
	}
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || slices.Contains(skipDirs, d.Name())) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if n++; n > maxListed {
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(root, path)
		srv.AddResource(&mcp.Resource{URI: fileURI(path), Name: filepath.ToSlash(rel), MIMEType: mimeType(path)}, read)
		return nil
	})
	if err != nil {
		logger.Warn("mcp serve: list workspace files", "err", err)
	}
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: fileURI(root) + "/{+path}", Name: "workspace file",
		Description: "A file of the workspace, by its path relative to " + root}, read)
}

func fileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

func mimeType(path string) string {
	if t := mime.TypeByExtension(filepath.Ext(path)); t != "" {
		return t
	}
	return "text/plain"
}

// readFile reads the file a file:// URI names, if it lies under root.
func readFile(root, uri string) (*mcp.ReadResourceResult, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	path, err := filepath.EvalSymlinks(filepath.FromSlash(u.Path))
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	if rel, err := filepath.Rel(realRoot, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if fi.Size() > maxReadSize {
		return nil, fmt.Errorf("%s is %d bytes; at most %d are served", uri, fi.Size(), maxReadSize)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", uri, err)
	}
	rc := &mcp.ResourceContents{URI: uri, MIMEType: mimeType(path)}
	if utf8.Valid(data) {
		rc.Text = string(data)
	} else {
		rc.Blob = data
		if rc.MIMEType == "text/plain" {
			rc.MIMEType = "application/octet-stream"
		}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc}}, nil
}
