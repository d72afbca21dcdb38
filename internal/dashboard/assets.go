package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

// The page, its script and styles, and uPlot (vendored from the npm package, version in
// assets/vendor/README.md): no build step, nothing fetched at run time.
//
//go:embed assets
var assets embed.FS

func assetFS() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has the folder
	}
	return sub
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	http.ServeFileFS(w, r, assetFS(), "index.html")
}
